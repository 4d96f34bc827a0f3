// Command benchtable measures every facade call of auditguard against the
// raw call it wraps and prints one table: for each call and side, the
// median of the per-block time ratios to the raw side, the allocations
// per op, the median time per op, and the target of issue 16 that applies
// with whether it is met. `make bench` runs it.
//
// Each row is one interleaved loop: every round runs a block of N ops on
// every side (raw, guarded, the peers), the first side rotating from round
// to round, each block timed on its own. A ratio pairs the blocks of one
// round, made under the same load, so drift on a shared machine reaches
// every side alike; the median over the rounds drops the rounds a burst of
// other work disturbed. N is chosen per row so a block lasts about -block
// (from an untimed warm-up block, which also checks every side works);
// rounds run until -benchtime is spent per row.
//
// Allocations are the delta of runtime.MemStats.Mallocs around each timed
// block, divided by its ops: the whole process's, so the net rows, whose
// loopback server runs in this process, count its allocations on both
// sides alike.
//
// The table makes one temp dir (under /dev/shm when it exists, else the
// default temp dir) and removes it on exit, interrupt included; every
// process it starts has a 30 s timeout, and at the end it checks that no
// child of it is alive (killing any by its pid, and failing).
//
// Usage:
//
//	go run ./internal/benchtable [-benchtime 1s] [-block 1ms] [-only fs,net] [-n N] [-rounds R]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// A group builds rows; -only selects groups by name.
type group struct {
	name  string
	build func(*env) ([]*row, error)
}

var groups = []group{
	{"fs", func(e *env) ([]*row, error) {
		rows, err := fsRows(e)
		if err != nil {
			return nil, err
		}
		r, err := manyRootsRow(e)
		if err != nil {
			return nil, err
		}
		return append(rows, r), nil
	}},
	{"policy", func(e *env) ([]*row, error) {
		r, err := decisionRow(e)
		return []*row{r}, err
	}},
	{"net", func(e *env) ([]*row, error) {
		d, err := dialRow(e)
		if err != nil {
			return nil, err
		}
		h, err := httpRow(e)
		if err != nil {
			d.cleanup()
			return nil, err
		}
		return []*row{d, h}, nil
	}},
	{"exec", execRows},
	{"workload", workloadRows},
}

// options are what a run of the table is asked for.
type options struct {
	cfg      config
	only     []string  // group names; empty means all
	parent   string    // where the temp dir goes; "" picks /dev/shm or TempDir
	roots    int       // write roots of the many-roots row (0: 10,000)
	progress io.Writer // one line per row as it is measured; nil for none
}

// runTable builds the selected rows, measures them one after the other
// and prints the table to w. Its error joins every row's error and any
// process left alive; skips are not errors.
func runTable(ctx context.Context, w io.Writer, o options) error {
	cfg := o.cfg.withDefaults()
	e, err := newEnv(o.parent)
	if err != nil {
		return err
	}
	defer e.close()
	e.roots = o.roots

	var rows []*row
	var errs []error
	for _, g := range groups {
		if len(o.only) > 0 && !slices.Contains(o.only, g.name) {
			continue
		}
		rs, err := g.build(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: set-up: %w", g.name, err))
			continue
		}
		for _, r := range rs {
			if err := ctx.Err(); err != nil {
				r.skip = "interrupted"
				if r.cleanup != nil {
					r.cleanup()
				}
			} else {
				r.run(ctx, cfg)
				if o.progress != nil {
					fmt.Fprintf(o.progress, "%s %s: %d rounds of %d ops per side\n", r.group, r.call, r.rounds, r.usedN)
				}
			}
			if r.err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", r.group, r.call, r.err))
			}
			rows = append(rows, r)
		}
	}
	if err := endChildren(); err != nil {
		errs = append(errs, err)
	}

	fmt.Fprintf(w, "auditguard benchmark table: %s %s/%s, GOMAXPROCS %d, %d CPUs, kernel %s, load %s\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(),
		procLine("/proc/sys/kernel/osrelease"), procLine("/proc/loadavg"))
	fmt.Fprintf(w, "files on %s; %s per row, blocks of about %s (blocks = rounds x ops per side)\n",
		e.where, cfg.Budget, cfg.Block)
	fmt.Fprintln(w, "vs base: median of per-round time ratios to the row's raw side; median/op: median of the per-block means;")
	fmt.Fprintln(w, "allocs/op: runtime.MemStats.Mallocs delta over the timed blocks / ops")
	fmt.Fprintln(w)
	printTable(w, rows)
	return errors.Join(errs...)
}

// procLine is the first line of a /proc file, or "?".
func procLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "?"
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}

func main() {
	var o options
	var only string
	flag.DurationVar(&o.cfg.Budget, "benchtime", time.Second, "time each row is measured for")
	flag.DurationVar(&o.cfg.Block, "block", time.Millisecond, "time the slowest side's block of ops aims at")
	flag.IntVar(&o.cfg.N, "n", 0, "ops per block for the rows that calibrate it (0: calibrated)")
	flag.IntVar(&o.cfg.Rounds, "rounds", 0, "rounds per row (0: until -benchtime is spent)")
	flag.StringVar(&only, "only", "", "comma-separated groups to run: fs, policy, net, exec, workload (default all)")
	flag.StringVar(&o.parent, "dir", "", "parent of the temp dir (default /dev/shm when present, else the temp dir)")
	quiet := flag.Bool("q", false, "no progress lines on stderr")
	flag.Parse()
	if only != "" {
		o.only = strings.Split(only, ",")
		for _, g := range o.only {
			if !slices.ContainsFunc(groups, func(x group) bool { return x.name == g }) {
				fmt.Fprintf(os.Stderr, "benchtable: unknown group %q (fs, policy, net, exec)\n", g)
				os.Exit(2)
			}
		}
	}
	if !*quiet {
		o.progress = os.Stderr
	}
	// An interrupt stops the measuring between rounds; the table of what
	// was measured is printed and the temp dir removed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runTable(ctx, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		stop()
		os.Exit(1)
	}
}
