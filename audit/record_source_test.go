package audit

import (
	"context"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// pcHandler keeps the PC of every record it is handed.
type pcHandler struct{ pcs []uintptr }

func (h *pcHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *pcHandler) Handle(_ context.Context, r slog.Record) error {
	h.pcs = append(h.pcs, r.PC)
	return nil
}
func (h *pcHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *pcHandler) WithGroup(string) slog.Handler      { return h }

// TestRecordSource checks the source a handler with AddSource would print
// for a logged decision: emit, in record.go, as when the record went
// through Logger.LogAttrs (emit now names its own PC instead of walking
// the stack for it).
func TestRecordSource(t *testing.T) {
	dir := tempDir(t)
	h := &pcHandler{}
	g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{dir}, Home: dir}), WithLogger(slog.New(h)))
	ctx := enter(t, g)
	for range 2 { // the first record finds the PC, the second reuses it
		if err := fsCheck(ctx, policy.OpWrite, "/etc/passwd", dir); err == nil {
			t.Fatal("a write outside the root was allowed")
		}
	}
	if len(h.pcs) != 2 {
		t.Fatalf("logged %d records, want 2", len(h.pcs))
	}
	for _, pc := range h.pcs {
		f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
		if f.Function != "github.com/auditguard/auditguard/audit.(*Guard).emit" || filepath.Base(f.File) != "record.go" || f.Line == 0 {
			t.Errorf("a record's source is %s %s:%d, want audit.(*Guard).emit in record.go", f.Function, f.File, f.Line)
		}
	}
}
