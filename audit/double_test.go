package audit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

type doubleKeyA struct{}
type doubleKeyB struct{}

func TestWithDouble(t *testing.T) {
	p := newPolicy(t, policy.Spec{WriteRoots: []string{tempDir(t)}})
	g := newGuard(t, p, WithDouble(doubleKeyA{}, "fake exec"))
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	s := From(ctx)
	if got := s.Double(doubleKeyA{}); got != "fake exec" {
		t.Fatalf("Double(A) = %v", got)
	}
	if got := s.Double(doubleKeyB{}); got != nil {
		t.Fatalf("Double(B) = %v", got)
	}
	if got := (*Scope)(nil).Double(doubleKeyA{}); got != nil {
		t.Fatalf("nil scope: %v", got)
	}
	plain := newGuard(t, p)
	pctx, prelease, _ := plain.Enter(context.Background())
	defer prelease()
	if got := From(pctx).Double(doubleKeyA{}); got != nil {
		t.Fatalf("a guard without doubles: %v", got)
	}
}

// TestOnCallDenyWithDecision: an OnCall that sets a denial before
// returning Deny has its rule in the error, in every mode; one that does
// not gets the generic rule.
func TestOnCallDenyWithDecision(t *testing.T) {
	rule := &policy.Rule{Kind: policy.KindHost, Pattern: "no calls after the test", Source: "harness", Hint: "wait for the goroutine"}
	cases := []struct {
		name   string
		set    bool
		mode   Mode
		want   string
		denied bool
	}{
		{"own rule", true, Enforce, `"no calls after the test" (harness)`, true},
		{"own rule in warn mode", true, Warn, `"no calls after the test" (harness)`, true},
		{"generic", false, Enforce, `"OnCall returned Deny"`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tempDir(t)
			p := newPolicy(t, policy.Spec{WriteRoots: []string{dir}})
			g := newGuard(t, p, WithMode(FS, tc.mode), WithOnCall(func(_ context.Context, ev *Event) Verdict {
				if tc.set {
					ev.Decision = policy.Deny(policy.TierSelf, rule, "")
				}
				return Deny
			}))
			ctx, release, _ := g.Enter(context.Background())
			defer release()
			err := Check(ctx, &Event{Protocol: FS, Op: policy.OpWrite, Target: dir + "/x"}, &policy.PathRequest{Op: policy.OpWrite, Path: dir + "/x"})
			if (err != nil) != tc.denied || !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v", err)
			}
			if tc.set && !strings.Contains(err.Error(), "to allow: wait for the goroutine") {
				t.Fatalf("hint missing: %v", err)
			}
		})
	}
}

// TestCallerFrame names the caller of a library function. (A recorded
// stack, the HTTP case, is checked through netguard by audittest's
// TestFailuresAreReported: the call site of an unscripted fetch.)
func TestCallerFrame(t *testing.T) {
	f := CallerFrame(context.Background())
	if !strings.HasSuffix(f.File, "double_test.go") || f.Function != "github.com/auditguard/auditguard/audit.TestCallerFrame" {
		t.Fatalf("%+v", f)
	}
}
