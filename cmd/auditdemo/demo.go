package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

func cmdDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("auditdemo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	logPath := fs.String("log", "", "write audit records as JSON lines to `FILE`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := demo(stdout, *logPath); err != nil {
		fmt.Fprintln(stderr, "auditdemo:", err)
		return 1
	}
	return 0
}

func demo(out io.Writer, logPath string) error {
	logger, closeLog, err := openLog(logPath)
	if err != nil {
		return err
	}
	defer closeLog()
	tmp, err := os.MkdirTemp("", "auditdemo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "workspace")
	home := filepath.Join(tmp, "home")
	for _, d := range []string{work, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(home, "notes.txt"), []byte("keep me\n"), 0o644); err != nil {
		return err
	}

	pol, err := policy.New(policy.Spec{WriteRoots: []string{work}, Source: "demo policy", Home: home})
	if err != nil {
		return err
	}
	rec := audit.NewRecorder()
	g, err := audit.New(pol, audit.WithRecorder(rec), audit.WithLogger(logger), audit.WithLogAllows())
	if err != nil {
		return err
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		return err
	}
	defer release()

	steps := []step{
		{"write a result file", policy.OpWrite, filepath.Join(work, "result.txt")},
		{"delete a file in the home dir", policy.OpDelete, filepath.Join(home, "notes.txt")},
		{"install a git hook", policy.OpWrite, filepath.Join(work, ".git", "hooks", "pre-commit")},
	}
	for _, s := range steps {
		err := generatedCode(ctx, s)
		var de *audit.DenyError
		if err != nil && !errors.As(err, &de) {
			return err
		}
	}

	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION\tTARGET\tDECISION\tRULE\tCALLER")
	denied := 0
	for _, r := range rec.Records() {
		rel, _ := filepath.Rel(tmp, r.Target)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Op, rel, r.Outcome, r.Rule, r.Caller)
		if r.Outcome == audit.Denied {
			denied++
		}
	}
	tw.Flush()
	fmt.Fprintf(out, "\n%d calls, %d denied; nothing outside %s was touched.\n", len(rec.Records()), denied, tmp)
	return nil
}

// step is one call the "generated code" makes.
type step struct {
	what string
	op   policy.Op
	path string
}

// generatedCode stands for code an LLM wrote: it resolves its target, asks
// the guard, and acts only when allowed.
func generatedCode(ctx context.Context, s step) error {
	resolved, err := policy.Resolve(policy.OSFS{}, s.path, "/", s.op != policy.OpDelete)
	if err != nil {
		return err
	}
	ev := &audit.Event{Protocol: audit.FS, Op: s.op, Target: s.path, Resolved: resolved}
	if err := audit.Check(ctx, ev, &policy.PathRequest{Op: s.op, Path: resolved}); err != nil {
		return err
	}
	switch s.op {
	case policy.OpWrite:
		if err := os.MkdirAll(filepath.Dir(resolved), 0o755); err != nil {
			return err
		}
		return os.WriteFile(resolved, []byte("ok\n"), 0o644)
	case policy.OpDelete:
		return os.Remove(resolved)
	}
	return nil
}
