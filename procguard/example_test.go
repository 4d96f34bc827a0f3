package procguard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

func ExampleCommandContext() {
	work, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(work)
	pol, err := policy.New(policy.Spec{
		WriteRoots: []string{work},
		Exec: policy.ExecSpec{Rules: []policy.ExecRule{
			{Program: "echo", Args: []string{"hello"}},
			{Program: "git", Args: []string{"push"}, Deny: true},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, _ := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	cmd := procguard.CommandContext(ctx, "sh", "-c", "echo hello world && echo hello again")
	cmd.Dir = work
	out, err := cmd.Output()
	fmt.Printf("%q %v\n", out, err)

	cmd = procguard.CommandContext(ctx, "rm", "-rf", work)
	cmd.Dir = work
	err = cmd.Run()
	fmt.Println(errors.Is(err, fs.ErrPermission), cmd.Process == nil)
	// Output:
	// "hello world\nhello again\n" <nil>
	// true true
}

func ExampleCmd_Check() {
	work, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(work)
	pol, _ := policy.New(policy.Spec{WriteRoots: []string{work}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{
		{Program: "git", Args: []string{"status"}},
		{Program: "git", Args: []string{"push"}, Deny: true, Source: "team.toml:7"},
	}}})
	g, _ := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	for _, script := range []string{"git status", "git status && git push", "git status; id"} {
		cmd := procguard.CommandContext(ctx, "bash", "-lc", script)
		cmd.Dir = work
		d := cmd.Check()
		fmt.Printf("%-24q allowed=%v tier=%v rule=%v\n", script, d.Allowed, d.Tier, d.Rule)
	}
	// Output:
	// "git status"             allowed=true tier=none rule=exec rule "git status" (code)
	// "git status && git push" allowed=false tier=hard rule=exec rule "deny git push" (team.toml:7)
	// "git status; id"         allowed=false tier=soft rule=exec rule "programs need an exec rule" (builtin)
}

// A guard that asks for a sandboxed child's allowed file calls
// (audit.WithChildFileCalls) records each of them with the tool call the
// command runs under, and its OnCall may refuse one: here any write to a
// file named *.lock, however the child spells the name. Each such call
// waits for the host, so hosts ask only when they need to see them.
func ExampleCommandContext_childFileCalls() {
	work, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(work)
	pol, err := policy.New(policy.Spec{
		WriteRoots: []string{work},
		Exec:       policy.ExecSpec{Rules: []policy.ExecRule{{Program: "sh"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := audit.NewRecorder()
	noLocks := audit.WithOnCall(func(ctx context.Context, ev *audit.Event) audit.Verdict {
		if ev.Protocol == audit.FS && strings.HasSuffix(ev.Resolved, ".lock") {
			return audit.Deny
		}
		return audit.Continue
	})
	g, _ := audit.New(pol, audit.WithChildFileCalls(), audit.WithLogAllows(), audit.WithRecorder(rec), noLocks,
		audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, release, _ := g.Enter(context.Background())
	defer release()
	ctx, done := audit.WithCall(ctx, "bash", nil)
	defer done()

	cmd := procguard.CommandContext(ctx, "sh", "-c", "echo a > notes.txt; echo b > /proc/self/cwd/build.lock || echo refused")
	cmd.Dir = work
	out, _ := cmd.Output()
	fmt.Printf("%s", out)
	for _, r := range rec.Records() {
		if r.Protocol == audit.FS {
			fmt.Println(r.Tool, r.Op, filepath.Base(r.Resolved), r.Outcome)
		}
	}
	// On a host where commands run in the sandbox, this prints:
	//   refused
	//   bash write notes.txt allowed
	//   bash write build.lock denied
}

// Commands given a Session run one after another in one sandbox: the
// first builds it, the next are forked from its init. Each is still
// decided and confined on its own; a failed program's status comes back
// as an error with an ExitCode (a *sandbox.ExitError, there being no
// process of the host's to carry it; where no sandbox can be built, the
// commands run without it and the error is an *exec.ExitError).
func ExampleSession() {
	work, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(work)
	pol, _ := policy.New(policy.Spec{WriteRoots: []string{work}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{
		{Program: "sh"}, {Program: "echo"},
	}}})
	g, _ := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	var session procguard.Session
	defer session.Close()
	for _, script := range []string{"echo one > f", "read x < f && echo got $x", "exit 3"} {
		cmd := procguard.CommandContext(ctx, "sh", "-c", script)
		cmd.Dir, cmd.Session = work, &session
		out, err := cmd.Output()
		var status interface{ ExitCode() int }
		if errors.As(err, &status) {
			fmt.Printf("%q: exit %d\n", script, status.ExitCode())
			continue
		}
		fmt.Printf("%q: %q %v\n", script, out, err)
	}
	// Output:
	// "echo one > f": "" <nil>
	// "read x < f && echo got $x": "got one\n" <nil>
	// "exit 3": exit 3
}
