package main

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"
)

// A side is one way of making a row's call: the raw call, the guarded one,
// a peer. Its block runs prep (untimed), then op n times (timed as one
// block), then post (untimed).
type side struct {
	name string
	// prep readies a block of n ops (files to remove, ...); it runs
	// before the clock starts. Nil means nothing to ready.
	prep func(n int) error
	// op makes the call once; i counts the ops of the block from 0.
	op func(i int) error
	// post undoes what the block left (directories made, ...) after the
	// clock stopped. Nil means nothing to undo.
	post func(n int) error
	// skip, when set, says why this side is not measured here.
	skip string
	// note is printed under the table (what the side ran with).
	note string

	ns      []float64 // ns per op, one sample per block
	mallocs uint64    // heap allocations over every measured block
	ops     int       // ops over every measured block
}

// config sets how long a table runs.
type config struct {
	// Budget is the time each row is measured for (after its warm-up);
	// rounds continue until it is spent and MinRounds are done.
	Budget time.Duration
	// Block is the time the slowest side's block aims at when a row
	// calibrates its N.
	Block time.Duration
	// MinRounds and MaxRounds bound the rounds of a row; Rounds > 0
	// fixes them (the smoke test uses a tiny fixed count).
	MinRounds, MaxRounds, Rounds int
	// N > 0 fixes the block size (ops per side per round) of every row
	// that would calibrate it; rows with a fixed size keep theirs.
	N int
}

func (c config) withDefaults() config {
	if c.Block <= 0 {
		c.Block = time.Millisecond
	}
	if c.MinRounds <= 0 {
		c.MinRounds = 10
	}
	if c.MaxRounds <= 0 {
		c.MaxRounds = 100000
	}
	return c
}

// block runs one block of s: prep, n timed ops, post. It returns the
// elapsed time and the heap allocations the ops made, counted as the
// delta of runtime.MemStats.Mallocs around the timed loop (the whole
// process's, so goroutines the row itself runs, such as a loopback
// server, are counted on every side alike).
func (s *side) block(n int) (d time.Duration, mallocs uint64, err error) {
	if s.prep != nil {
		if err := s.prep(n); err != nil {
			return 0, 0, fmt.Errorf("%s: prepare: %w", s.name, err)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.Mallocs
	t0 := time.Now()
	for i := range n {
		if err = s.op(i); err != nil {
			break
		}
	}
	d = time.Since(t0)
	runtime.ReadMemStats(&ms)
	mallocs = ms.Mallocs - before
	if s.post != nil {
		if perr := s.post(n); perr != nil && err == nil {
			err = fmt.Errorf("clean up: %w", perr)
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", s.name, err)
	}
	return d, mallocs, nil
}

// measure runs the interleaved loop of one row: each round runs a block
// of n ops on every live side, the first side rotating from round to
// round, so load drift on the machine reaches every side alike. When n
// is 0, blocks of every side are timed first to choose n so that the
// slowest side's block lasts about cfg.Block; then one warm-up block per
// side (not counted) fills caches and checks that every side works. It
// returns the n it used and the number of rounds.
func measure(ctx context.Context, cfg config, sides []*side, n, maxN int) (int, int, error) {
	var live []*side
	for _, s := range sides {
		if s.skip == "" {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		return 0, 0, nil
	}
	if cfg.N > 0 && n == 0 {
		n = cfg.N
	}
	if n == 0 {
		// Calibrate on every side: blocks growing fourfold until one
		// lasts a quarter of cfg.Block; n is set by the slowest side, so
		// no side's block is much longer than cfg.Block. Short blocks
		// matter on a loaded machine: the fewer of them a preemption
		// hits, the more rounds pair two undisturbed blocks.
		slowest := 0.0
		for _, s := range live {
			// The first call of a side is often far slower than the
			// rest (code paged in, caches cold): it is left out.
			if _, _, err := s.block(1); err != nil {
				return 0, 0, err
			}
			for k := 1; ; k *= 4 {
				d, _, err := s.block(k)
				if err != nil {
					return 0, 0, err
				}
				if d >= cfg.Block/4 || k >= 1<<20 || (maxN > 0 && k >= maxN) {
					// The least of three blocks: on a loaded machine
					// one of them may have waited for a CPU.
					for range 2 {
						d2, _, err := s.block(k)
						if err != nil {
							return 0, 0, err
						}
						d = min(d, d2)
					}
					slowest = max(slowest, float64(d)/float64(k))
					break
				}
			}
		}
		n = int(math.Ceil(float64(cfg.Block) / math.Max(slowest, 1)))
	}
	if maxN > 0 && n > maxN {
		n = maxN
	}
	n = max(n, 1)
	for _, s := range live {
		if _, _, err := s.block(n); err != nil {
			return 0, 0, err
		}
	}

	minR, maxR := cfg.MinRounds, cfg.MaxRounds
	if cfg.Rounds > 0 {
		minR, maxR = cfg.Rounds, cfg.Rounds
	}
	runtime.GC()
	start := time.Now()
	r := 0
	for ; r < maxR; r++ {
		if r >= minR && time.Since(start) >= cfg.Budget {
			break
		}
		if err := ctx.Err(); err != nil {
			return n, r, err
		}
		for j := range live {
			s := live[(r+j)%len(live)]
			d, m, err := s.block(n)
			if err != nil {
				return n, r, err
			}
			s.ns = append(s.ns, float64(d.Nanoseconds())/float64(n))
			s.mallocs += m
			s.ops += n
		}
	}
	return n, r, nil
}

// median is the middle value of v (the mean of the two middle ones for an
// even count); v is left as it is. It is NaN for an empty v.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	v = slices.Clone(v)
	slices.Sort(v)
	m := len(v) / 2
	if len(v)%2 == 1 {
		return v[m]
	}
	return (v[m-1] + v[m]) / 2
}

// ratio is the median of the per-round ratios of s's time to base's: each
// ratio pairs two blocks of the same round, made under the same load.
func ratio(s, base *side) float64 {
	n := min(len(s.ns), len(base.ns))
	r := make([]float64, n)
	for i := range r {
		r[i] = s.ns[i] / base.ns[i]
	}
	return median(r)
}

// allocsPerOp is s's mean heap allocations per op over every block.
func (s *side) allocsPerOp() float64 {
	if s.ops == 0 {
		return math.NaN()
	}
	return float64(s.mallocs) / float64(s.ops)
}
