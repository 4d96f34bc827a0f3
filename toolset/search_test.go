package toolset_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/toolset"
)

func searchFixture(t *testing.T) *fixture {
	f := newFixture(t)
	f.file("main.go", "package main\n\n// TODO: flags\nfunc main() {}\n")
	f.file("cmd/tool/main.go", "package main\n\nfunc main() { todo() }\n")
	f.file("cmd/tool/main_test.go", "package main\n")
	f.file("internal/deep/er/x.go", "package er\n// TODO(er): x\n")
	f.file("README.md", "# todo list\n")
	f.file(".git/HEAD", "ref: refs/heads/main TODO\n")
	f.file("api.secret", "TODO token=sk-live-123\n")
	f.file("secrets/prod.txt", "TODO password=hunter2\n")
	f.file("logo.png", "\x89PNG\x00TODO")
	return f
}

func TestGlob(t *testing.T) {
	f := searchFixture(t)
	cases := []struct {
		input map[string]any
		want  string
	}{
		{map[string]any{"pattern": "**/*.go"}, "cmd/tool/main.go\ncmd/tool/main_test.go\ninternal/deep/er/x.go\nmain.go\n"},
		{map[string]any{"pattern": "*.go"}, "main.go\n"},
		{map[string]any{"pattern": "cmd/*/main*.go"}, "cmd/tool/main.go\ncmd/tool/main_test.go\n"},
		{map[string]any{"pattern": "**/x.go", "path": "internal"}, "internal/deep/er/x.go\n"},
		{map[string]any{"pattern": ".git/*"}, ".git/HEAD\n"},
		{map[string]any{"pattern": "*.md"}, "README.md\n"},
		{map[string]any{"pattern": "**/*.secret"}, "no paths under . match \"**/*.secret\"\n\nskipped, read denied by policy (2): api.secret, secrets\n"},
		{map[string]any{"pattern": "*.rs"}, "no paths under . match \"*.rs\"\n"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.input), func(t *testing.T) {
			got := f.ok(t, "g1", "glob", tc.input)
			if got != tc.want && !strings.HasPrefix(got, tc.want+"\nskipped") {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
	res, err := f.call("g2", "glob", map[string]any{"pattern": "/etc/*"})
	mustFail(t, res, err, toolset.KindInput, "is absolute")
	res, err = f.call("g3", "glob", map[string]any{"pattern": "*", "path": "main.go"})
	mustFail(t, res, err, toolset.KindInput, "main.go is a file")
}

func TestGrep(t *testing.T) {
	f := searchFixture(t)

	t.Run("read-deny honoured", func(t *testing.T) {
		got := f.ok(t, "g1", "grep", map[string]any{"pattern": "TODO"})
		want := "internal/deep/er/x.go:2: // TODO(er): x\nmain.go:3: // TODO: flags\n(1 binary files skipped)\n\nskipped, read denied by policy (2): api.secret, secrets\n"
		if got != want {
			t.Errorf("got:\n%s\nwant:\n%s", got, want)
		}
		for _, leak := range []string{"sk-live", "hunter2", "refs/heads"} {
			if strings.Contains(got, leak) {
				t.Errorf("grep printed %q", leak)
			}
		}
	})
	cases := []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"ignore case", map[string]any{"pattern": "todo", "ignore_case": true, "path": "cmd"},
			"cmd/tool/main.go:3: func main() { todo() }\n"},
		{"glob on names", map[string]any{"pattern": "^package", "glob": "*_test.go"},
			// A denied entry's type is not read: either may be a directory
			// holding a match.
			"cmd/tool/main_test.go:1: package main\n\nskipped, read denied by policy (2): api.secret, secrets\n"},
		{"glob on paths", map[string]any{"pattern": "^package", "glob": "internal/**"},
			"internal/deep/er/x.go:1: package er\n"},
		{"one file", map[string]any{"pattern": "func", "path": "main.go"},
			"main.go:4: func main() {}\n"},
		{"max results", map[string]any{"pattern": "^package", "max_results": 2, "path": "cmd"},
			"cmd/tool/main.go:1: package main\ncmd/tool/main_test.go:1: package main\n"},
		{"no match", map[string]any{"pattern": "nothing here", "path": "cmd"},
			"no matches for \"nothing here\" in cmd (2 files searched)\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := f.ok(t, "g2", "grep", tc.input)
			if got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
	got := f.ok(t, "g3", "grep", map[string]any{"pattern": "package", "max_results": 1, "path": "cmd"})
	if !strings.Contains(got, "[stopped at 1 matching lines") {
		t.Errorf("a full grep does not say it stopped:\n%s", got)
	}
	res, err := f.call("g4", "grep", map[string]any{"pattern": "x", "path": "api.secret"})
	mustFail(t, res, err, toolset.KindDenied, "fs read denied", "api.secret")
	res, err = f.call("g5", "grep", map[string]any{"pattern": "x", "path": "missing"})
	mustFail(t, res, err, toolset.KindInput, "missing does not exist")
}
