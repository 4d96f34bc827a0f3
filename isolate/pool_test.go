package isolate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/isolate"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// TestReadyChildDiesWithScope: after a call, a child for the next one
// waits, confined, in the pool; it serves the next call; releasing the
// scope ends it, and nothing of it is left.
func TestReadyChildDiesWithScope(t *testing.T) {
	e := setup(t)
	sandbox.SetPrewarm(false)
	defer sandbox.SetPrewarm(true)
	// End the ready child setup's call left for its own scope.
	isolate.SetPool(false)
	isolate.SetPool(true)
	if kids := children(t); len(kids) > 0 {
		t.Fatalf("children before the test: %v", kids)
	}
	g := audit.From(e.ctx).Guard()
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := isolate.Prewarm(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	if len(children(t)) == 0 {
		t.Fatal("no ready child after Prewarm")
	}
	var out string
	if err := isolate.Call(ctx, "echo", "warm", &out, isolate.Timeout(time.Minute)); err != nil || out != "echo: warm" {
		t.Fatalf("%q %v", out, err)
	}
	if err := isolate.Prewarm(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	release()
	deadline := time.Now().Add(20 * time.Second)
	for len(children(t)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if kids := children(t); len(kids) > 0 {
		t.Fatalf("the ready child outlived its scope: %v", kids)
	}
	if err := isolate.Call(ctx, "echo", "x", nil); !errors.Is(err, audit.ErrScopeClosed) {
		t.Errorf("a call in the released scope: %v", err)
	}
}

func TestPrewarmUnknown(t *testing.T) {
	e := setup(t)
	if err := isolate.Prewarm(e.ctx, "no-such-function"); !errors.Is(err, isolate.ErrUnknown) {
		t.Fatalf("got %v", err)
	}
}
