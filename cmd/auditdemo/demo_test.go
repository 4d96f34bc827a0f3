package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDemoEndToEnd runs the scripted session as `go run ./cmd/auditdemo`
// would, and checks its table, its summary, its log, and that nothing
// outside its temp dirs changed.
func TestDemoEndToEnd(t *testing.T) {
	tmp := t.TempDir()
	home := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("HOME", home)
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")

	var out, errb bytes.Buffer
	if code := run([]string{"--log", logPath}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	got := out.String()
	t.Log("\n" + got)

	rows := []struct{ op, target, decision, rule, caller string }{
		{"fs create", "notes", "allowed", `write root "workspace" (default-policy.toml:6)`, "generated.go"},
		{"fs write", "notes/plan.md", "allowed", "write root", "generated.go:"},
		{"exec", "ls -a", "allowed", `exec rule "ls" (default-policy.toml:20)`, "generated.go:"},
		{"fs delete", "home/notes.txt", "denied", "writes need a write root", "generated.go:"},
		{"exec", "rm -rf home", "denied", `exec rule "deny rm"`, "generated.go:"},
		{"exec", "sh -c ls && rm -rf home", "denied", `exec rule "deny rm"`, "generated.go:"},
		{"net connect", "169.254.169.254:80", "denied", "special-purpose 169.254.169.254/32", "generated.go:"},
		{"net connect", "127.0.0.1:", "allowed", "127.0.0.1/32", "generated.go:"},
		{"fs write", ".git/hooks/pre-commit", "denied", `protected ".git" (default-policy.toml:9)`, "generated.go:"},
		{"fs write", "shared/stolen.txt", "denied", "writes need a write root", "generated.go:"},
		{"exec", "grep -r refactor workspace", "rescued", `BeforeDeny: tool "search"`, "generated.go:"},
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) < len(rows)+3 || !strings.HasPrefix(lines[0], "OPERATION") {
		t.Fatalf("unexpected output:\n%s", got)
	}
	for i, want := range rows {
		line := lines[i+1]
		for _, part := range []string{want.op, want.target, want.decision, want.rule, want.caller} {
			if !strings.Contains(line, part) {
				t.Errorf("row %d %q lacks %q", i+1, line, part)
			}
		}
	}
	if !strings.Contains(got, "11 guarded calls: 4 allowed, 6 denied, 1 rescued by BeforeDeny.") {
		t.Errorf("summary missing or wrong:\n%s", got)
	}
	if !strings.Contains(got, "The fake home is unchanged") {
		t.Errorf("no statement about the fake home:\n%s", got)
	}

	// Nothing outside its temp dirs: the demo's own temp dir is gone, the
	// real (test) home is untouched.
	for _, dir := range []string{tmp, home} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 0 {
			t.Errorf("%s is not empty after the demo: %v", dir, entries)
		}
	}

	// The log has one JSON record per row.
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	outcome := regexp.MustCompile(`^(allowed|denied|rescued)$`)
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line %d: %v", n+1, err)
		}
		if s, _ := rec["outcome"].(string); !outcome.MatchString(s) {
			t.Errorf("log line %d: outcome %v", n+1, rec["outcome"])
		}
	}
	if n != len(rows) {
		t.Errorf("log has %d records, want %d", n, len(rows))
	}
}
