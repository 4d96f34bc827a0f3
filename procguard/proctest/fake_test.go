package proctest_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/proctest"
)

// gitBranch is host code under test: it takes a Runner.
func gitBranch(ctx context.Context, r procguard.Runner, dir string) (string, error) {
	res, err := r.Run(ctx, procguard.Request{Name: "git", Args: []string{"branch", "--show-current"}, Dir: dir})
	if err != nil {
		return "", err
	}
	return string(res.Stdout), nil
}

func TestFake(t *testing.T) {
	dir := t.TempDir()
	pol, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{
		{Program: "git", Args: []string{"branch"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	f := &proctest.Fake{Guard: true}
	f.On([]string{"git", "branch", "--show-current"}, proctest.Response{Stdout: "main\n"})
	f.On([]string{"git", "push"}, proctest.Response{})
	got, err := gitBranch(ctx, f, dir)
	if err != nil || got != "main\n" {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := f.Run(ctx, procguard.Request{Name: "git", Args: []string{"status"}, Dir: dir}); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("guarded fake allowed git status: %v", err)
	}
	if _, err := f.Run(ctx, procguard.Request{Name: "git", Args: []string{"branch", "-a"}, Dir: dir}); !errors.Is(err, proctest.ErrUnexpected) {
		t.Fatalf("unexpected command: %v", err)
	}
	calls := f.Calls()
	if len(calls) != 3 || calls[0].Argv[1] != "branch" || calls[1].Err == nil {
		t.Fatalf("calls %+v", calls)
	}
	if u := f.Unused(); len(u) != 1 || u[0][1] != "push" {
		t.Fatalf("unused %v", u)
	}
}

func TestGuardedRunner(t *testing.T) {
	dir := t.TempDir()
	pol, _ := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: "echo"}}}})
	g, _ := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, release, _ := g.Enter(context.Background())
	defer release()
	res, err := procguard.Guarded.Run(ctx, procguard.Request{Name: "sh", Args: []string{"-c", "echo out; echo err >&2; exit 3"}, Dir: dir})
	if err != nil || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.ExitCode != 3 {
		t.Fatalf("%+v %v", res, err)
	}
}
