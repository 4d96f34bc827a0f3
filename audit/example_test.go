package audit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// check asks the guard about a write the way fsguard does: resolve, then
// call the pipeline with the resolved path.
func check(ctx context.Context, name string) error {
	resolved, err := policy.Resolve(policy.OSFS{}, name, "/", true)
	if err != nil {
		return err
	}
	ev := &audit.Event{Protocol: audit.FS, Op: policy.OpWrite, Target: name, Resolved: resolved}
	return audit.Check(ctx, ev, &policy.PathRequest{Op: policy.OpWrite, Path: resolved})
}

func Example() {
	work, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(work)

	pol, err := policy.New(policy.Spec{WriteRoots: []string{work}})
	if err != nil {
		panic(err)
	}
	g, _ := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		panic(err)
	}
	defer release()

	fmt.Println("inside the workspace:", check(ctx, work+"/out.txt"))
	err = check(ctx, work+"/.git/hooks/pre-commit")
	fmt.Println("git hook denied:", errors.Is(err, fs.ErrPermission))
	var de *audit.DenyError
	errors.As(err, &de)
	fmt.Println("rule:", de.Decision.Rule, "tier:", de.Decision.Tier)
	// Output:
	// inside the workspace: <nil>
	// git hook denied: true
	// rule: protected ".git/hooks" (builtin) tier: hard
}

// A host lets its own trusted tool do what generated code may not.
func ExampleWithBeforeDeny() {
	pol, _ := policy.New(policy.Spec{}) // no write roots: every write is denied
	g, _ := audit.New(pol,
		audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		audit.WithBeforeDeny(func(ctx context.Context, ev *audit.Event) bool {
			return ev.Call != nil && ev.Call.Name == "cache-writer"
		}))
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	fmt.Println("generated code denied:", check(ctx, "/nonexistent-example/cache") != nil)
	toolCtx, done := audit.WithCall(ctx, "cache-writer", nil)
	fmt.Println("trusted tool allowed:", check(toolCtx, "/nonexistent-example/cache") == nil)
	done()
	fmt.Println("after the tool returned:", check(toolCtx, "/nonexistent-example/cache") != nil)
	// Output:
	// generated code denied: true
	// trusted tool allowed: true
	// after the tool returned: true
}

// Warn mode is a dry run: the call proceeds and the recorder keeps the
// would-deny.
func ExampleWithMode() {
	rec := audit.NewRecorder()
	pol, _ := policy.New(policy.Spec{})
	g, _ := audit.New(pol, audit.WithMode(audit.FS, audit.Warn), audit.WithRecorder(rec),
		audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	fmt.Println("error:", check(ctx, "/nonexistent-example/x"))
	r := rec.Records()[0]
	fmt.Println(r.Outcome, r.Op, r.Target, "by", r.DecidedBy)
	// Output:
	// error: <nil>
	// would-deny write /nonexistent-example/x by mode warn
}
