package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
)

// TestMergePolicy writes one set of additions into policy files laid out
// in every way the format allows for the keys it touches, and loads each
// result: the new roots are in force, every line of the file is kept, and
// layouts it cannot extend safely are refused with the reason.
func TestMergePolicy(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old, added, read := filepath.Join(dir, "old"), filepath.Join(dir, "added"), filepath.Join(dir, "read")
	for _, d := range []string{old, added, read} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	q := tomlString
	s := newSuggester(nil)
	s.writeRoots = []entry{{path: added, events: []string{"fs write " + added + "/x"}}}
	s.readRoots = []entry{{path: read, events: []string{"fs read " + read}}}
	s.execAllow = []execSuggestion{{program: "/bin/true", args: []string{"-v"}, events: []string{"exec true -v"}}}
	s.netAllow = []netSuggestion{{host: "example.com", port: "443", events: []string{"net connect example.com:443"}}}

	for _, tc := range []struct {
		name, base string
		keepModes  bool
		wantErr    string // "" when the merge must load
		wantModes  policy.Modes
	}{
		{name: "one-line list", base: "[fs]\nwrite_roots = [" + q(old) + "]\n"},
		{name: "one-line list with a trailing comma", base: "[fs]\nwrite_roots = [" + q(old) + ",]\n"},
		{name: "multi-line list with comments", base: "[fs]\nwrite_roots = [\n  " + q(old) + " # the old one, [not] a list\n  # more soon\n]\nprotected = [\"secrets\"]\n"},
		{name: "empty lists", base: "[fs]\nwrite_roots = []\nread_roots = [\n]\n"},
		{name: "no write_roots in [fs]", base: "# head\n[fs] # the fs table\nprotected = [\"secrets\"]\n"},
		{name: "no [fs] table", base: "[exec]\npath = [\"/usr/bin\", \"/bin\"]\n"},
		{name: "no newline at the end", base: "[fs]\nwrite_roots = [" + q(old) + "]"},
		{name: "tables already there", base: "[[exec.allow]]\nprogram = \"/bin/false\"\n\n[[net.allow]]\nhost = \"example.org\"\nports = [443]\n"},
		{name: "empty file", base: ""},
		{name: "modes set to enforce", base: "[modes]\nfs = \"warn\" # trial\nexec = 'warn'\nnet = \"off\"\n",
			wantModes: policy.Modes{FS: policy.ModeEnforce, Exec: policy.ModeEnforce, Net: policy.ModeOff}},
		{name: "modes kept", base: "[modes]\nfs = \"warn\"\n", keepModes: true, wantModes: policy.Modes{FS: policy.ModeWarn}},
		{name: "dotted fs keys", base: "fs.protected = [\"secrets\"]\n", wantErr: "dotted keys or as an inline table"},
		{name: "inline fs table", base: "fs = { protected = [\"secrets\"] }\n", wantErr: "dotted keys or as an inline table"},
		{name: "inline exec.allow", base: "[exec]\nallow = [{ program = \"/bin/false\" }]\n", wantErr: "exec.allow is written as an inline array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := policyfile.Parse("base.toml", []byte(tc.base)); err != nil {
				t.Fatalf("the base does not load: %v", err)
			}
			merged, err := s.mergePolicy([]byte(tc.base), tc.keepModes, "audit.jsonl")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q\n%s", err, tc.wantErr, merged)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f, err := policyfile.Parse("merged.toml", merged)
			if err != nil {
				t.Fatalf("the merge does not load: %v\n%s", err, merged)
			}
			p := f.Policy
			if d := p.CheckPath(policy.OpWrite, filepath.Join(added, "x"), ""); !d.Allowed {
				t.Errorf("write in the added root: %v (%v)\n%s", d, d.Rule, merged)
			}
			if strings.Contains(tc.base, q(old)) && !p.CheckPath(policy.OpWrite, filepath.Join(old, "x"), "").Allowed {
				t.Errorf("the old root is gone:\n%s", merged)
			}
			if !slices.Contains(p.ReadRoots(), read) {
				t.Errorf("read roots %v lack %s", p.ReadRoots(), read)
			}
			if d := p.CheckExec("/bin/true", []string{"true", "-v"}); !d.Allowed {
				if real, _ := filepath.EvalSymlinks("/bin/true"); real == "/bin/true" {
					t.Errorf("exec true -v: %v (%v)", d, d.Rule)
				}
			}
			if d := p.CheckNet(policy.OpConnect, "tcp", "example.com", 443, nil); !d.Allowed {
				t.Errorf("connect example.com:443: %v (%v)", d, d.Rule)
			}
			if f.Modes != tc.wantModes {
				t.Errorf("modes %+v, want %+v", f.Modes, tc.wantModes)
			}
			// Every line of the file is still there, in order, but for
			// the modes that changed (commas may be added to lists, and a
			// list's closing bracket may move to a line of its own).
			rest := strings.ReplaceAll(string(merged), ",", "")
			for _, line := range strings.SplitAfter(tc.base, "\n") {
				line = strings.TrimSuffix(line, "\n")
				if strings.Contains(line, "warn") && !tc.keepModes {
					continue
				}
				i := strings.Index(rest, strings.TrimRight(strings.ReplaceAll(line, ",", ""), "]"))
				if i < 0 {
					t.Fatalf("line %q of the file is lost or out of order:\n%s", line, merged)
				}
				rest = rest[i:]
			}
		})
	}
}

// TestUnifiedDiff checks the diff against patch(1): applied to the old
// text it gives the new one.
func TestUnifiedDiff(t *testing.T) {
	lines := func(n int, f func(int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i))
		}
		return b.String()
	}
	long := lines(40, func(i int) string { return "line " + string(rune('a'+i%26)) + "\n" })
	for _, tc := range []struct{ name, a, b string }{
		{"equal", "a\nb\n", "a\nb\n"},
		{"insert in the middle", "a\nb\nc\n", "a\nb\nx\nc\n"},
		{"append", "a\n", "a\nb\nc\n"},
		{"from empty", "", "a\n"},
		{"replace one line", "[modes]\nfs = \"warn\"\n", "[modes]\nfs = \"enforce\"\n"},
		{"two hunks", long, strings.Replace(strings.Replace(long, "line b\n", "line B\n", 1), "line y\n", "line y\nnew\n", 1)},
		{"no newline at the end", "a\nb", "a\nb\nc\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := unifiedDiff("old.toml", "new.toml", []byte(tc.a), []byte(tc.b))
			if tc.a == tc.b {
				if d != "" {
					t.Fatalf("a diff of equal texts:\n%s", d)
				}
				return
			}
			if !strings.HasPrefix(d, "--- old.toml\n+++ new.toml\n@@ -") {
				t.Fatalf("no unified diff header:\n%s", d)
			}
			if tc.name == "two hunks" && strings.Count(d, "\n@@ ") != 2 {
				t.Errorf("want two hunks:\n%s", d)
			}
			patchBin, err := exec.LookPath("patch")
			if err != nil {
				t.Skip("patch(1) is not installed: the diff is not applied")
			}
			dir := t.TempDir()
			file := filepath.Join(dir, "old.toml")
			if err := os.WriteFile(file, []byte(tc.a), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, patchBin, "-s", "--no-backup-if-mismatch", file)
			cmd.Stdin = strings.NewReader(d)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("patch: %v: %s\n%s", err, out, d)
			}
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.b {
				t.Errorf("patched:\n%q\nwant:\n%q\ndiff:\n%s", got, tc.b, d)
			}
		})
	}
}
