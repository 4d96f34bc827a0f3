//go:build linux

package sandbox

import (
	"testing"
	"time"

	"github.com/auditguard/auditguard/policy"
)

// BenchmarkExecJudged runs a script starting 200 short programs in the
// sandbox with and without exec judgement, interleaved (one op each per
// iteration), and reports the ratio of medians: the cost of trapping,
// judging and checking every exec. "asked": the host judge allows each
// call without saying it would again, so every exec is a round trip to
// the host; "cached": it sets ExecCall.Cacheable, as a host without
// OnCall does (the benchmark table's row), so the repeats are recorded
// and not asked.
func BenchmarkExecJudged(b *testing.B) {
	for _, cached := range []bool{false, true} {
		name := "asked"
		if cached {
			name = "cached"
		}
		b.Run(name, func(b *testing.B) { benchExecJudged(b, cached) })
	}
}

func benchExecJudged(b *testing.B, cached bool) {
	dir := b.TempDir()
	const script = `i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done`
	var on, off []time.Duration
	for b.Loop() {
		for _, judged := range []bool{false, true} {
			spec := &Spec{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Env: []string{"PATH=/bin"}, Dir: dir, Files: []policy.Spec{{WriteRoots: []string{dir}}}}
			if judged {
				spec.JudgeExec = func(ec *ExecCall) bool { ec.Cacheable = cached; return true }
			}
			t0 := time.Now()
			l, err := Start(b.Context(), spec, Stdio{}, nil, nil)
			if err != nil {
				b.Skip(err)
			}
			if _, err := l.Wait(); err != nil {
				b.Fatal(err)
			}
			if judged && !l.Report.Exec {
				b.Skip("execs are not judged here")
			}
			if judged {
				on = append(on, time.Since(t0))
			} else {
				off = append(off, time.Since(t0))
			}
		}
	}
	med := func(d []time.Duration) time.Duration {
		s := append([]time.Duration(nil), d...)
		for i := range s {
			for j := i + 1; j < len(s); j++ {
				if s[j] < s[i] {
					s[i], s[j] = s[j], s[i]
				}
			}
		}
		return s[len(s)/2]
	}
	b.ReportMetric(float64(med(on))/float64(med(off)), "x-untrapped")
	b.ReportMetric(float64(med(on)-med(off))/200/1e3, "µs/exec")
}
