package audit

import (
	"context"
	"log/slog"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// BenchmarkCheck measures the pipeline around an allowed decision on a
// resolved path: the cost every facade adds beyond resolution and the call.
// Its two allocations are the loop's own Event and request, which escape
// to the callbacks; the pipeline adds none.
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

// BenchmarkDeny measures the pipeline around a denial: the cost a denied
// call pays beyond resolution, error included. "quiet" has no Recorder and
// a logger off at the denial's level, so no record is built; "logged" has
// a Recorder, so every denial is recorded.
func BenchmarkDeny(b *testing.B) {
	pol := newPolicy(b, policy.Spec{WriteRoots: []string{"/srv/auditguard-bench"}})
	path := "/home/someone/project/src/pkg/handler.go"
	run := func(b *testing.B, g *Guard) {
		ctx, release, _ := g.Enter(context.Background())
		defer release()
		sc := From(ctx)
		b.ReportAllocs()
		for b.Loop() {
			ev := Event{Protocol: FS, Op: policy.OpWrite, Target: path, Resolved: path}
			req := policy.PathRequest{Op: policy.OpWrite, Path: path}
			if err := sc.Check(ctx, &ev, &req); err == nil {
				b.Fatal("allowed")
			}
		}
	}
	off := slog.New(slog.DiscardHandler)
	b.Run("quiet", func(b *testing.B) { run(b, newGuard(b, pol, WithLogger(off))) })
	b.Run("recorded", func(b *testing.B) {
		rec := NewRecorder()
		run(b, newGuard(b, pol, WithLogger(off), WithRecorder(rec), WithRecordHook(func(context.Context, Record) { rec.Reset() })))
	})
}
