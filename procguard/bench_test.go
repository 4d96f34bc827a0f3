package procguard_test

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/internal/proctree"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// BenchmarkRunTrue compares the raw exec.Command("/bin/true").Run() with the
// guarded one, with and without Landlock, in one run. guarded-landlock is
// the default (execute only allowed programs); guarded-landlock-execany is
// LandlockExecAny; guarded-landlock-rescued runs true without a rule,
// rescued by BeforeDeny, so its program is added to the domain per command.
func BenchmarkRunTrue(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, bc := range []struct {
		name string
		spec policy.ExecSpec
	}{
		{"guarded-nolandlock", policy.ExecSpec{Rules: allow("true"), NoLandlock: true}},
		{"guarded-landlock", policy.ExecSpec{Rules: allow("true")}},
		{"guarded-landlock-execany", policy.ExecSpec{Rules: allow("true"), LandlockExecAny: true}},
		{"guarded-landlock-rescued", policy.ExecSpec{Rules: allow("sh")}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := setup(b, bc.spec, audit.WithBeforeDeny(func(context.Context, *audit.Event) bool { return true }))
			for b.Loop() {
				c := procguard.CommandContext(e.ctx, "/bin/true")
				c.Dir = e.dir
				if err := c.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("guarded-nolandlock-nocgroup", func(b *testing.B) {
		defer procguard.DisableCgroupsForTest()()
		e := setup(b, policy.ExecSpec{Rules: allow("true"), NoLandlock: true})
		for b.Loop() {
			c := procguard.CommandContext(e.ctx, "/bin/true")
			c.Dir = e.dir
			if err := c.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check-only", func(b *testing.B) {
		e := setup(b, policy.ExecSpec{Rules: allow("true")})
		for b.Loop() {
			c := procguard.CommandContext(e.ctx, "/bin/true")
			c.Dir = e.dir
			if d := c.Check(); !d.Allowed {
				b.Fatal(d.Err)
			}
		}
	})
}

// BenchmarkRunTrueInterleaved alternates the raw and the guarded run in
// every iteration, so both see the same machine load, and reports their
// times and ratio as metrics (ns/op is the sum of both).
func BenchmarkRunTrueInterleaved(b *testing.B) {
	for _, bc := range []struct {
		name     string
		spec     policy.ExecSpec
		nocgroup bool
	}{
		{"nolandlock", policy.ExecSpec{Rules: allow("true"), NoLandlock: true}, false},
		{"landlock", policy.ExecSpec{Rules: allow("true")}, false},
		{"landlock-execany", policy.ExecSpec{Rules: allow("true"), LandlockExecAny: true}, false},
		{"nolandlock-nocgroup", policy.ExecSpec{Rules: allow("true"), NoLandlock: true}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.nocgroup {
				defer procguard.DisableCgroupsForTest()()
			}
			e := setup(b, bc.spec)
			var raw, guarded time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := exec.Command("/bin/true").Run(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				c := procguard.CommandContext(e.ctx, "/bin/true")
				c.Dir = e.dir
				if err := c.Run(); err != nil {
					b.Fatal(err)
				}
				raw += t1.Sub(t0)
				guarded += time.Since(t1)
			}
			b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "raw-ns/op")
			b.ReportMetric(float64(guarded.Nanoseconds())/float64(b.N), "guarded-ns/op")
			b.ReportMetric(float64(guarded)/float64(raw), "ratio")
		})
	}
}

// BenchmarkSandboxStart compares four ways of starting /bin/true, all in
// one loop so every side sees the same machine load:
//
//   - raw: exec.Command("/bin/true").Run();
//   - sandbox: procguard's default start, in the namespace sandbox, with a
//     trampoline ready in the pool (the steady state of a host whose
//     commands are not all started at once);
//   - sandbox-cold: the same with the pool off: the host binary is
//     re-executed during the start;
//   - landlock: procguard with ExecSpec.NoSandbox (Landlock and a cgroup);
//   - bwrap: bubblewrap with about the sandbox's namespaces and mounts
//     (skipped when bwrap is not installed; it is only a yardstick).
//
// Each iteration starts every side once, the first side rotating from one
// iteration to the next. Each side's start is timed on its own; the
// metrics are the medians per side (*-ms) and the medians of the
// per-iteration ratios (sandbox/*), which pair starts made under the same
// load. ns/op is the sum of the sides plus the bookkeeping between them;
// allocs/op and B/op likewise, and *-allocs is each side's own mean.
// Between sides, untimed, the benchmark waits for the pool's next
// trampoline, so its start-up never runs during another side's start.
func BenchmarkSandboxStart(b *testing.B) {
	const childTimeout = 30 * time.Second
	sb := setup(b, policy.ExecSpec{Rules: allow("true")})
	ll := setup(b, policy.ExecSpec{Rules: allow("true"), NoSandbox: true})
	guarded := func(e *env, wantSandbox bool) func(context.Context) error {
		return func(ctx context.Context) error {
			c := procguard.CommandContext(ctx, "true")
			c.Dir = e.dir
			if err := c.Run(); err != nil {
				return err
			}
			switch s := c.Confinement.Sandbox; {
			case wantSandbox && s == nil:
				b.Skipf("no sandbox on this host: %s", c.Confinement.SandboxNote)
			case !wantSandbox && s != nil:
				b.Fatal("NoSandbox started a sandbox")
			}
			return nil
		}
	}
	type side struct {
		name    string
		base    context.Context // the guard scope, for procguard's sides
		run     func(context.Context) error
		cold    bool    // runs with the pool of ready trampolines off
		ns      []int64 // one sample per iteration
		mallocs uint64
	}
	sides := []*side{
		{name: "raw", base: context.Background(), run: func(ctx context.Context) error {
			return exec.CommandContext(ctx, "/bin/true").Run()
		}},
		{name: "sandbox", base: sb.ctx, run: guarded(sb, true)},
		{name: "sandbox-cold", base: sb.ctx, run: guarded(sb, true), cold: true},
		{name: "landlock", base: ll.ctx, run: guarded(ll, false)},
	}
	if bwrap, err := exec.LookPath("bwrap"); err != nil {
		b.Log("bubblewrap not installed: apt-get install bubblewrap to compare")
	} else {
		root := sb.dir
		sides = append(sides, &side{name: "bwrap", base: context.Background(), run: func(ctx context.Context) error {
			x := exec.CommandContext(ctx, bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-net",
				"--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
				"--bind", root, root, "/bin/true")
			x.WaitDelay = time.Second
			return x.Run()
		}})
	}

	// One start of each outside the loop: it warms the caches (and the
	// cgroup pool) and drops a bubblewrap that cannot run here.
	for i := 0; i < len(sides); i++ {
		s := sides[i]
		ctx, cancel := context.WithTimeout(s.base, childTimeout)
		err := s.run(ctx)
		cancel()
		switch {
		case err != nil && s.name == "bwrap":
			b.Logf("bwrap does not run here (%v): compared without it", err)
			sides = slices.Delete(sides, i, i+1)
			i--
		case err != nil:
			b.Fatalf("%s: %v", s.name, err)
		}
	}

	b.ReportAllocs()
	var ms runtime.MemStats
	for i := 0; b.Loop(); i++ {
		for j := range sides {
			s := sides[(i+j)%len(sides)]
			sandbox.SetPrewarm(!s.cold)
			if err := sandbox.Prewarm(false); err != nil && !s.cold {
				b.Fatalf("prewarm: %v", err)
			}
			runtime.ReadMemStats(&ms)
			before := ms.Mallocs
			ctx, cancel := context.WithTimeout(s.base, childTimeout)
			t0 := time.Now()
			err := s.run(ctx)
			d := time.Since(t0)
			cancel()
			if err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			runtime.ReadMemStats(&ms)
			s.mallocs += ms.Mallocs - before
			s.ns = append(s.ns, d.Nanoseconds())
		}
	}
	b.StopTimer()

	sandbox.SetPrewarm(false) // ends the ready trampoline: no descendant is left
	defer sandbox.SetPrewarm(true)
	if left := proctree.Descendants(os.Getpid()); len(left) > 0 {
		b.Fatalf("processes started by the benchmark survived: %v", left)
	}
	n := len(sides[0].ns)
	if n == 0 {
		return
	}
	for _, s := range sides {
		b.ReportMetric(float64(median(s.ns))/1e6, s.name+"-ms")
		b.ReportMetric(float64(s.mallocs)/float64(n), s.name+"-allocs")
	}
	for _, x := range sides {
		if !strings.HasPrefix(x.name, "sandbox") {
			continue
		}
		for _, s := range sides {
			if strings.HasPrefix(s.name, "sandbox") {
				continue
			}
			r := make([]float64, n)
			for i := range r {
				r[i] = float64(x.ns[i]) / float64(s.ns[i])
			}
			b.ReportMetric(median(r), x.name+"/"+s.name)
		}
	}
}

// median is the middle value of s (the mean of the two middle ones for an
// even count); s is left as it is.
func median[T int64 | float64](s []T) T {
	s = slices.Clone(s)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
