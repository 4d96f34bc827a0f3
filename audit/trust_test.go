package audit

import (
	"context"
	"errors"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// Callbacks and Warn mode overturn what no rule allows (the soft tier);
// protected names and explicit denies (the hard tier) only where the host
// opted in, and invalid input never. Each case runs the real pipeline on
// real temp-dir paths.
func TestCallbacksNeverOutrankTheHardTier(t *testing.T) {
	work := tempDir(t)
	pol := newPolicy(t, policy.Spec{WriteRoots: []string{work}})
	soft := "/nonexistent-auditguard/x" // outside every root
	hard := work + "/.bashrc"           // protected by default
	invalid := work + "/a\x00b"
	verdict := func(v Verdict) Option {
		return WithOnCall(func(context.Context, *Event) Verdict { return v })
	}
	yes := WithBeforeDeny(func(context.Context, *Event) bool { return true })
	tests := []struct {
		name string
		opts []Option
		path string
		ok   bool
		want Outcome
	}{
		{"Allow overturns soft", []Option{verdict(Allow)}, soft, true, 0},
		{"Allow does not overturn hard", []Option{verdict(Allow)}, hard, false, Denied},
		{"Allow overturns hard with WithRescueHard", []Option{verdict(Allow), WithRescueHard()}, hard, true, 0},
		{"Allow never overturns invalid", []Option{verdict(Allow), WithRescueHard(), WithTrustSiteHard()}, invalid, false, Denied},
		{"TrustSite overturns soft", []Option{verdict(TrustSite)}, soft, true, 0},
		{"TrustSite does not overturn hard", []Option{verdict(TrustSite)}, hard, false, Denied},
		{"TrustSite is not opted in by WithRescueHard", []Option{verdict(TrustSite), WithRescueHard()}, hard, false, Denied},
		{"TrustSite overturns hard with WithTrustSiteHard", []Option{verdict(TrustSite), WithTrustSiteHard()}, hard, true, 0},
		{"Allow refused on hard is not rescued by BeforeDeny", []Option{verdict(Allow), yes}, hard, false, Denied},
		{"Warn carries out soft", []Option{WithMode(FS, Warn)}, soft, true, Warned},
		{"Warn refuses hard", []Option{WithMode(FS, Warn)}, hard, false, Denied},
		{"Warn refuses hard even with WithRescueHard", []Option{WithMode(FS, Warn), WithRescueHard()}, hard, false, Denied},
		{"Warn carries out hard with WithWarnHard(FS)", []Option{WithMode(FS, Warn), WithWarnHard(FS)}, hard, true, Warned},
		{"WithWarnHard is per protocol", []Option{WithMode(FS, Warn), WithWarnHard(Net)}, hard, false, Denied},
		{"Warn refuses an OnCall Deny", []Option{WithMode(FS, Warn), WithWarnHard(FS), verdict(Deny)}, work + "/ok", false, Denied},
		{"Warn refuses an OnCall Deny on soft", []Option{WithMode(FS, Warn), verdict(Deny)}, soft, false, Denied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := NewRecorder()
			g := newGuard(t, pol, append(tt.opts, WithRecorder(rec))...)
			err := fsCheck(enter(t, g), policy.OpWrite, tt.path, "")
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want allowed %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrDenied) {
				t.Fatalf("err = %v, not a denial", err)
			}
			if tt.want != 0 {
				rs := rec.Records()
				if len(rs) != 1 || rs[0].Outcome != tt.want {
					t.Fatalf("records = %+v, want one %v", rs, tt.want)
				}
			}
		})
	}
}

// A call site trusted in one scope is asked about again in the next scope
// of the same guard, and in a scope nested in the first.
func TestTrustSiteIsRememberedPerScope(t *testing.T) {
	var asked int
	g := newGuard(t, newPolicy(t, policy.Spec{}), WithOnCall(func(context.Context, *Event) Verdict {
		asked++
		return TrustSite
	}))
	write := func(ctx context.Context) {
		t.Helper()
		if err := fsCheck(ctx, policy.OpWrite, "/nonexistent-auditguard/x", ""); err != nil {
			t.Fatal(err)
		}
	}
	ctx1, release1, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	write(ctx1)
	write(ctx1)
	if asked != 1 {
		t.Fatalf("OnCall asked %d times in one scope, want 1", asked)
	}
	inner, releaseInner, err := g.Enter(ctx1)
	if err != nil {
		t.Fatal(err)
	}
	write(inner)
	releaseInner()
	if asked != 2 {
		t.Fatalf("a nested scope inherited the trust (asked %d times, want 2)", asked)
	}
	release1()
	write(enter(t, g))
	if asked != 3 {
		t.Fatalf("trust outlived its scope (asked %d times, want 3)", asked)
	}
}

// A trusted site is still refused a hard-tier target: trust skips the
// question, not the protection.
func TestTrustedSiteStillRefusedProtectedNames(t *testing.T) {
	work := tempDir(t)
	g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{work}}),
		WithOnCall(func(context.Context, *Event) Verdict { return TrustSite }))
	ctx := enter(t, g)
	for _, name := range []string{"/nonexistent-auditguard/x", work + "/.bashrc", work + "/.bashrc"} {
		err := fsCheck(ctx, policy.OpWrite, name, "") // one call site for all three
		if want := name != "/nonexistent-auditguard/x"; (err != nil) != want {
			t.Fatalf("%s: err = %v, want denied %v", name, err, want)
		}
	}
}
