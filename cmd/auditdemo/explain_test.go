package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExplain(t *testing.T) {
	work, pol := agentHome(t)
	// Commands run in the host's working directory, which must lie in a
	// write root.
	t.Chdir(work)
	outside := filepath.Join(filepath.Dir(work), "notes.txt")
	if err := os.Symlink("..", filepath.Join(work, "escape")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"write inside the root", []string{"write", filepath.Join(work, "a.txt")}, 0,
			[]string{"resolved:  " + filepath.Join(work, "a.txt"), "decision:  allowed", `write root "~/work"`, "agent.toml:16", "outcome:   the call would go ahead"}},
		{"write relative to the working directory", []string{"write", "b.txt"}, 0,
			[]string{"resolved:  " + filepath.Join(work, "b.txt"), "decision:  allowed"}},
		{"write a protected name", []string{"write", filepath.Join(work, "secrets", "token")}, 1,
			[]string{"decision:  denied (hard)", `protected "secrets" (` + pol + ":17)", "hint:", "would be refused (mode enforce)"}},
		{"write a git hook", []string{"write", filepath.Join(work, ".git", "hooks", "pre-commit")}, 1,
			[]string{"denied (hard)", `protected ".git/hooks" (builtin)`, "class:     git: .git as one object"}},
		{"write a key outside dependency trees", []string{"write", filepath.Join(work, "tls", "server.pem")}, 1,
			[]string{"denied (hard)", `protected "*.pem" (builtin)`, "class:     credential: outside dependency trees"}},
		{"write a key inside a dependency tree", []string{"write", filepath.Join(work, "node_modules", "pkg", "server.pem")}, 0,
			[]string{"decision:  allowed"}},
		{"write a pointer file", []string{"write", filepath.Join(work, "sub", ".git")}, 1,
			[]string{"denied (hard)", `git metadata ".git" (builtin)`, "detail:    a repository's .git is one object"}},
		{"write outside the roots", []string{"write", outside}, 1,
			[]string{"denied (soft)", "writes need a write root", "hint:      add a directory that contains the target to [fs] write_roots", "BeforeDeny callback could rescue"}},
		{"write through a symbolic link out of the root", []string{"write", filepath.Join(work, "escape", "x")}, 1,
			[]string{"resolved:  " + filepath.Join(filepath.Dir(work), "x"), "denied (soft)"}},
		{"exec allowed", []string{"exec", "echo", "hi"}, 0,
			[]string{"exec:      echo hi", "program:   /", "dir:       " + work, "decision:  allowed", `exec rule "echo" (` + pol + ":24)"}},
		{"exec denied by a deny rule", []string{"exec", "rm", "-rf", "build"}, 1,
			[]string{"denied (hard)", `exec rule "deny rm -r" (` + pol + ":37)"}},
		{"exec without a rule", []string{"exec", "cat", "x"}, 1,
			[]string{"denied (soft)", "programs need an exec rule"}},
		{"exec through a shell", []string{"exec", "sh", "-c", "echo a; rm -r build"}, 1,
			[]string{"runs:      [rm -r build]", "denied (hard)", "deny rm -r", "detail:    in a command the call would run"}},
		{"dial loopback", []string{"dial", "127.0.0.1:8080"}, 0,
			[]string{"dial:      tcp 127.0.0.1:8080", "decision:  allowed", "allow connect tcp 127.0.0.1/32 ports 1024-65535", pol + ":43"}},
		{"dial cloud metadata", []string{"dial", "169.254.169.254:80"}, 1,
			[]string{"denied (hard)", "cloud metadata", "builtin: provider documentation"}},
		{"dial another loopback address", []string{"dial", "127.0.0.2:8080"}, 1,
			[]string{"denied (hard)", "special-purpose 127.0.0.0/8 loopback"}},
		{"dial malformed", []string{"dial", "127.0.0.1"}, 1,
			[]string{"denied (invalid)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, append([]string{"explain", "--policy", pol}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d: %v", r.code, tc.code, r)
			}
			wantAll(t, "explain output", r.stdout, tc.want...)
		})
	}
	// Nothing was written or created.
	for _, p := range []string{filepath.Join(work, "a.txt"), filepath.Join(work, "b.txt"), outside, filepath.Join(work, "secrets")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("explain created %s", p)
		}
	}
}

func TestExplainWarnMode(t *testing.T) {
	work, _ := agentHome(t)
	warn, err := filepath.Abs(filepath.Join("testdata", "warn.toml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	r := cli(t, "explain", "--policy", warn, "write", filepath.Join(work, "x"))
	if r.code != 0 {
		t.Fatalf("a denial in warn mode goes ahead: %v", r)
	}
	wantAll(t, "explain output", r.stdout, "denied (soft)", "logged as would-deny (mode warn)")
	r = cli(t, "explain", "--policy", warn, "exec", "echo", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, "denied (soft)") || !strings.Contains(r.stdout, "mode warn") {
		t.Fatalf("exec in warn mode: %v", r)
	}
}

func TestExplainUsage(t *testing.T) {
	_, pol := agentHome(t)
	for _, args := range [][]string{
		{"explain"},
		{"explain", "--policy", pol},
		{"explain", "--policy", pol, "write"},
		{"explain", "--policy", pol, "write", "a", "b"},
		{"explain", "--policy", pol, "delete", "a"},
		{"explain", "--policy", filepath.Join(t.TempDir(), "missing.toml"), "write", "a"},
	} {
		if r := cli(t, args...); r.code != 2 {
			t.Errorf("%q: %v", args, r)
		}
	}
}

// TestExplainRead: reads are explained like writes; an allowed decision
// carries no hint.
func TestExplainRead(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "p.toml")
	if err := os.WriteFile(pol, []byte("[fs]\nwrite_roots = [\""+dir+"\"]\nread_deny = [\"*.pem\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "explain", "--policy", pol, "read", filepath.Join(dir, "notes.txt"))
	if r.code != 0 {
		t.Fatalf("exit %d: %v", r.code, r)
	}
	wantAll(t, "allowed read", r.stdout, "read:      "+filepath.Join(dir, "notes.txt"), "decision:  allowed")
	if strings.Contains(r.stdout, "hint:") {
		t.Errorf("an allowed decision printed a hint:\n%s", r.stdout)
	}
	r = cli(t, "explain", "--policy", pol, "read", filepath.Join(dir, "key.pem"))
	if r.code != 1 {
		t.Fatalf("exit %d: %v", r.code, r)
	}
	wantAll(t, "denied read", r.stdout, "decision:  denied (hard)", `"*.pem"`)
}

// TestHelpListsCommands: --help prints every subcommand, exit 0.
func TestHelpListsCommands(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		r := cli(t, arg)
		if r.code != 0 {
			t.Fatalf("%s: exit %d", arg, r.code)
		}
		wantAll(t, arg, r.stdout, "check --policy", "explain --policy", "run --policy", "suggest --log", "proxy --policy", "gocode")
	}
}

// TestLogAppends: --log adds to the file, so a warn-mode trial over several
// runs keeps every would-deny.
func TestLogAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for i := range 2 {
		logger, closeLog, err := openLog(path)
		if err != nil {
			t.Fatal(err)
		}
		logger.Info("run", "n", i)
		if err := closeLog(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("%d lines after two runs, want 2:\n%s", n, b)
	}
}
