package procguard_test

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
