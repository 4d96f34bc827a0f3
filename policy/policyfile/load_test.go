package policyfile

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"

	"github.com/pelletier/go-toml/v2"
)

// lineOf returns the 1-based line of the first line of file containing s.
func lineOf(t *testing.T, file, s string) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), s) {
			return n
		}
	}
	t.Fatalf("%s: no line contains %q", file, s)
	return 0
}

func TestLoadExample(t *testing.T) {
	home := t.TempDir()
	const path = "testdata/example.toml"
	f, err := LoadFile(path, WithHome(home))
	if err != nil {
		t.Fatal(err)
	}
	if want := (policy.Modes{FS: policy.ModeEnforce, Exec: policy.ModeEnforce, Net: policy.ModeWarn}); f.Modes != want {
		t.Errorf("modes = %+v, want %+v", f.Modes, want)
	}
	if len(f.Paths) != 1 || f.Paths[0] != path {
		t.Errorf("paths = %v", f.Paths)
	}
	p := f.Policy
	if !p.DotRoot() {
		t.Error(`"." root not loaded`)
	}
	src := func(s string) string { return path + ":" + strconv.Itoa(lineOf(t, path, s)) }

	tests := []struct {
		op      policy.Op
		path    string
		allowed bool
		source  string
	}{
		{policy.OpWrite, "/srv/agent/work/out.txt", true, src(`"/srv/agent/work"`)},
		{policy.OpWrite, home + "/.cache/agent/x", true, src(`"~/.cache/agent"`)},
		{policy.OpWrite, "/srv/agent/work/secrets/key", false, src(`"secrets"`)},
		{policy.OpWrite, "/srv/agent/work/Makefile", false, src(`"Makefile"`)},
		{policy.OpWrite, "/srv/agent/work/.bashrc", false, "builtin"},
		{policy.OpWrite, "/srv/other/x", false, "builtin"},
		{policy.OpRead, home + "/.ssh/id_rsa", false, src(`"~/.ssh"`)},
		{policy.OpRead, "/srv/agent/work/server.pem", false, src(`"*.pem"`)},
		{policy.OpRead, "/srv/agent/work/.env", false, src(`".env"`)},
		{policy.OpRead, "/srv/agent/work/main.go", true, "builtin"},
	}
	for _, tt := range tests {
		d := p.CheckPath(tt.op, tt.path, "/nonexistent-cwd")
		if d.Allowed != tt.allowed || d.Rule.Source != tt.source {
			t.Errorf("%v %s: allowed=%v by %v, want allowed=%v by source %s", tt.op, tt.path, d.Allowed, d.Rule, tt.allowed, tt.source)
		}
	}
}

func TestParseForms(t *testing.T) {
	// Dotted keys and inline tables are ordinary TOML and load the same.
	for _, doc := range []string{
		"fs.write_roots = [\"/w\"]\nfs.protected = [\"p\"]\n",
		"fs = { write_roots = [\"/w\"], protected = [\"p\"] }\n",
		"[fs]\nwrite_roots = [\"/w\"]\n[fs.x]\n",
	} {
		f, err := Parse("p.toml", []byte(doc))
		if strings.Contains(doc, "[fs.x]") {
			assertProblem(t, err, "fs.x", 3, "unknown key", "")
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if d := f.Policy.CheckPath(policy.OpWrite, "/w/p/x", ""); d.Allowed || d.Rule.Source != "p.toml:"+strconv.Itoa(strings.Count(doc[:strings.Index(doc, `"p"`)], "\n")+1) {
			t.Errorf("%q: protected decision %+v", doc, d)
		}
		if d := f.Policy.CheckPath(policy.OpWrite, "/w/a", ""); !d.Allowed || d.Rule.Source != "p.toml:1" {
			t.Errorf("%q: write decision %+v", doc, d)
		}
	}
}

// assertProblem checks that err is a *LoadError holding a problem at line
// for key whose message contains msg and whose suggestion is suggest.
func assertProblem(t *testing.T, err error, key string, line int, msg, suggest string) *FileError {
	t.Helper()
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("error %v (%T) is not a *LoadError", err, err)
	}
	for _, p := range le.Problems {
		if p.Key == key && p.Line == line && strings.Contains(p.Msg, msg) && p.Suggest == suggest {
			return p
		}
	}
	t.Fatalf("no problem {key %q, line %d, msg ~%q, suggest %q} in:\n%v", key, line, msg, suggest, err)
	return nil
}

// parseErrorCase is a document Parse must refuse with a problem at line for
// key whose message contains msg and whose suggestion is suggest. A case
// with neither key nor msg (a TOML syntax error) needs only its first
// problem at line.
type parseErrorCase struct {
	name    string
	doc     string
	key     string
	line    int
	msg     string
	suggest string
}

// checkParseErrors runs each case as a subtest: Parse, with "~" in a fresh
// directory, loads nothing and reports the problem, its message starting
// with its location.
func checkParseErrors(t *testing.T, tests []parseErrorCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("p.toml", []byte(tt.doc), WithHome(t.TempDir()))
			if f != nil {
				t.Fatalf("loaded a policy from an invalid file")
			}
			if tt.key == "" && tt.msg == "" {
				var le *LoadError
				if !errors.As(err, &le) || le.Problems[0].Line != tt.line {
					t.Fatalf("err = %v, want a problem at line %d", err, tt.line)
				}
				return
			}
			p := assertProblem(t, err, tt.key, tt.line, tt.msg, tt.suggest)
			if !strings.HasPrefix(p.Error(), "p.toml:"+strconv.Itoa(tt.line)+":") {
				t.Errorf("error %q does not start with its location", p.Error())
			}
			t.Log(err)
		})
	}
}

func TestParseErrors(t *testing.T) {
	checkParseErrors(t, []parseErrorCase{
		{"typo in key", "[fs]\nwrite_root = [\"/w\"]\n", "fs.write_root", 2, "unknown key", "write_roots"},
		{"case and dashes", "[fs]\nRead-Deny = []\n", "fs.Read-Deny", 2, "unknown key", "read_deny"},
		{"key in the wrong table", "write_roots = [\"/w\"]\n", "write_roots", 1, "belongs in [fs]", "fs.write_roots"},
		{"typo in table", "\n[fss]\nwrite_roots = []\n", "fss", 2, "unknown key", "fs"},
		{"no suggestion", "[fs]\nxyzzy = 1\n", "fs.xyzzy", 2, "unknown key", ""},
		{"limits belong to exec", "[limits]\nmax_files = 3\n", "limits", 1, "belongs in [exec]", "exec.limits"},
		{"string for array", "[fs]\n\nwrite_roots = \"/w\"\n", "fs.write_roots", 3, "expected an array of strings, got a string", ""},
		{"element type", "[fs]\nwrite_roots = [\n  \"/w\",\n  42,\n]\n", "fs.write_roots[1]", 4, "expected a string, got an integer", ""},
		{"bool type", "[fs]\nreplace_protected = \"yes\"\n", "fs.replace_protected", 2, "expected a boolean", ""},
		{"table type", "fs = 3\n", "fs", 1, "expected a table, got an integer", ""},
		{"mode typo", "[modes]\nnet = \"enfroce\"\n", "modes.net", 2, `unknown mode "enfroce"`, "enforce"},
		{"mode type", "[modes]\nfs = true\n", "modes.fs", 2, "expected a string", ""},
		{"relative root", "[fs]\nwrite_roots = [\n  \"/ok\",\n  \"work/dir\",\n]\n", "fs.write_roots", 4, "not an absolute path", ""},
		{"home of another user", "[fs]\nread_deny = [\"~bob/x\"]\n", "fs.read_deny", 2, `not "~user"`, ""},
		{"bad pattern", "[fs]\nprotected = [\"a\", \"x*y\"]\n", "fs.protected", 2, `"*" may only open or close`, ""},
		{"dot read root", "[fs]\nread_roots = [\".\"]\n", "fs.read_roots", 2, `only meaningful as a write root`, ""},
		{"empty entry", "[fs]\nprotected = [\"\"]\n", "fs.protected", 2, "empty entry", ""},
		{"duplicate key", "[fs]\nwrite_roots = []\nwrite_roots = []\n", "write_roots", 3, "already defined", ""},
		{"syntax", "[fs\n", "", 1, "", ""},
		{"exec allow of strings", "[exec]\nallow = [\"git\"]\n", "exec.allow[0]", 2, "expected a table, got a string", ""},
		{"net allow of strings", "[net]\n\n\nallow = [\"example.com:443\"]\n", "net.allow[0]", 4, "expected a table, got a string", ""},
	})
}

func TestParseEmptyExecNet(t *testing.T) {
	// Empty [exec] and [net] tables, and empty rule lists, say nothing and
	// are accepted: with no rules every program and connection is denied.
	for _, doc := range []string{"[exec]\n[net]\n", "[exec]\nallow = []\n[net]\ndeny = []\n"} {
		f, err := Parse("p.toml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if d := f.Policy.CheckExec("/bin/true", []string{"true"}); d.Allowed {
			t.Errorf("%q: an empty exec table allowed a program", doc)
		}
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	doc := "[fs]\nwrite_root = []\nprotected = [1]\n[modes]\nfs = \"of\"\n"
	_, err := Parse("p.toml", []byte(doc))
	var le *LoadError
	if !errors.As(err, &le) || len(le.Problems) != 3 {
		t.Fatalf("want 3 problems, got %v", err)
	}
	if !strings.Contains(err.Error(), "3 problems") {
		t.Errorf("message %q", err)
	}
	// Value problems are found together too, once the schema is right.
	_, err = Parse("p.toml", []byte("[fs]\nwrite_roots = [\"a\", \"b\"]\n"))
	if !errors.As(err, &le) || len(le.Problems) != 2 {
		t.Fatalf("want 2 problems, got %v", err)
	}
	// And both kinds in one pass, in file order: an unknown key does not
	// hide a bad value.
	_, err = Parse("p.toml", []byte("[fs]\nwrite_roots = [\"relative\"]\nwrte_roots = []\n[[net.allow]]\nhost = \"x.example\"\nports = [\"99999\"]\n"))
	if !errors.As(err, &le) || len(le.Problems) != 3 {
		t.Fatalf("want 3 problems (a value, a key, a value), got %v", err)
	}
	for i, want := range []string{"not an absolute path", "unknown key", "port"} {
		if !strings.Contains(le.Problems[i].Error(), want) {
			t.Errorf("problem %d: %v, want %q", i, le.Problems[i], want)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "none.toml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range []policy.Mode{policy.ModeEnforce, policy.ModeWarn, policy.ModeOff} {
		got, err := policy.ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := policy.ParseMode(""); err == nil {
		t.Error(`ParseMode("") succeeded`)
	}
}

// FuzzParse: no input makes the loader panic, and whatever loads is a
// usable policy whose every rule has a source.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("testdata/example.toml"); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		"[fs]\nwrite_roots = [\"/w\", \".\"]\n", "fs.protected = [\"a\"]\n", "fs = { read_deny = [\"~/x\"] }\n",
		"[[fs]]\n", "[fs.a.b]\n", "a.b.c = 1\n[a]\n", "[modes]\nfs = \"off\"\n", "x = [[1], {a = 1}]\n",
		"[[exec.allow]]\nprogram = \"/bin/sh\"\nargs = [\"-c\", \"*\"]\nmatch = [[\"-c\", \"x\"]]\n[exec.limits]\nopen_files = 3\n",
		"[[net.allow]]\nhost = \"*.a.example\"\nports = [1, \"2-3\"]\nmatch = [\"b.a.example:2\"]\n", "[net]\ndeny = [{cidr = \"::1\", listen = true}]\n",
	} {
		f.Add([]byte(s))
	}
	home := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("f.toml", data, WithHome(home))
		if err != nil {
			return
		}
		for _, r := range file.Policy.Rules() {
			if r.Source == "" {
				t.Fatalf("rule %v has no source", r)
			}
		}
		file.Policy.CheckPath(policy.OpWrite, "/w/x", "/w")
		file.Policy.CheckExec("/bin/sh", []string{"sh", "-c", "x"})
		file.Policy.CheckNet(policy.OpConnect, "tcp", "b.a.example", 2, nil)
	})
}

func BenchmarkParseExample(b *testing.B) {
	data, err := os.ReadFile("testdata/example.toml")
	if err != nil {
		b.Fatal(err)
	}
	home := b.TempDir()
	b.Run("toml.Unmarshal", func(b *testing.B) {
		// The floor: decoding the same document into a map, unchecked.
		for b.Loop() {
			var m map[string]any
			if err := toml.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		// The file layer alone: TOML, the positioned tree, the schema.
		for b.Loop() {
			if _, errs := decodeFile("example.toml", data); len(errs) > 0 {
				b.Fatal(errs[0])
			}
		}
	})
	b.Run("New", func(b *testing.B) {
		// The same rules built in code: what a file adds is Parse - New.
		fs, errs := decodeFile("example.toml", data)
		if len(errs) > 0 {
			b.Fatal(errs[0])
		}
		spec := policy.Spec{Home: home, WriteRoots: []string{"/srv/agent/work", "~/.cache/agent", "."},
			ReadDeny: []string{"~/.ssh", "~/.aws", ".env", "*.pem"}, Protected: []string{"secrets", "Makefile"},
			Exec: fs.exec.spec, Net: fs.net.spec}
		for b.Loop() {
			if _, err := policy.New(spec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parse", func(b *testing.B) {
		for b.Loop() {
			if _, err := Parse("example.toml", data, WithHome(home)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestHintsInFileTerms: a policy loaded from a file says how to allow a
// call in TOML tables and keys; one built in code keeps the Go API's terms.
func TestHintsInFileTerms(t *testing.T) {
	dir := t.TempDir()
	f, err := Parse("p.toml", []byte("[fs]\nwrite_roots = [\""+dir+"\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	code, err := policy.New(policy.Spec{WriteRoots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		d          func(*policy.Policy) policy.Decision
		file, code string
	}{
		{"write outside", func(p *policy.Policy) policy.Decision { return p.CheckPath(policy.OpWrite, "/elsewhere/x", "") }, "[fs] write_roots", "add a write root"},
		{"protected", func(p *policy.Policy) policy.Decision { return p.CheckPath(policy.OpWrite, dir+"/.bashrc", "") }, "[fs] replace_protected", "Builder.ReplaceProtected"},
		{"dial", func(p *policy.Policy) policy.Decision {
			return p.CheckNet(policy.OpConnect, "tcp", "example.com", 443, nil)
		}, "[[net.allow]]", "add a net rule (Host"},
	} {
		df, dc := tc.d(f.Policy), tc.d(code)
		if df.Allowed || dc.Allowed {
			t.Fatalf("%s: allowed", tc.name)
		}
		if h := f.Policy.HintFor(df.Rule); !strings.Contains(h, tc.file) {
			t.Errorf("%s, file policy: hint %q, want %q in it", tc.name, h, tc.file)
		}
		if h := code.HintFor(dc.Rule); !strings.Contains(h, tc.code) {
			t.Errorf("%s, code policy: hint %q, want %q in it", tc.name, h, tc.code)
		}
	}
}
