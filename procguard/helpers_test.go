package procguard_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/internal/proctree"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

type env struct {
	ctx context.Context
	dir string // the write root; commands run here
	rec *audit.Recorder
	pol *policy.Policy
}

// setup enters a guard whose only write root is a temp dir, with the given
// exec spec. HOME is a temp dir so nothing touches the real one.
func setup(t testing.TB, spec policy.ExecSpec, opts ...audit.Option) *env {
	t.Helper()
	if tt, ok := t.(*testing.T); ok {
		tt.Setenv("HOME", t.TempDir())
	}
	dir := t.TempDir()
	pol, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: spec})
	if err != nil {
		t.Fatal(err)
	}
	rec := audit.NewRecorder()
	base := []audit.Option{audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), audit.WithRecorder(rec)}
	if _, ok := t.(*testing.B); !ok {
		base = append(base, audit.WithLogAllows())
	}
	opts = append(base, opts...)
	g, err := audit.New(pol, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &env{ctx: ctx, dir: real, rec: rec, pol: pol}
}

// pastArgv lets scripts that hide their targets from the argv rules
// (computed redirections, opaque words) through to the kernel layer, so a
// test can show what the sandbox and Landlock hold on their own. Other
// hard denials stay.
func pastArgv() []audit.Option {
	return []audit.Option{audit.WithRescueHard(), audit.WithBeforeDeny(func(_ context.Context, ev *audit.Event) bool {
		p := ev.Decision.Rule.Pattern
		return strings.HasPrefix(p, "computed redirection") || strings.HasPrefix(p, "scripts that cannot be read whole")
	})}
}

func allow(progs ...string) []policy.ExecRule {
	var rs []policy.ExecRule
	for _, p := range progs {
		f := strings.Fields(p)
		rs = append(rs, policy.ExecRule{Program: f[0], Args: f[1:]})
	}
	return rs
}

// groupMembers lists the live (non-zombie) processes of process group pgid.
func groupMembers(t testing.TB, pgid int) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, pg, ok := proctree.Stat(pid)
		if ok && pg == pgid && state != "Z" && state != "X" {
			out = append(out, e.Name()+" "+state)
		}
	}
	return out
}

// leftOf lists the live processes of c's sandbox after its Wait, but for
// its init where Wait leaves that on purpose (a Session's sandbox, one
// recycled for the next command, or one ended after the Wait:
// sandbox.StartRecycled); nil without a sandbox. Whatever is listed
// outlived the command.
func leftOf(c *procguard.Cmd) []int {
	sb := c.Confinement.Sandbox
	if sb == nil {
		return nil
	}
	init := c.Confinement.ProcessGroup
	m := proctree.NamespaceMembers(sb.PidNamespace, init)
	if c.Session != nil || sandbox.EndsAfterWait() {
		m = slices.DeleteFunc(m, func(pid int) bool { return pid == init })
	}
	return m
}
