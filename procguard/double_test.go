package procguard

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// BenchmarkDoubleLookup is what the test-double hook adds to every Start
// of a guard without doubles: one context lookup and a nil map check.
func BenchmarkDoubleLookup(b *testing.B) {
	p, err := policy.New(policy.Spec{})
	if err != nil {
		b.Fatal(err)
	}
	g, err := audit.New(p, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		b.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	for b.Loop() {
		if doubleOf(audit.From(ctx)) != nil {
			b.Fatal("a double")
		}
	}
}
