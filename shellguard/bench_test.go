package shellguard_test

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/shellguard"
)

// The cost of a call that runs one program, and one that runs a loop of
// 100, through a session (the interpreter, procguard's decision and a
// sandbox per program), against the same script run raw by sh -c (fork
// and exec, nothing checked). The package doc states the numbers and the
// command.

const (
	loop100        = "i=0; while [ $i -lt 100 ]; do /bin/true; i=$((i+1)); done"
	loop100Builtin = "i=0; while [ $i -lt 100 ]; do :; i=$((i+1)); done"
)

func BenchmarkRunOne(b *testing.B)     { benchLoop(b, sessionSide(b, "/bin/true", false)) }
func BenchmarkRunLoop100(b *testing.B) { benchLoop(b, sessionSide(b, loop100, false)) }
func BenchmarkRawOne(b *testing.B)     { benchLoop(b, rawSide(b, "/bin/true")) }
func BenchmarkRawLoop100(b *testing.B) { benchLoop(b, rawSide(b, loop100)) }

// BenchmarkRunCost measures every side once per iteration, in an order
// that rotates, so the sides share the machine's load (on a shared
// machine, sequential benchmarks minutes apart are not comparable). The
// metrics are each side's median (ms) and the medians of the
// per-iteration ratios to raw sh -c (x). The parts: procguard alone (one
// program, no interpreter), the session without the namespace sandbox
// (Landlock and cgroups), and a loop of 100 builtins (the interpreter
// alone). Between sides the benchmark pauses, untimed, so procguard's
// pool has its next sandbox ready, as between an agent's calls; within
// a loop the programs start back to back, as they do.
func BenchmarkRunCost(b *testing.B) {
	type side struct {
		name string
		run  func()
		ns   []float64
	}
	sides := []*side{
		{name: "raw-one", run: rawSide(b, "/bin/true")},
		{name: "session-one", run: sessionSide(b, "/bin/true", false)},
		{name: "procguard-one", run: procguardSide(b)},
		{name: "nosandbox-one", run: sessionSide(b, "/bin/true", true)},
		{name: "raw-loop100", run: rawSide(b, loop100)},
		{name: "session-loop100", run: sessionSide(b, loop100, false)},
		{name: "nosandbox-loop100", run: sessionSide(b, loop100, true)},
		{name: "session-loop100-builtin", run: sessionSide(b, loop100Builtin, false)},
		// A sandbox per program, none shared (as before programs shared
		// the session's).
		{name: "own-one", run: ownSandbox(sessionSide(b, "/bin/true", false))},
		{name: "own-loop100", run: ownSandbox(sessionSide(b, loop100, false))},
	}
	for _, s := range sides {
		s.run() // warm: the first sandbox start, page cache
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		for k := range sides {
			s := sides[(i+k)%len(sides)]
			// Untimed: let procguard's pool make its next ready sandbox,
			// as it has between an agent's calls, so no side pays for the
			// side before it.
			b.StopTimer()
			time.Sleep(300 * time.Millisecond)
			b.StartTimer()
			start := time.Now()
			s.run()
			s.ns = append(s.ns, float64(time.Since(start)))
		}
		i++
	}
	median := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	ratio := func(a, base *side) float64 {
		r := make([]float64, len(a.ns))
		for i := range a.ns {
			r[i] = a.ns[i] / base.ns[i]
		}
		return median(r)
	}
	for _, s := range sides {
		b.ReportMetric(median(s.ns)/1e6, s.name+"-ms")
	}
	b.ReportMetric(ratio(sides[1], sides[0]), "session/raw-one-x")
	b.ReportMetric(ratio(sides[5], sides[4]), "session/raw-loop100-x")
	b.ReportMetric(ratio(sides[6], sides[4]), "nosandbox/raw-loop100-x")
	b.ReportMetric(ratio(sides[8], sides[0]), "own/raw-one-x")
	b.ReportMetric(ratio(sides[9], sides[4]), "own/raw-loop100-x")
	b.ReportMetric(ratio(sides[5], sides[9]), "session/own-loop100-x")
}

// ownSandbox runs side with the shared sandbox off.
func ownSandbox(side func()) func() {
	return func() {
		defer shellguard.SetShareSandbox(shellguard.SetShareSandbox(false))
		side()
	}
}

func benchLoop(b *testing.B, run func()) {
	run() // warm
	b.ResetTimer()
	for b.Loop() {
		run()
	}
}

func sessionSide(b *testing.B, script string, noSandbox bool) func() {
	e := setupWith(b, func(s *policy.Spec) { s.Exec.NoSandbox = noSandbox })
	s := e.session(b, shellguard.Options{})
	return func() {
		res, err := s.Run(context.Background(), script)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v: %+v", err, res)
		}
	}
}

func procguardSide(b *testing.B) func() {
	e := setup(b)
	return func() {
		c := procguard.CommandContext(e.ctx, "/bin/true")
		c.Dir = e.dir
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func rawSide(b *testing.B, script string) func() {
	dir := b.TempDir()
	return func() {
		c := exec.Command("sh", "-c", script)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}
