package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func mustPolicy(t testing.TB, spec Spec) *Policy {
	t.Helper()
	p, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// decideOS resolves like a facade would, then decides.
func decideOS(t testing.TB, p *Policy, op Op, name, cwd string) Decision {
	t.Helper()
	follow := op != OpDelete && op != OpMove && op != OpLink
	r, err := Resolve(OSFS{}, name, cwd, follow)
	if err != nil {
		t.Fatalf("resolve %q: %v", name, err)
	}
	return p.CheckPath(op, r, cwd)
}

func TestCheckPathWrites(t *testing.T) {
	root := tempRoot(t)
	work := filepath.Join(root, "allowed")
	evil := filepath.Join(root, "allowed_evil")
	out := filepath.Join(root, "outside")
	for _, d := range []string{work, evil, out} {
		mustMkdir(t, d)
	}
	mustSymlink(t, out, filepath.Join(work, "esc"))
	mustSymlink(t, filepath.Join(work, "sub"), filepath.Join(out, "back"))
	mustSymlink(t, filepath.Join(out, "back"), filepath.Join(work, "chain"))
	mustSymlink(t, filepath.Join(out, "nothing-yet"), filepath.Join(work, "dangle"))
	mustSymlink(t, "sub", filepath.Join(work, "relin"))
	mustMkdir(t, filepath.Join(work, "sub"))
	p := mustPolicy(t, Spec{WriteRoots: []string{work}})

	tests := []struct {
		name string
		op   Op
		path string
		want bool
		tier Tier
		kind RuleKind
	}{
		{"inside", OpWrite, work + "/f.txt", true, TierNone, KindWriteRoot},
		{"new file under missing parents", OpWrite, work + "/a/b/c.txt", true, TierNone, KindWriteRoot},
		{"mkdir inside", OpCreate, work + "/newdir", true, TierNone, KindWriteRoot},
		{"outside", OpWrite, out + "/f", false, TierSoft, KindDefault},
		{"sibling with the root as prefix", OpWrite, evil + "/f", false, TierSoft, KindDefault},
		{"dotdot climbing out", OpWrite, work + "/../outside/f", false, TierSoft, KindDefault},
		{"symlink in the middle pointing out", OpWrite, work + "/esc/f", false, TierSoft, KindDefault},
		{"symlink as last component pointing out", OpWrite, work + "/esc", false, TierSoft, KindDefault},
		{"dangling symlink pointing out", OpWrite, work + "/dangle", false, TierSoft, KindDefault},
		{"chain out and back in", OpWrite, work + "/chain/f", true, TierNone, KindWriteRoot},
		{"relative link inside", OpWrite, work + "/relin/f", true, TierNone, KindWriteRoot},
		{"deleting the link itself is inside", OpDelete, work + "/esc", true, TierNone, KindWriteRoot},
		{"deleting the root itself", OpDelete, work, false, TierHard, KindWriteRoot},
		{"renaming the root itself", OpMove, work, false, TierHard, KindWriteRoot},
		{"chmod the root is fine", OpAttr, work, true, TierNone, KindWriteRoot},
		{"protected .bashrc", OpWrite, work + "/.bashrc", false, TierHard, KindProtected},
		{"protected case variant .BashRC", OpWrite, work + "/.BashRC", false, TierHard, KindProtected},
		{"protected git hook before it exists", OpWrite, work + "/.git/hooks/pre-commit", false, TierHard, KindProtected},
		{"protected git hook case variant", OpWrite, work + "/.GIT/Hooks/pre-commit", false, TierHard, KindProtected},
		{"protected .git/config", OpWrite, work + "/.git/config", false, TierHard, KindProtected},
		{"other .git files stay writable", OpWrite, work + "/.git/index", true, TierNone, KindWriteRoot},
		{"a file named config elsewhere", OpWrite, work + "/config", true, TierNone, KindWriteRoot},
		{"hooks not under .git", OpWrite, work + "/hooks/x", true, TierNone, KindWriteRoot},
		{"protected .env", OpWrite, work + "/.env", false, TierHard, KindProtected},
		{"protected .ENV", OpWrite, work + "/.ENV", false, TierHard, KindProtected},
		{"protected .env.local", OpWrite, work + "/svc/.env.local", false, TierHard, KindProtected},
		{"protected .Env.Production", OpWrite, work + "/.Env.Production", false, TierHard, KindProtected},
		{".environment is not .env", OpWrite, work + "/.environment", true, TierNone, KindWriteRoot},
		{"protected *.pem", OpWrite, work + "/certs/server.PEM", false, TierHard, KindProtected},
		{"protected dir at depth", OpCreate, work + "/a/b/.ssh", false, TierHard, KindProtected},
		{"inside a protected dir", OpWrite, work + "/a/.ssh/authorized_keys", false, TierHard, KindProtected},
		{"mcp config", OpWrite, work + "/.mcp.json", false, TierHard, KindProtected},
		{"reads are allowed outside", OpRead, out + "/f", true, TierNone, KindDefault},
		{"reads of protected names are allowed", OpRead, work + "/.bashrc", true, TierNone, KindDefault},
		{"chdir inside", OpChdir, work + "/sub", true, TierNone, KindWriteRoot},
		{"chdir outside", OpChdir, out, false, TierSoft, KindDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decideOS(t, p, tt.op, tt.path, "")
			if d.Allowed != tt.want || d.Tier != tt.tier || d.Rule == nil || d.Rule.Kind != tt.kind {
				t.Fatalf("%v %s = %+v (rule %v), want allowed=%v tier=%v kind=%v", tt.op, tt.path, d, d.Rule, tt.want, tt.tier, tt.kind)
			}
		})
	}
}

func TestCheckPathSlashRootAndSystemTrees(t *testing.T) {
	p := mustPolicy(t, Spec{WriteRoots: []string{"/"}})
	tests := []struct {
		path string
		op   Op
		want bool
		kind RuleKind
	}{
		{"/var/tmp/x", OpWrite, true, KindWriteRoot},
		{"/x", OpWrite, true, KindWriteRoot},
		{"/proc/sys/kernel/x", OpWrite, false, KindSystem},
		{"/sys/class/x", OpWrite, false, KindSystem},
		{"/proc", OpDelete, false, KindSystem},
		{"/proc/self/status", OpRead, true, KindDefault},
		{"/procfoo/x", OpWrite, true, KindWriteRoot},
		{"/", OpDelete, false, KindWriteRoot},
	}
	for _, tt := range tests {
		d := p.CheckPath(tt.op, tt.path, "")
		if d.Allowed != tt.want || d.Rule.Kind != tt.kind {
			t.Errorf("%v %s = %+v (%v), want allowed=%v kind=%v", tt.op, tt.path, d, d.Rule, tt.want, tt.kind)
		}
	}
}

func TestCheckPathDotRootFollowsCwd(t *testing.T) {
	root := tempRoot(t)
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	mustMkdir(t, a)
	mustMkdir(t, b)
	p := mustPolicy(t, Spec{WriteRoots: []string{"."}})
	if !p.DotRoot() {
		t.Fatal("DotRoot() = false")
	}
	if d := p.CheckPath(OpWrite, a+"/f", a); !d.Allowed || d.Rule.Kind != KindDotRoot {
		t.Fatalf("write in cwd a: %+v", d)
	}
	if d := p.CheckPath(OpWrite, b+"/f", a); d.Allowed {
		t.Fatalf("write in b while cwd is a: allowed")
	}
	if d := p.CheckPath(OpWrite, b+"/f", b); !d.Allowed {
		t.Fatalf("write in b after cwd moved to b: %+v", d)
	}
	if d := p.CheckPath(OpDelete, a, a); d.Allowed || d.Tier != TierHard {
		t.Fatalf("removing the working directory root: %+v", d)
	}
	if d := p.CheckPath(OpChdir, b, a); d.Allowed {
		t.Fatalf("chdir out of the dot root allowed: %+v", d)
	}
	if d := p.CheckPath(OpWrite, a+"/f", ""); d.Allowed {
		t.Fatalf("dot root without a cwd allowed a write: %+v", d)
	}
}

func TestCheckPathReadRules(t *testing.T) {
	root := tempRoot(t)
	work, data, other := filepath.Join(root, "work"), filepath.Join(root, "data"), filepath.Join(root, "other")
	for _, d := range []string{work, data, other} {
		mustMkdir(t, d)
	}
	p := mustPolicy(t, Spec{
		WriteRoots: []string{work},
		ReadRoots:  []string{data},
		ReadDeny:   []string{filepath.Join(data, "secret"), "id_rsa", "*.kdbx"},
	})
	tests := []struct {
		path string
		want bool
		tier Tier
	}{
		{data + "/x", true, TierNone},
		{work + "/x", true, TierNone},
		{other + "/x", false, TierSoft},
		{data + "/secret", false, TierHard},
		{data + "/secret/deeper", false, TierHard},
		{data + "/secretive", true, TierNone},
		{work + "/keys/ID_RSA", false, TierHard},
		{work + "/vault.KDBX", false, TierHard},
	}
	for _, tt := range tests {
		d := p.CheckPath(OpRead, tt.path, "")
		if d.Allowed != tt.want || d.Tier != tt.tier {
			t.Errorf("read %s = %+v (%v), want allowed=%v tier=%v", tt.path, d, d.Rule, tt.want, tt.tier)
		}
	}
}

func TestBuildKeepsBothSpellingsOfALinkedRoot(t *testing.T) {
	root := tempRoot(t)
	real := filepath.Join(root, "real")
	mustMkdir(t, real)
	alias := filepath.Join(root, "alias")
	mustSymlink(t, real, alias)
	p := mustPolicy(t, Spec{WriteRoots: []string{alias}})
	got := strings.Join(p.WriteRoots(), ",")
	if got != alias+","+real {
		t.Fatalf("WriteRoots = %s, want both spellings", got)
	}
	for _, path := range []string{real + "/f", alias + "/f"} {
		if d := p.CheckPath(OpWrite, path, ""); !d.Allowed {
			t.Errorf("write %s denied: %+v", path, d)
		}
	}
}

func TestBuildExpandsHome(t *testing.T) {
	home := tempRoot(t)
	p := mustPolicy(t, Spec{WriteRoots: []string{"~/work"}, Protected: []string{"~/work/keep"}, Home: home})
	if d := p.CheckPath(OpWrite, home+"/work/x", ""); !d.Allowed {
		t.Fatalf("~ not expanded: %+v", d)
	}
	if d := p.CheckPath(OpWrite, home+"/work/keep/x", ""); d.Allowed || d.Rule.Pattern != "~/work/keep" {
		t.Fatalf("~ protected entry not applied: %+v", d)
	}
	t.Setenv("HOME", home)
	p2 := mustPolicy(t, Spec{WriteRoots: []string{"~"}})
	if d := p2.CheckPath(OpWrite, home+"/x", ""); !d.Allowed {
		t.Fatalf("~ from $HOME not expanded: %+v", d)
	}
}

func TestBuildRejectsInvalidEntries(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"relative root", Spec{WriteRoots: []string{"work"}}, "not an absolute path"},
		{"empty root", Spec{WriteRoots: []string{""}}, "empty entry"},
		{"NUL in root", Spec{WriteRoots: []string{"/tmp/a\x00b"}}, "NUL"},
		{"other user's home", Spec{WriteRoots: []string{"~bob/x"}}, "~user"},
		{"dot read root", Spec{ReadRoots: []string{"."}}, "only meaningful as a write root"},
		{"empty pattern", Spec{Protected: []string{""}}, "empty entry"},
		{"empty component", Spec{Protected: []string{"a//b"}}, "empty component"},
		{"dotdot in pattern", Spec{Protected: []string{"../x"}}, `".."`},
		{"star in the middle", Spec{Protected: []string{"a*b"}}, `"*"`},
		{"star in multi-component", Spec{Protected: []string{".git/*"}}, `"*"`},
		{"too deep pattern", Spec{ReadDeny: []string{"a/b/c/d/e"}}, "at most 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.spec)
			if err == nil || p != nil {
				t.Fatalf("New accepted %+v", tt.spec)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
			var ee *EntryError
			if !errors.As(err, &ee) || ee.Source != "code" {
				t.Fatalf("error is not an *EntryError with provenance: %#v", err)
			}
		})
	}
}

func TestBuildReportsEveryInvalidEntry(t *testing.T) {
	_, err := New(Spec{WriteRoots: []string{"rel1", "/ok", "rel2"}, Source: "test.toml"})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{`"rel1"`, `"rel2"`, "test.toml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestProtectedDefaultsExtendOrReplace(t *testing.T) {
	work := tempRoot(t)
	ext := mustPolicy(t, Spec{WriteRoots: []string{work}, Protected: []string{"Makefile"}})
	for _, name := range []string{".bashrc", "makefile"} {
		if d := ext.CheckPath(OpWrite, work+"/"+name, ""); d.Allowed {
			t.Errorf("extended list: %s writable", name)
		}
	}
	rep := mustPolicy(t, Spec{WriteRoots: []string{work}, Protected: []string{"Makefile"}, ReplaceProtected: true})
	if d := rep.CheckPath(OpWrite, work+"/.bashrc", ""); !d.Allowed {
		t.Errorf("replaced list still protects .bashrc: %+v", d)
	}
	if d := rep.CheckPath(OpWrite, work+"/Makefile", ""); d.Allowed {
		t.Errorf("replaced list does not protect Makefile")
	}
	if d := rep.CheckPath(OpWrite, "/proc/x", ""); d.Allowed {
		t.Errorf("replacing the protected list dropped /proc")
	}
}

func TestCheckPathRejectsUnresolvedInput(t *testing.T) {
	p := mustPolicy(t, Spec{WriteRoots: []string{"/"}})
	for _, path := range []string{"", "relative/x"} {
		if d := p.CheckPath(OpWrite, path, ""); d.Allowed || d.Tier != TierInvalid {
			t.Errorf("CheckPath(%q) = %+v", path, d)
		}
	}
}

func TestCheckPathDoesNotAllocate(t *testing.T) {
	work := tempRoot(t)
	p := mustPolicy(t, Spec{WriteRoots: []string{work}, ReadDeny: []string{"*.kdbx"}})
	paths := []string{work + "/src/Main.go", work + "/.git/hooks/x", "/etc/passwd", work + "/.Env.Local"}
	for _, path := range paths {
		allocs := testing.AllocsPerRun(100, func() {
			_ = p.CheckPath(OpWrite, path, work)
			_ = p.CheckPath(OpRead, path, work)
		})
		if allocs != 0 {
			t.Errorf("CheckPath(%q) allocates %.1f times", path, allocs)
		}
	}
}

func TestDecisionStrings(t *testing.T) {
	p := mustPolicy(t, Spec{})
	d := p.CheckPath(OpWrite, "/w/.bashrc", "")
	if got := d.Rule.String(); got != `protected ".bashrc" (builtin)` {
		t.Fatalf("Rule.String() = %s", got)
	}
	if OpWrite.String() != "write" || TierHard.String() != "hard" || Op(99).String() != "op(99)" {
		t.Fatal("String methods")
	}
}

// TestWriteRootMustBeADirectory: a file named as a write root is refused
// when the policy is built, with the directory it probably meant; a root
// that does not exist yet is accepted.
func TestWriteRootMustBeADirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Spec{WriteRoots: []string{file}})
	if err == nil || !strings.Contains(err.Error(), "is a file, not a directory") || !strings.Contains(err.Error(), strconv.Quote(filepath.Dir(file))) {
		t.Fatalf("a file as write root: %v", err)
	}
	if _, err := New(Spec{WriteRoots: []string{filepath.Join(dir, "later")}}); err != nil {
		t.Fatalf("a root that does not exist yet: %v", err)
	}
}

// TestNilPolicy: a nil *Policy is a programmer error that fails closed:
// every decision is an invalid-tier denial naming the mistake, and the
// accessors return empty values, as os.File's methods do on a nil file.
func TestNilPolicy(t *testing.T) {
	var p *Policy
	for name, d := range map[string]Decision{
		"CheckPath":    p.CheckPath(OpWrite, "/tmp/x", ""),
		"CheckExec":    p.CheckExec("/bin/true", []string{"true"}),
		"CheckExecDir": p.CheckExecDir("/tmp", ""),
		"CheckNet":     p.CheckNet(OpConnect, "tcp", "example.com", 443, nil),
	} {
		if d.Allowed || d.Tier != TierInvalid || d.Rule == nil || !strings.Contains(d.Rule.Hint, "nil *Policy") {
			t.Errorf("%s on a nil policy: %+v", name, d)
		}
	}
	if p.WriteRoots() != nil || p.Rules() != nil || p.DotRoot() || p.NetRuleCount() != 0 || p.HintFor(&Rule{Hint: "h"}) != "h" {
		t.Error("accessors of a nil policy returned something")
	}
	if env, _ := p.ExecEnv(ExecEnvInput{Host: []string{"PATH=/bin"}}); env != nil {
		t.Errorf("a nil policy passed variables: %v", env)
	}
}
