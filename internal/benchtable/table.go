package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// A row is one call measured on every side in one interleaved loop.
type row struct {
	group string // "fs", "net", "exec", "policy"
	call  string
	// base names the side ratios are taken against ("raw"); "" means the
	// row has no ratio column (an absolute measure).
	base  string
	sides []*side
	// n fixes the block size (0: calibrated); maxN caps a calibrated one.
	n, maxN int
	// batch > 1 says each op makes that many calls (one after the other
	// or at once, as the row's sides do): the times, allocations and
	// block sizes the table shows are then per call, not per op.
	batch int
	// minRounds and maxRounds, when set, raise the config's floor and
	// lower its cap on rounds (a fixed -rounds overrides both).
	minRounds, maxRounds int
	// targets are the targets that apply to this row.
	targets []target
	// skip, when set, says why the whole row was not measured.
	skip string
	// cleanup runs after the row, measured or not.
	cleanup func()

	// results: usedN counts calls per side per round (ops x batch)
	usedN, rounds int
	err           error
}

// A target is one line of the Targets table of issue 16, checked against
// one side of a row. Ratio targets compare the side with the side named
// by vs; absolute ones bound its median time and its allocations.
type target struct {
	side      string
	vs        string  // side the ratio is taken against ("" for none)
	maxRatio  float64 // 0: no ratio bound
	maxNs     float64 // 0: no time bound
	maxAllocs float64 // bound on allocs/op when hasAllocs
	hasAllocs bool
	text      string
}

// verdict says whether t holds for r: the value it measured, and "yes",
// "NO" or why it cannot be judged.
func (t target) verdict(r *row) (measured, met string) {
	s := r.side(t.side)
	if s == nil || s.skip != "" || len(s.ns) == 0 {
		return "", "n/a"
	}
	ok := true
	var parts []string
	if t.maxRatio > 0 {
		v := r.side(t.vs)
		if v == nil || v.skip != "" || len(v.ns) == 0 {
			return "", "n/a (no " + t.vs + ")"
		}
		x := ratio(s, v)
		if t.vs != r.base {
			parts = append(parts, fmt.Sprintf("%.2fx %s", x, t.vs))
		}
		ok = ok && x <= t.maxRatio
	}
	if t.maxNs > 0 {
		ok = ok && median(s.ns) <= t.maxNs
	}
	if t.hasAllocs {
		ok = ok && s.allocsPerOp() <= t.maxAllocs+0.005
	}
	if ok {
		return strings.Join(parts, ", "), "yes"
	}
	return strings.Join(parts, ", "), "NO"
}

func (r *row) side(name string) *side {
	for _, s := range r.sides {
		if s.name == name {
			return s
		}
	}
	return nil
}

// run measures r unless it is skipped; an error stays on the row.
func (r *row) run(ctx context.Context, cfg config) {
	if r.cleanup != nil {
		defer r.cleanup()
	}
	if r.skip != "" {
		return
	}
	if r.maxRounds > 0 && cfg.Rounds == 0 {
		cfg.MaxRounds = min(cfg.MaxRounds, r.maxRounds)
	}
	if r.minRounds > 0 && cfg.Rounds == 0 {
		cfg.MinRounds = min(max(cfg.MinRounds, r.minRounds), cfg.MaxRounds)
	}
	r.usedN, r.rounds, r.err = measure(ctx, cfg, r.sides, r.n, r.maxN)
	if r.batch > 1 {
		b := float64(r.batch)
		for _, s := range r.sides {
			for i := range s.ns {
				s.ns[i] /= b
			}
			s.ops *= r.batch
		}
		r.usedN *= r.batch
	}
}

// printTable writes the rows as one aligned table, then the notes.
func printTable(w io.Writer, rows []*row) {
	// tabwriter aligns every column alike; the numbers are padded to a
	// fixed width by hand so they line up on the right.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "call\tside\tvs base\tallocs/op\tmedian/op\tblocks\ttarget\tmet\t")
	fmt.Fprintln(tw, "----\t----\t-------\t---------\t---------\t------\t------\t---\t")
	var notes []string
	for _, r := range rows {
		first := true
		label := func() string {
			if first {
				first = false
				return r.group + " " + r.call
			}
			return ""
		}
		if r.skip != "" {
			fmt.Fprintf(tw, "%s\t\t\t\t\t\t%s\tskipped\t\n", label(), targetsText(r.targets))
			notes = append(notes, fmt.Sprintf("%s %s: skipped: %s", r.group, r.call, r.skip))
			continue
		}
		if r.err != nil {
			fmt.Fprintf(tw, "%s\t\t\t\t\t\t%s\tERROR\t\n", label(), targetsText(r.targets))
			notes = append(notes, fmt.Sprintf("%s %s: error: %v", r.group, r.call, r.err))
			continue
		}
		base := r.side(r.base)
		for _, s := range r.sides {
			var tt, met []string
			for _, t := range r.targets {
				if t.side != s.name {
					continue
				}
				m, ok := t.verdict(r)
				if m != "" {
					tt = append(tt, t.text+" ("+m+")")
				} else {
					tt = append(tt, t.text)
				}
				met = append(met, ok)
			}
			if s.skip != "" {
				fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t%s\tskipped\t\n", label(), s.name, strings.Join(tt, "; "))
				notes = append(notes, fmt.Sprintf("%s %s, %s: skipped: %s", r.group, r.call, s.name, s.skip))
				continue
			}
			vs := ""
			if base != nil && base.skip == "" {
				vs = fmt.Sprintf("%.2fx", ratio(s, base))
			}
			fmt.Fprintf(tw, "%s\t%s\t%7s\t%9s\t%10s\t%s\t%s\t%s\t\n", label(), s.name, vs,
				fmtAllocs(s.allocsPerOp()), fmtDur(median(s.ns)),
				fmt.Sprintf("%dx%d", r.rounds, r.usedN), strings.Join(tt, "; "), strings.Join(met, "; "))
			if s.note != "" {
				notes = append(notes, fmt.Sprintf("%s %s, %s: %s", r.group, r.call, s.name, s.note))
			}
		}
	}
	tw.Flush()
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, "- "+n)
		}
	}
}

// targetsText lists a row's distinct target texts, for a row that was not
// measured.
func targetsText(ts []target) string {
	var out []string
	for _, t := range ts {
		if !slices.Contains(out, t.text) {
			out = append(out, t.text)
		}
	}
	return strings.Join(out, "; ")
}

func fmtAllocs(a float64) string {
	if math.IsNaN(a) {
		return "-"
	}
	if a < 10 {
		return fmt.Sprintf("%.1f", a)
	}
	return fmt.Sprintf("%.0f", a)
}

// fmtDur writes a per-op time in ns, µs, ms or s with three significant
// figures (two decimals below 10, one below 100, none above).
func fmtDur(ns float64) string {
	if math.IsNaN(ns) {
		return "-"
	}
	v, unit := ns, "ns"
	for _, u := range []string{"µs", "ms", "s"} {
		if v < 1000 {
			break
		}
		v, unit = v/1000, u
	}
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}
