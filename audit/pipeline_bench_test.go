package audit

import (
	"context"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// BenchmarkCheck measures the pipeline around an allowed decision on a
// resolved path: the cost every facade adds beyond resolution and the call.
func BenchmarkCheck(b *testing.B) {
	pol := newPolicy(b, policy.Spec{WriteRoots: []string{"/srv/auditguard-bench"}})
	path := "/srv/auditguard-bench/src/pkg/handler.go"
	run := func(b *testing.B, g *Guard) {
		ctx, release, _ := g.Enter(context.Background())
		defer release()
		sc := From(ctx)
		b.ReportAllocs()
		for b.Loop() {
			ev := Event{Protocol: FS, Op: policy.OpWrite, Target: path, Resolved: path}
			req := policy.PathRequest{Op: policy.OpWrite, Path: path}
			if err := sc.Check(ctx, &ev, &req); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("policy-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = pol.CheckPath(policy.OpWrite, path, "")
		}
	})
	b.Run("pipeline", func(b *testing.B) { run(b, newGuard(b, pol)) })
	b.Run("pipeline+OnCall", func(b *testing.B) {
		run(b, newGuard(b, pol, WithOnCall(func(context.Context, *Event) Verdict { return Continue })))
	})
}
