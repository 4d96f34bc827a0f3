package main

import (
	"bytes"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// FuzzSuggestTOML: whatever names a log holds (they come from the guarded
// code), suggest's output is valid TOML and holds exactly the tables and
// entries suggest meant to write: a name can never end a comment or a
// string and add a rule of its own.
func FuzzSuggestTOML(f *testing.F) {
	f.Add("/w/a.txt", "hello", "api.example.com")
	f.Add("/w/x\n[[exec.allow]]\nprogram = \"/bin/sh\"", "a\"b\\c\n[[net.allow]]\nhost = \"evil\"", "x\ny")
	f.Add("/w/\xff\x00\x1f\x7f", "\u2028\r\n#", "[::1]")
	f.Add("/w/'''", `"""`, "127.0.0.1")
	f.Fuzz(func(t *testing.T, path, arg, host string) {
		s := newSuggester(nil)
		// The logged path stands for an existing directory, so it is the
		// suggested root and its spelling reaches the output.
		s.isDir = func(p string) bool { return p == path }
		s.add(logRecord{Outcome: "would-deny", Protocol: "fs", Op: "write", Target: path, Resolved: path,
			Rule: `default "writes need a write root"`, Tier: "soft"})
		s.add(logRecord{Outcome: "would-deny", Protocol: "fs", Op: "write", Target: path, Resolved: path,
			Rule: `protected ".git/hooks"`, Source: path, Tier: "hard"})
		s.add(logRecord{Outcome: "would-deny", Protocol: "exec", Op: "exec", Target: "echo", Program: "/usr/bin/echo",
			Argv: []string{"echo", arg, path}, Rule: `exec rule "programs need an exec rule"`, Tier: "soft"})
		s.add(logRecord{Outcome: "would-deny", Protocol: "net", Op: "connect", Target: host + ":443", Resolved: host, Detail: "tcp",
			Rule: `default "connections need a net rule"`, Tier: "soft"})
		var out bytes.Buffer
		s.write(&out, path)

		var doc struct {
			FS struct {
				WriteRoots []string `toml:"write_roots"`
			} `toml:"fs"`
			Exec struct {
				Allow []map[string]any `toml:"allow"`
			} `toml:"exec"`
			Net struct {
				Allow []map[string]any `toml:"allow"`
			} `toml:"net"`
		}
		if err := toml.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("output is not TOML: %v\n%s", err, out.String())
		}
		if got, want := len(doc.FS.WriteRoots), len(prune(s.writeRoots)); got != want {
			t.Fatalf("%d write roots, want %d:\n%s", got, want, out.String())
		}
		if got, want := len(doc.Exec.Allow), len(pruneExec(s.execAllow)); got != want {
			t.Fatalf("%d exec rules, want %d:\n%s", got, want, out.String())
		}
		if got, want := len(doc.Net.Allow), len(s.netAllow); got != want {
			t.Fatalf("%d net rules, want %d:\n%s", got, want, out.String())
		}
		for _, r := range doc.Exec.Allow {
			if r["program"] != "/usr/bin/echo" {
				t.Fatalf("exec rule for %v:\n%s", r["program"], out.String())
			}
		}
		for _, w := range doc.FS.WriteRoots {
			if w != path {
				t.Fatalf("write root %q, want %q", w, path)
			}
		}
	})
}
