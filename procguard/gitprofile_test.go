package procguard_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy/policyfile"
	"github.com/auditguard/auditguard/procguard"
)

// agentScope enters a guard built from the short policy of docs/agents.md
// for a fresh /srv/agent twin, and returns the context and the twin.
func agentScope(t *testing.T) (context.Context, string) {
	t.Helper()
	return agentScopePort(t, "8080")
}

// agentScopePort is agentScope with the policy's loopback port set to port.
func agentScopePort(t *testing.T, port string) (context.Context, string) {
	t.Helper()
	for _, p := range []string{"git", "go", "sh"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
	t.Setenv("HOME", t.TempDir())
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"ws", "home", "tmp", "cache"} {
		if err := os.MkdirAll(filepath.Join(root, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	polFile := filepath.Join(root, "agent.toml")
	if err := os.WriteFile(polFile, []byte(agentPolicy(t, root, port)), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := policyfile.LoadFile(polFile)
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(f.Policy, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release() })
	return ctx, root
}

// guarded runs argv in dir under ctx and returns its exit code and output
// (-2 and the denial when it was refused before it started).
func guarded(t *testing.T, ctx context.Context, dir string, env []string, argv ...string) (int, string) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c := procguard.CommandContext(cctx, argv[0], argv[1:]...)
	c.Dir, c.Env = dir, env
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	var de *audit.DenyError
	if errors.As(err, &de) {
		return -2, err.Error() // refused before it started
	}
	if c.Confinement.Sandbox == nil {
		t.Skipf("no sandbox on this host: %s", c.Confinement.SandboxNote)
	}
	return exitCode(err), out.String()
}

// TestGitCloneAndWorktreeInSandbox: under the docs/agents.md policy, a
// plain git clone (local path and file://) writes the new repository's
// configuration from git's defaults and no hooks, git worktree add writes
// its links; a script's clone, and a child writing configuration, hooks or
// a .git pointer file, are refused, and the files are not there.
func TestGitCloneAndWorktreeInSandbox(t *testing.T) {
	ctx, root := agentScope(t)
	ws := filepath.Join(root, "ws")
	// The source repository, made on the host (raw).
	src := filepath.Join(ws, "src")
	raw := func(dir string, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TEMPLATE_DIR=")
		cmd.Env = append(cmd.Env, identity...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	raw(ws, "init", "-q", "-b", "main", src)
	if err := os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	raw(src, "add", ".")
	raw(src, "commit", "-qm", "a")

	for _, c := range []struct{ from, dir string }{{src, "byPath"}, {"file://" + src, "byURL"}} {
		if code, out := guarded(t, ctx, ws, identity, "git", "clone", "-q", c.from, c.dir); code != 0 {
			t.Fatalf("git clone %s: exit %d\n%s", c.from, code, out)
		}
		dst := filepath.Join(ws, c.dir)
		cfg, err := os.ReadFile(filepath.Join(dst, ".git", "config"))
		if err != nil || !strings.Contains(string(cfg), "[remote \"origin\"]") {
			t.Fatalf("%s: config %q %v", c.dir, cfg, err)
		}
		if _, err := os.Stat(filepath.Join(dst, ".git", "hooks")); !os.IsNotExist(err) {
			t.Errorf("%s: a hooks directory (template copied): %v", c.dir, err)
		}
		if b, err := os.ReadFile(filepath.Join(dst, "a.txt")); err != nil || string(b) != "a\n" {
			t.Errorf("%s: checkout %q %v", c.dir, b, err)
		}
		if code, out := guarded(t, ctx, dst, identity, "git", "log", "--oneline"); code != 0 || !strings.Contains(out, " a") {
			t.Errorf("%s: git log: %d %s", c.dir, code, out)
		}
	}

	dst := filepath.Join(ws, "byPath")
	if code, out := guarded(t, ctx, dst, identity, "git", "worktree", "add", "-q", "-b", "side", "../wt"); code != 0 {
		t.Fatalf("git worktree add: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "wt", ".git")); err != nil || !strings.HasPrefix(string(b), "gitdir: ") {
		t.Fatalf("the worktree's pointer file: %q %v", b, err)
	}
	if code, out := guarded(t, ctx, filepath.Join(ws, "wt"), identity, "git", "status", "--short", "--branch"); code != 0 || !strings.Contains(out, "side") {
		t.Errorf("git status in the worktree: %d %s", code, out)
	}

	// What only git's own plain commands may write stays refused to a
	// child: each attempt fails and leaves nothing.
	attempts := []struct {
		name, script, path string
	}{
		{"clone in a script", "git clone -q " + src + " scripted", "scripted/.git/config"},
		{"configuration", "echo '[core]' >> byPath/.git/config.new && mv byPath/.git/config.new byPath/.git/config.worktree", "byPath/.git/config.worktree"},
		{"a hook", "mkdir -p byPath/.git/hooks && printf '#!/bin/sh\\n' > byPath/.git/hooks/pre-commit", "byPath/.git/hooks/pre-commit"},
		{"a pointer file", "mkdir -p fake && printf 'gitdir: /tmp\\n' > fake/.git", "fake/.git"},
		{"a commondir", "echo /tmp > byPath/.git/commondir", "byPath/.git/commondir"},
	}
	for _, a := range attempts {
		code, out := guarded(t, ctx, ws, identity, "sh", "-c", a.script)
		if code == 0 {
			t.Errorf("%s: the script succeeded\n%s", a.name, out)
		}
		if _, err := os.Lstat(filepath.Join(ws, a.path)); !os.IsNotExist(err) {
			t.Errorf("%s: %s exists after the refusal (%v)", a.name, a.path, err)
		}
	}
	// Written by a program itself, each open is the supervisor's to judge.
	writer := "import sys; open(sys.argv[1], 'w').write('x')"
	for _, path := range []string{"byPath/.git/config.worktree", "byPath/.git/commondir", "byPath/.git/info/attributes",
		"byPath/.git/objects/info/alternates", "wt/.git", "byPath/.git/run.sh"} {
		if code, out := guarded(t, ctx, ws, nil, "python3", "-c", writer, path); code == 0 {
			t.Errorf("%s: written\n%s", path, out)
		}
	}
	// The empty hooks directory may be made, as git init and clone do; a
	// hook in it may not.
	if code, out := guarded(t, ctx, ws, nil, "mkdir", "byPath/.git/hooks"); code != 0 {
		t.Fatalf("mkdir of the empty hooks directory: %d %s", code, out)
	}
	if code, _ := guarded(t, ctx, ws, nil, "python3", "-c", writer, "byPath/.git/hooks/pre-commit"); code == 0 {
		t.Error("a hook was written")
	}
	if _, err := os.Lstat(filepath.Join(dst, ".git", "hooks", "pre-commit")); !os.IsNotExist(err) {
		t.Errorf("a hook is on disk: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "wt", ".git")); err != nil || !strings.HasPrefix(string(b), "gitdir: "+dst) {
		t.Errorf("the worktree's pointer file changed: %q %v", b, err)
	}
}

// TestGoProfileCgoInSandbox: with a C toolchain installed, a package that
// imports os/user builds with cgo under the docs/agents.md policy (the go
// profile allows go env CC and what it starts); before go@2 it failed
// with "cgo: exec gcc: permission denied".
func TestGoProfileCgoInSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles runtime/cgo; skipped with -short")
	}
	cc, err := exec.Command("go", "env", "CC").Output()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath(strings.TrimSpace(string(cc))); err != nil {
		t.Skipf("no C compiler (%s): cgo is off here", strings.TrimSpace(string(cc)))
	}
	ctx, root := agentScope(t)
	mod := filepath.Join(root, "ws", "cgo")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod":  "module example.com/cgo\n\ngo 1.22\n",
		"main.go": "package main\n\nimport (\n\t\"fmt\"\n\t\"os/user\"\n)\n\nfunc main() {\n\t_, err := user.Current()\n\tfmt.Println(\"lookup done\", err == nil || err != nil)\n}\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out := guarded(t, ctx, mod, []string{"CGO_ENABLED=1"}, "go", "build", "-o", "bin/cgo", ".")
	if code != 0 {
		t.Fatalf("go build with cgo: exit %d\n%s", code, out)
	}
	if code, out := guarded(t, ctx, mod, nil, "go", "env", "CGO_ENABLED"); code != 0 || strings.TrimSpace(out) != "1" {
		t.Fatalf("cgo is not on in the sandbox: %d %q", code, out)
	}
	if code, out := guarded(t, ctx, mod, nil, "./bin/cgo"); code != 0 || !strings.Contains(out, "lookup done") {
		t.Fatalf("the cgo binary: %d %s", code, out)
	}
}
