package shellguard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/shellguard"
)

// An agent's Bash tool on a session: state holds across calls, programs
// are judged with their expanded arguments, and refusals teach.
func Example() {
	work, _ := os.MkdirTemp("", "shellguard-example-")
	defer os.RemoveAll(work)
	os.MkdirAll(filepath.Join(work, ".git", "hooks"), 0o755)

	pol, _ := policy.New(policy.Spec{
		WriteRoots: []string{work},
		Exec: policy.ExecSpec{Rules: []policy.ExecRule{
			{Program: "cat"},
			{Program: "wc", Args: []string{"-l"}},
		}},
	})
	rec := audit.NewRecorder()
	g, _ := audit.New(pol, audit.WithRecorder(rec), audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, release, _ := g.Enter(context.Background())
	defer release() // after Close: kills whatever the scope still has

	s, err := shellguard.New(ctx, shellguard.Options{Dir: work, Recorder: rec})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	for _, script := range []string{
		"notes() { cat > \"$1\" <<'EOF'\none\ntwo\nEOF\n}\nnotes notes.txt",
		"cat notes.txt | wc -l",
		"rm notes.txt; echo \"rm: $?\"",
		"echo '#!/bin/sh' > .git/hooks/pre-commit; echo \"hook: $?\"",
	} {
		res, err := s.Run(ctx, script)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("stdout %q exit %d teaches %v\n", res.Stdout, res.ExitCode, strings.Contains(res.Stderr, "to allow:"))
		for _, r := range res.Records {
			what := strings.Join(r.Argv, " ")
			if r.Protocol == audit.FS {
				what = filepath.Base(r.Target)
			}
			fmt.Printf("  %s %s %q by %s\n", r.Outcome, r.Protocol, what, strings.Split(r.Tool, "#")[0])
		}
	}
	_, err = s.Run(ctx, "echo 'unterminated")
	fmt.Println(err)
	// Output:
	// stdout "" exit 0 teaches false
	// stdout "2\n" exit 0 teaches false
	// stdout "rm: 126\n" exit 0 teaches true
	//   denied exec "rm notes.txt" by bash
	// stdout "hook: 1\n" exit 0 teaches true
	//   denied fs "pre-commit" by bash
	// shellguard: the script does not parse: 1:6: reached EOF without closing quote `'` (nothing ran)
}
