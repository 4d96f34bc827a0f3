package audit

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// TestDryRunAnswersAsTheRealCheck runs every kind of decision twice, as a
// dry run and for real: the answers (outcome, decider, rule, error) must
// match, the callbacks must see DryRun only in the dry run, and only the
// real run may leave a record or a log line.
func TestDryRunAnswersAsTheRealCheck(t *testing.T) {
	work := tempDir(t)
	outside := "/nonexistent-auditguard/x"
	type tc struct {
		name    string
		opts    []Option
		target  string
		scope   string // "", "none", "released"
		out     Outcome
		by      Decider
		tier    policy.Tier
		askedOn bool // OnCall runs
		askedBD bool // BeforeDeny runs
	}
	onCall := func(v Verdict) Option {
		return WithOnCall(func(context.Context, *Event) Verdict { return v })
	}
	bdeny := func(ok bool) Option {
		return WithBeforeDeny(func(context.Context, *Event) bool { return ok })
	}
	cases := []tc{
		{name: "policy allows", target: work + "/ok", out: Allowed, by: ByPolicy},
		{name: "policy denies", target: outside, out: Denied, by: ByPolicy, tier: policy.TierSoft},
		{name: "protected", target: work + "/.bashrc", out: Denied, by: ByPolicy, tier: policy.TierHard},
		{name: "OnCall denies", opts: []Option{onCall(Deny)}, target: work + "/ok", out: Denied, by: ByOnCall, tier: policy.TierHard, askedOn: true},
		{name: "OnCall allows", opts: []Option{onCall(Allow)}, target: outside, out: Allowed, by: ByOnCall, askedOn: true},
		{name: "OnCall trusts the site", opts: []Option{onCall(TrustSite)}, target: outside, out: Allowed, by: ByTrustSite, askedOn: true},
		{name: "BeforeDeny rescues", opts: []Option{bdeny(true)}, target: outside, out: Rescued, by: ByBeforeDeny, tier: policy.TierSoft, askedBD: true},
		{name: "BeforeDeny declines", opts: []Option{bdeny(false)}, target: outside, out: Denied, by: ByPolicy, tier: policy.TierSoft, askedBD: true},
		{name: "warn mode", opts: []Option{WithMode(FS, Warn)}, target: outside, out: Warned, by: ByWarnMode, tier: policy.TierSoft},
		{name: "warn mode keeps hard denials", opts: []Option{WithMode(FS, Warn)}, target: work + "/.bashrc", out: Denied, by: ByPolicy, tier: policy.TierHard},
		{name: "off mode", opts: []Option{WithMode(FS, Off)}, target: outside, out: Allowed, by: ByOffMode},
		{name: "OnCall panics", opts: []Option{WithOnCall(func(context.Context, *Event) Verdict { panic("boom") })},
			target: work + "/ok", out: Denied, by: ByFault, tier: policy.TierFault, askedOn: true},
		{name: "no scope", scope: "none", target: work + "/ok", out: Denied, by: ByScope, tier: policy.TierInvalid},
		{name: "released scope", scope: "released", target: work + "/ok", out: Denied, by: ByScope, tier: policy.TierSelf},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var seen []bool // Event.DryRun as each callback saw it
			var logs logBuffer
			rec := NewRecorder()
			opts := append([]Option{WithRecorder(rec), WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))), WithLogAllows()}, c.opts...)
			g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{work}}), opts...)
			// Wrap the callbacks the case set, to see what they saw.
			if on := g.onCall; on != nil {
				g.onCall = func(ctx context.Context, ev *Event) Verdict { seen = append(seen, ev.DryRun); return on(ctx, ev) }
			}
			if bd := g.beforeDeny; bd != nil {
				g.beforeDeny = func(ctx context.Context, ev *Event) bool { seen = append(seen, ev.DryRun); return bd(ctx, ev) }
			}
			ctx := context.Background()
			switch c.scope {
			case "":
				ctx = enter(t, g)
			case "released":
				var release func()
				ctx, release, _ = g.Enter(ctx)
				release()
			}
			req := &policy.PathRequest{Op: policy.OpWrite, Path: c.target}
			dry := DryRun(ctx, &Event{Protocol: FS, Op: policy.OpWrite, Target: c.target}, req)
			if n := len(rec.Records()); n != 0 || logs.buf.Len() != 0 {
				t.Fatalf("a dry run left %d records and log %q", n, logs.buf.String())
			}
			for _, s := range seen {
				if !s {
					t.Fatal("a callback of a dry run saw DryRun false")
				}
			}
			if (len(seen) > 0) != (c.askedOn || c.askedBD) {
				t.Fatalf("dry run asked the callbacks %d times, want asked=%v", len(seen), c.askedOn || c.askedBD)
			}
			dryAsks := len(seen)
			seen = nil
			var slot Result
			ev := &Event{Protocol: FS, Op: policy.OpWrite, Target: c.target}
			real := Check(ctx, ev, req)
			_ = Check(WithDryRun(ctx, &slot), &Event{Protocol: FS, Op: policy.OpWrite, Target: c.target}, req)
			if len(seen) != 2*dryAsks {
				t.Fatalf("real and context dry run asked the callbacks %d times, want %d", len(seen), 2*dryAsks)
			}
			for i, s := range seen {
				if want := i >= dryAsks; s != want {
					t.Fatalf("callback %d saw DryRun %v, want %v", i, s, want)
				}
			}

			for _, r := range []Result{dry, slot} {
				if r.Outcome != c.out || r.By != c.by || r.Tier != c.tier {
					t.Fatalf("dry run = %v by %v tier %v, want %v by %v tier %v", r.Outcome, r.By, r.Tier, c.out, c.by, c.tier)
				}
				if r.Allowed != (r.Err == nil) || (r.Err == nil) != (real == nil) {
					t.Fatalf("dry run allowed=%v err=%v; real err=%v", r.Allowed, r.Err, real)
				}
			}
			if real == nil {
				return
			}
			var de, dryDE *DenyError
			if !errors.As(real, &de) || !errors.As(dry.Err, &dryDE) || !errors.Is(real, fs.ErrPermission) {
				t.Fatalf("real %v, dry %v: want *DenyError", real, dry.Err)
			}
			if de.By != c.by || dryDE.By != c.by || de.Decision.Rule != dryDE.Decision.Rule {
				t.Fatalf("By real %v dry %v, want %v; rules %v, %v", de.By, dryDE.By, c.by, de.Decision.Rule, dryDE.Decision.Rule)
			}
			if !strings.HasSuffix(de.Caller.File, "dryrun_test.go") || de.Caller.Function != dryDE.Caller.Function {
				t.Fatalf("caller real %s, dry %s: want this test", FormatFrame(de.Caller), FormatFrame(dryDE.Caller))
			}
			if c.scope == "" {
				recs := rec.Records()
				if len(recs) != 1 || recs[0].DecidedBy != c.by || recs[0].Outcome != c.out {
					t.Fatalf("real call recorded %+v", recs)
				}
			}
		})
	}
}

// TestDryRunTrustsNoSite: a TrustSite verdict in a dry run does not spare
// the real call from OnCall.
func TestDryRunTrustsNoSite(t *testing.T) {
	asked := 0
	g := newGuard(t, newPolicy(t, policy.Spec{}), WithOnCall(func(context.Context, *Event) Verdict {
		asked++
		return TrustSite
	}))
	ctx := enter(t, g)
	req := &policy.PathRequest{Op: policy.OpWrite, Path: "/nonexistent-auditguard/x"}
	for i := range 2 {
		ev := &Event{Protocol: FS, Op: policy.OpWrite, Target: "x"}
		if i == 0 {
			DryRun(ctx, ev, req)
		} else if err := Check(ctx, ev, req); err != nil {
			t.Fatal(err)
		}
	}
	if asked != 2 {
		t.Fatalf("OnCall asked %d times, want 2 (the dry run trusts nothing)", asked)
	}
}

// TestCheckDecidedCarriesTheVerdict: a decision handed over is the one
// the pipeline goes on with, callbacks and all.
func TestCheckDecidedCarriesTheVerdict(t *testing.T) {
	work := tempDir(t)
	var saw policy.Decision
	g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{work}}), WithBeforeDeny(func(_ context.Context, ev *Event) bool {
		saw = ev.Decision
		return false
	}))
	ctx := enter(t, g)
	req := &policy.PathRequest{Op: policy.OpWrite, Path: "/nonexistent-auditguard/x"}
	d := policy.Deny(policy.TierSoft, &policy.Rule{Kind: policy.KindHost, Pattern: "fast path", Source: "test"}, "carried")
	err := From(ctx).CheckDecided(ctx, &Event{Protocol: FS, Op: policy.OpWrite, Target: "x"}, req, d)
	var de *DenyError
	if !errors.As(err, &de) || de.Decision.Detail != "carried" || saw.Detail != "carried" {
		t.Fatalf("err = %v, BeforeDeny saw %+v: want the carried decision", err, saw)
	}
}

// TestCallerWalkMatchesFrames: the caller found by the short walk is the
// first of the frames the full walk finds, from the pipeline and from a
// callback, at different depths.
func TestCallerWalkMatchesFrames(t *testing.T) {
	var fromHook []string
	g := newGuard(t, newPolicy(t, policy.Spec{}), WithOnCall(func(_ context.Context, ev *Event) Verdict {
		short := FormatFrame(ev.Caller())
		fromHook = append(fromHook, short, FormatFrame(ev.Frames()[0]))
		return Continue
	}))
	ctx := enter(t, g)
	var check func(depth int) error
	check = func(depth int) error {
		if depth > 0 {
			return check(depth - 1)
		}
		return fsCheck(ctx, policy.OpWrite, "/nonexistent-auditguard/x", "")
	}
	for _, depth := range []int{0, 5, 40, 80} {
		fromHook = nil
		err := check(depth)
		var de *DenyError
		if !errors.As(err, &de) {
			t.Fatalf("depth %d: %v", depth, err)
		}
		got := FormatFrame(de.Caller)
		if !strings.Contains(got, "fsCheck") || fromHook[0] != got || fromHook[1] != got {
			t.Fatalf("depth %d: denial names %q; the callback saw %q", depth, got, fromHook)
		}
	}
}
