package procguard_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

// TestRelativeProgramsInScripts: a relative program, alone or inside a
// script, is resolved against the command's directory (as the shell and
// exec.Cmd run it) and judged like any other program; only a name that
// resolves to no executable is invalid input. Decisions only: nothing
// runs.
func TestRelativeProgramsInScripts(t *testing.T) {
	ws := t.TempDir()
	realWS, _ := filepath.EvalSymlinks(ws)
	pol, err := policy.New(policy.Spec{WriteRoots: []string{ws}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{
		{Under: filepath.Join(realWS, "bin")}, {Program: "cat"}}}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	must(t, os.MkdirAll(filepath.Join(ws, "bin"), 0o755))
	must(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "bin", "hello"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "bin", "data"), []byte("not a program\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "run.sh"), []byte("#!/bin/sh\n./bin/hello\n"), 0o755))
	ls, err := policy.LookPath("ls", policy.DefaultExecPath)
	if err != nil {
		t.Skip("ls is not installed")
	}
	must(t, os.Symlink(ls, filepath.Join(ws, "bin", "myls")))
	must(t, os.Symlink(ls, filepath.Join(ws, "myls")))

	tests := []struct {
		dir  string // relative to ws
		argv []string
		tier policy.Tier // TierNone: allowed
	}{
		{".", []string{"./bin/hello"}, policy.TierNone},
		{".", []string{"bin/hello", "x"}, policy.TierNone},
		{".", []string{"sh", "-c", "./bin/hello"}, policy.TierNone},
		{".", []string{"sh", "-c", "bin/hello world && ./bin/hello again"}, policy.TierNone},
		{".", []string{"sh", "-c", "./bin/hello | cat"}, policy.TierNone},
		{"sub", []string{"sh", "-c", "../bin/hello"}, policy.TierNone},
		{"sub", []string{"../bin/hello"}, policy.TierNone},
		{".", []string{"./run.sh"}, policy.TierSoft},                 // run.sh is not under bin
		{".", []string{"sh", "-c", "./run.sh"}, policy.TierSoft},     // judged like any program
		{".", []string{"sh", "-c", "./bin/myls"}, policy.TierSoft},   // a link to ls: ls has no rule
		{".", []string{"./myls"}, policy.TierSoft},                   // the same at the top
		{".", []string{"sh", "-c", "./missing"}, policy.TierInvalid}, // resolves to nothing
		{".", []string{"sh", "-c", "./bin/data"}, policy.TierInvalid},
		{".", []string{"sh", "-c", "./sub"}, policy.TierInvalid}, // a directory
		{".", []string{"./missing"}, policy.TierInvalid},
		{"sub", []string{"sh", "-c", "./bin/hello"}, policy.TierInvalid}, // not from sub
	}
	for _, tc := range tests {
		t.Run(tc.dir+": "+strings.Join(tc.argv, " "), func(t *testing.T) {
			d := procguard.CheckIn(ctx, filepath.Join(ws, tc.dir), tc.argv[0], tc.argv[1:]...)
			if tc.tier == policy.TierNone {
				if !d.Allowed {
					t.Fatalf("denied: %v (%v)", d.Decision, d.Err)
				}
				return
			}
			if d.Allowed || d.Tier != tc.tier {
				t.Fatalf("allowed=%v tier=%v, want tier %v (%v)", d.Allowed, d.Tier, tc.tier, d.Err)
			}
		})
	}
}
