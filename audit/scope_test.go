package audit

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

func TestNoScope(t *testing.T) {
	err := fsCheck(context.Background(), policy.OpRead, "/etc/hostname", "")
	if !errors.Is(err, ErrNoScope) || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("err = %v, want ErrNoScope", err)
	}
}

func TestEnteringAnotherGuardInsideAScopeIsDenied(t *testing.T) {
	strict := newGuard(t, newPolicy(t, policy.Spec{}))
	rec := NewRecorder()
	// The outer guard's BeforeDeny approves everything, with hard rescues on:
	// self-protection must still hold.
	outer := newGuard(t, newPolicy(t, policy.Spec{}), WithRecorder(rec), WithRescueHard(),
		WithBeforeDeny(func(context.Context, *Event) bool { return true }),
		WithOnCall(func(context.Context, *Event) Verdict { return Allow }))
	permissive := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{"/"}}))
	ctx := enter(t, outer)

	inner, release, err := permissive.Enter(ctx)
	defer release()
	if !errors.Is(err, ErrSelfProtection) || !errors.Is(err, ErrDenied) {
		t.Fatalf("entering another guard: err = %v, want ErrSelfProtection", err)
	}
	if From(inner) != From(ctx) {
		t.Fatal("the failed Enter returned a context with another scope")
	}
	if r := rec.Records(); len(r) != 1 || r[0].Outcome != Denied || r[0].Op != policy.OpConfig {
		t.Fatalf("records = %+v, want one config denial", r)
	}

	// Re-entering the same guard nests a scope.
	nested, releaseNested, err := outer.Enter(ctx)
	if err != nil {
		t.Fatalf("re-entering the same guard: %v", err)
	}
	defer releaseNested()
	if From(nested) == From(ctx) || From(nested).Guard() != outer {
		t.Fatal("re-entering did not nest a scope of the same guard")
	}

	// A released scope still carries its guard: entering another is denied.
	closedCtx, releaseClosed, _ := strict.Enter(context.Background())
	releaseClosed()
	if _, _, err := permissive.Enter(closedCtx); !errors.Is(err, ErrSelfProtection) {
		t.Fatalf("entering another guard from a released scope: %v", err)
	}
}

func TestSetDataOnlyOutsideAScope(t *testing.T) {
	var seen []any
	g := newGuard(t, newPolicy(t, policy.Spec{}), WithData("v1"), WithRescueHard(),
		WithBeforeDeny(func(ctx context.Context, ev *Event) bool {
			seen = append(seen, ev.Data)
			return true // a permissive callback cannot approve re-configuration
		}))
	ctx := enter(t, g)
	if err := g.SetData(ctx, "from-inside"); !errors.Is(err, ErrSelfProtection) {
		t.Fatalf("SetData inside a scope: %v", err)
	}
	if err := g.SetPolicy(ctx, newPolicy(t, policy.Spec{WriteRoots: []string{"/"}})); !errors.Is(err, ErrSelfProtection) {
		t.Fatalf("SetPolicy inside a scope: %v", err)
	}
	if err := g.SetMode(ctx, FS, Off); !errors.Is(err, ErrSelfProtection) {
		t.Fatalf("SetMode inside a scope: %v", err)
	}
	if g.Data() != "v1" || g.Mode(FS) != Enforce {
		t.Fatal("a denied re-configuration changed the guard")
	}
	_ = fsCheck(ctx, policy.OpWrite, "/nonexistent-auditguard/a", "")
	if err := g.SetData(context.Background(), "v2"); err != nil {
		t.Fatalf("SetData outside a scope: %v", err)
	}
	_ = fsCheck(ctx, policy.OpWrite, "/nonexistent-auditguard/b", "")
	if len(seen) != 2 || seen[0] != "v1" || seen[1] != "v2" {
		t.Fatalf("data seen by decisions = %v, want [v1 v2]", seen)
	}
}

func TestUseAfterReleaseFromAGoroutineThatOutlivedTheScope(t *testing.T) {
	work := tempDir(t)
	g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{work}}))
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := fsCheck(ctx, policy.OpWrite, work+"/a", ""); err != nil {
		t.Fatalf("allowed write denied before release: %v", err)
	}
	start := make(chan struct{})
	result := make(chan error)
	go func() {
		<-start
		result <- fsCheck(ctx, policy.OpWrite, work+"/a", "")
	}()
	release()
	release() // idempotent
	close(start)
	err = <-result
	if !errors.Is(err, ErrScopeClosed) || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("use after release: %v, want ErrScopeClosed", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "scope_test.go:") || !strings.Contains(msg, "entered at") {
		t.Fatalf("message does not say where the scope was entered:\n%s", msg)
	}
}

func TestReleasingAnOuterScopeRevokesNestedOnes(t *testing.T) {
	g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{"/"}}))
	outer, release, _ := g.Enter(context.Background())
	inner, releaseInner, _ := g.Enter(outer)
	defer releaseInner()
	release()
	if err := fsCheck(inner, policy.OpRead, "/", ""); !errors.Is(err, ErrScopeClosed) {
		t.Fatalf("nested scope survived its parent: %v", err)
	}
}

func TestRestrictOnlyNarrows(t *testing.T) {
	root := tempDir(t)
	a, b := root+"/a", root+"/b"
	g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{a}}))
	ctx := enter(t, g)

	wider := newPolicy(t, policy.Spec{WriteRoots: []string{a, b}})
	rctx, release, err := Restrict(ctx, wider)
	if err != nil {
		t.Fatalf("Restrict inside a scope: %v", err)
	}
	defer release()
	if err := fsCheck(rctx, policy.OpWrite, b+"/x", ""); err == nil {
		t.Fatal("Restrict widened the policy")
	}
	if err := fsCheck(rctx, policy.OpWrite, a+"/x", ""); err != nil {
		t.Fatalf("Restrict with a superset denied an allowed write: %v", err)
	}

	narrower := newPolicy(t, policy.Spec{WriteRoots: []string{a + "/only"}})
	nctx, releaseN, err := Restrict(rctx, narrower)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseN()
	if err := fsCheck(nctx, policy.OpWrite, a+"/x", ""); err == nil {
		t.Fatal("the narrower restriction did not apply")
	}
	if err := fsCheck(nctx, policy.OpWrite, a+"/only/x", ""); err != nil {
		t.Fatalf("write allowed by every policy denied: %v", err)
	}
	if got := len(From(nctx).Policies()); got != 3 {
		t.Fatalf("Policies() has %d entries, want 3", got)
	}
	if _, _, err := Restrict(context.Background(), narrower); !errors.Is(err, ErrNoScope) {
		t.Fatalf("Restrict outside a scope: %v", err)
	}
	// The outer scope is unaffected.
	if err := fsCheck(ctx, policy.OpWrite, a+"/x", ""); err != nil {
		t.Fatalf("Restrict changed the outer scope: %v", err)
	}
}

func TestDenyErrorTeaches(t *testing.T) {
	work := tempDir(t)
	g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{work}}))
	err := fsCheck(enter(t, g), policy.OpWrite, work+"/.git/hooks/pre-commit", "")
	var de *DenyError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"fs write denied",
		work + "/.git/hooks/pre-commit",
		`protected ".git/hooks" (builtin) [hard]`,
		"called at: helpers_test.go:",
		"audit.fsCheck",
		"entered at: helpers_test.go:",
		"to allow:",
		"retrying",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "pipeline.go") || strings.Contains(msg, "scope.go") {
		t.Errorf("message names a library frame as the caller:\n%s", msg)
	}
}

// A facade's PassOver prefixes move the caller past the helpers of the
// interface it implements.
func TestPassOverMovesTheCaller(t *testing.T) {
	g := newGuard(t, newPolicy(t, policy.Spec{}))
	ctx := enter(t, g)
	check := func(passOver []string) string {
		ev := &Event{Protocol: FS, Op: policy.OpWrite, Target: "/x", Resolved: "/x", PassOver: passOver}
		err := Check(ctx, ev, &policy.PathRequest{Op: policy.OpWrite, Path: "/x"})
		var de *DenyError
		if !errors.As(err, &de) {
			t.Fatalf("err = %v", err)
		}
		return de.Caller.Function
	}
	helper := func() string {
		return check([]string{"github.com/auditguard/auditguard/audit.TestPassOverMovesTheCaller.func1"})
	}
	if got := check(nil); !strings.HasSuffix(got, "TestPassOverMovesTheCaller.func1") {
		t.Fatalf("caller without PassOver = %s", got)
	}
	if got := helper(); !strings.HasSuffix(got, "TestPassOverMovesTheCaller.func2") {
		t.Fatalf("caller with the helper passed over = %s, want the code that called the helper", got)
	}
}
