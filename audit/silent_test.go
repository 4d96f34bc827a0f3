package audit_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

func TestScopeSilent(t *testing.T) {
	pol, err := policy.New(policy.Spec{WriteRoots: []string{t.TempDir()}, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	quiet := audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	onCall := audit.WithOnCall(func(context.Context, *audit.Event) audit.Verdict { return audit.Continue })
	for _, c := range []struct {
		name string
		opts []audit.Option
		want bool
	}{
		{"plain", []audit.Option{quiet}, true},
		{"recorder", []audit.Option{quiet, audit.WithRecorder(audit.NewRecorder())}, true},
		{"OnCall", []audit.Option{quiet, onCall}, false},
		{"log allows", []audit.Option{quiet, audit.WithLogAllows()}, false},
	} {
		g, err := audit.New(pol, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, release, err := g.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := audit.From(ctx).Silent(); got != c.want {
			t.Errorf("%s: Silent() = %v, want %v", c.name, got, c.want)
		}
		release()
		if audit.From(ctx).Silent() {
			t.Errorf("%s: a released scope is Silent", c.name)
		}
	}
	if audit.From(context.Background()).Silent() {
		t.Error("a nil scope is Silent")
	}
}
