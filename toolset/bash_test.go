package toolset_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/shellguard"
	"github.com/auditguard/auditguard/toolset"
)

// bashFixture is a workspace whose policy allows a few programs (rm is
// not among them) and a Set with a shell session.
func bashFixture(t *testing.T, shell shellguard.Options) *fixture {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var rules []policy.ExecRule
	for _, p := range []string{"echo", "seq", "sleep", "cat", "ls", "true", "false", "printenv", "sh"} {
		rules = append(rules, policy.ExecRule{Program: p})
	}
	pol, err := policy.New(policy.Spec{WriteRoots: []string{ws}, Home: ws,
		ReadDeny: []string{filepath.Join(ws, "secrets")},
		Exec:     policy.ExecSpec{Rules: rules}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ws: ws, rec: audit.NewRecorder()}
	g, err := audit.New(pol, audit.WithRecorder(f.rec), audit.WithLogAllows(), audit.WithLogger(discard()))
	if err != nil {
		t.Fatal(err)
	}
	f.ctx, f.release, err = g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.release)
	f.set, err = toolset.New(f.ctx, toolset.Options{Workspace: ws, Shell: &shell, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.set.Close() })
	return f
}

func TestBash(t *testing.T) {
	f := bashFixture(t, shellguard.Options{MaxOutput: 4096})
	f.file("sub/keep.txt", "keep me\n")
	f.file("secrets/key", "sk-live-999\n")

	t.Run("state across calls", func(t *testing.T) {
		f.ok(t, "b1", "bash", map[string]any{"command": "cd sub && export GREETING=hi && greet() { echo \"$GREETING from $(pwd)\"; }"})
		got := f.ok(t, "b2", "bash", map[string]any{"command": "greet; printenv GREETING"})
		want := "exit code 0, working directory sub\n--- stdout ---\nhi from " + filepath.Join(f.ws, "sub") + "\nhi\n"
		if got != want {
			t.Errorf("got:\n%s\nwant:\n%s", got, want)
		}
		f.ok(t, "b3", "bash", map[string]any{"command": "cd .."})
	})
	t.Run("loop of a program", func(t *testing.T) {
		f.rec.Reset()
		got := f.ok(t, "loop-1", "bash", map[string]any{"command": "for i in $(seq 1 5); do echo \"n=$i\"; done | cat > out.txt; cat out.txt"})
		if !strings.Contains(got, "n=1\nn=2\nn=3\nn=4\nn=5\n") {
			t.Errorf("got:\n%s", got)
		}
		for _, r := range f.rec.Records() {
			if r.Tool != "bash#loop-1" {
				t.Errorf("a record of the call names %q", r.Tool)
			}
		}
	})
	t.Run("refused program", func(t *testing.T) {
		got := f.ok(t, "b4", "bash", map[string]any{"command": "rm -rf sub"})
		for _, w := range []string{"exit code 126", "--- stderr ---", "rm: auditguard: exec denied", "to allow:"} {
			if !strings.Contains(got, w) {
				t.Errorf("result lacks %q:\n%s", w, got)
			}
		}
		if c, _ := f.read("sub/keep.txt"); c != "keep me\n" {
			t.Error("the refused rm removed sub/keep.txt")
		}
	})
	t.Run("protected redirection and read-deny", func(t *testing.T) {
		if err := os.MkdirAll(filepath.Join(f.ws, ".git/hooks"), 0o755); err != nil {
			t.Fatal(err)
		}
		got := f.ok(t, "b5", "bash", map[string]any{"command": "echo 'curl x|sh' > .git/hooks/pre-commit; echo \"hook $?\"; cat secrets/key; echo \"cat $?\""})
		if strings.Contains(got, "sk-live") {
			t.Errorf("a read-denied file reached the output:\n%s", got)
		}
		for _, w := range []string{"hook 1", "fs write denied", ".git/hooks", "cat 1"} {
			if !strings.Contains(got, w) {
				t.Errorf("result lacks %q:\n%s", w, got)
			}
		}
		if _, ok := f.read(".git/hooks/pre-commit"); ok {
			t.Error("the redirection wrote a git hook")
		}
	})
	t.Run("script that does not parse", func(t *testing.T) {
		res, err := f.call("b6", "bash", map[string]any{"command": "echo start > started.txt; if then fi"})
		mustFail(t, res, err, toolset.KindInput, "does not parse", "nothing ran")
		if _, ok := f.read("started.txt"); ok {
			t.Error("part of a script that does not parse ran")
		}
	})
	t.Run("output cap", func(t *testing.T) {
		got := f.ok(t, "b7", "bash", map[string]any{"command": "seq 1 20000"})
		if !strings.Contains(got, "bytes omitted") || len(got) > 6000 {
			t.Errorf("output not capped (%d bytes):\n%.300s", len(got), got)
		}
	})
	t.Run("timeout kills the tree", func(t *testing.T) {
		start := time.Now()
		got := f.ok(t, "b8", "bash", map[string]any{"command": "sh -c 'sleep 41.5' & while true; do sleep 42.5; done", "timeout_seconds": 1})
		if !strings.Contains(got, "timed out") || !strings.HasPrefix(got, "exit code 137") {
			t.Errorf("got:\n%s", got)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("the call took %v", d)
		}
		for _, marker := range []string{"41.5", "42.5"} {
			if pids := sleepers(t, marker); len(pids) > 0 {
				t.Errorf("sleep %s still runs after the timeout: pids %v", marker, pids)
			}
		}
	})
	if _, err := f.set.Bash(context.Background(), toolset.BashInput{}); err == nil {
		t.Error("an empty command ran")
	}
}

// sleepers lists live processes running "sleep marker".
func sleepers(t *testing.T, marker string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var pids []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) == 2 && filepath.Base(args[0]) == "sleep" && args[1] == marker {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
