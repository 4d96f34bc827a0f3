package policyfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

type layerEnv struct {
	dir, home, work, op, ws string
}

func newLayerEnv(t *testing.T, operator string) layerEnv {
	t.Helper()
	dir := t.TempDir()
	e := layerEnv{dir: dir, home: filepath.Join(dir, "home"), work: filepath.Join(dir, "work"),
		op: filepath.Join(dir, "operator.toml"), ws: filepath.Join(dir, "workspace.toml")}
	for _, d := range []string{e.home, e.work + "/proj"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeInPlace(t, e.op, e.expand(operator))
	return e
}

// expand replaces $WORK, $DIR and $HOME in a policy text.
func (e layerEnv) expand(s string) string {
	return strings.NewReplacer("$WORK", e.work, "$DIR", e.dir).Replace(s)
}

func (e layerEnv) load(t *testing.T, workspace string) (*File, error) {
	t.Helper()
	writeInPlace(t, e.ws, e.expand(workspace))
	return LoadLayers(e.op, e.ws, WithHome(e.home))
}

// rejects checks that load refuses workspace over the operator layer, for a
// problem in the workspace file at line for key whose message contains msg.
func (e layerEnv) rejects(t *testing.T, workspace string, line int, key, msg string) {
	t.Helper()
	f, err := e.load(t, workspace)
	if f != nil {
		t.Fatal("a widening workspace layer was loaded")
	}
	p := assertProblem(t, err, key, line, msg, "")
	if p.File != e.ws {
		t.Errorf("problem reported in %s, want the workspace file", p.File)
	}
	t.Log(err)
}

// watchOpts are the options that make Watch, given the operator file, lay
// the workspace file over it the way load does.
func (e layerEnv) watchOpts() []WatchOption {
	return []WatchOption{WithWorkspace(e.ws), WithLoadOptions(WithHome(e.home))}
}

const operatorLayer = `# operator layer
[modes]
net = "warn"

[fs]
write_roots = ["$WORK", "."]
read_deny = ["~/.ssh"]
protected = ["secrets"]
`

func TestLayersNarrow(t *testing.T) {
	e := newLayerEnv(t, operatorLayer)
	f, err := e.load(t, `# workspace layer
[modes]
net = "enforce"
fs = "enforce"

[fs]
write_roots = ["$WORK/proj"]
read_deny = []
protected = ["build"]
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Paths) != 2 || f.Paths[0] != e.op || f.Paths[1] != e.ws {
		t.Errorf("paths = %v", f.Paths)
	}
	if want := (policy.Modes{FS: policy.ModeEnforce, Net: policy.ModeEnforce}); f.Modes != want {
		t.Errorf("modes = %+v, want %+v", f.Modes, want)
	}
	p := f.Policy
	if p.DotRoot() {
		t.Error(`"." kept although the workspace layer left it out`)
	}
	tests := []struct {
		op      policy.Op
		path    string
		allowed bool
		source  string
	}{
		{policy.OpWrite, e.work + "/proj/main.go", true, e.ws + ":7"},
		{policy.OpWrite, e.work + "/other/x", false, "builtin"},
		{policy.OpWrite, e.work + "/proj/secrets/x", false, e.op + ":8"}, // the operator's deny stays
		{policy.OpWrite, e.work + "/proj/build/out", false, e.ws + ":9"},
		{policy.OpWrite, e.work + "/proj/.bashrc", false, "builtin"},
		{policy.OpRead, e.home + "/.ssh/id_rsa", false, e.op + ":7"}, // read_deny = [] removes nothing
	}
	for _, tt := range tests {
		d := p.CheckPath(tt.op, tt.path, e.work+"/proj")
		if d.Allowed != tt.allowed || d.Rule.Source != tt.source {
			t.Errorf("%v %s: allowed=%v by %v, want allowed=%v by %s", tt.op, tt.path, d.Allowed, d.Rule, tt.allowed, tt.source)
		}
	}
}

func TestLayersKeepOperatorWhenSilent(t *testing.T) {
	e := newLayerEnv(t, operatorLayer+"read_roots = [\"$DIR/ro\"]\n")
	f, err := e.load(t, "# says nothing\n[fs]\nread_roots = []\n")
	if err != nil {
		t.Fatal(err)
	}
	p := f.Policy
	if !p.DotRoot() || !p.CheckPath(policy.OpWrite, e.work+"/x", "").Allowed {
		t.Error("operator write roots not kept")
	}
	if d := p.CheckPath(policy.OpRead, "/etc/passwd", ""); d.Allowed {
		t.Error("read_roots = [] in the workspace lifted the operator's read roots")
	}
	if d := p.CheckPath(policy.OpRead, e.dir+"/ro/x", ""); !d.Allowed || d.Rule.Source != e.op+":9" {
		t.Errorf("read root decision %+v", d)
	}
	if f.Modes != (policy.Modes{Net: policy.ModeWarn}) {
		t.Errorf("modes = %+v", f.Modes)
	}

	// No workspace path: the operator layer alone.
	f, err = LoadLayers(e.op, "", WithHome(e.home))
	if err != nil || len(f.Paths) != 1 {
		t.Fatalf("operator only: %v, %v", f, err)
	}
}

func TestLayersRejectWidening(t *testing.T) {
	tests := []struct {
		name      string
		operator  string
		workspace string
		line      int
		key, msg  string
	}{
		{"write root outside", operatorLayer, "[fs]\nwrite_roots = [\n  \"$WORK/proj\",\n  \"/etc\",\n]\n",
			4, "fs.write_roots", `"/etc" is outside the operator layer's write roots`},
		{"write root through a symlink", operatorLayer, "[fs]\nwrite_roots = [\"$WORK/escape/x\"]\n",
			2, "fs.write_roots", `escape/x" (it resolves to "/etc/x") is outside the operator layer's write roots`},
		{"dot without operator dot", "[fs]\nwrite_roots = [\"$WORK\"]\n", "[fs]\nwrite_roots = [\".\"]\n",
			2, "fs.write_roots", `no "." write root`},
		{"replace protected", operatorLayer, "\n[fs]\nreplace_protected = true\n",
			3, "fs.replace_protected", "cannot replace the protected list"},
		{"relax a set mode", operatorLayer, "[modes]\nnet = \"off\"\n",
			2, "modes.net", "cannot relax the mode from warn to off"},
		{"relax an unset mode", operatorLayer, "[modes]\nfs = \"warn\"\n",
			2, "modes.fs", "cannot relax the mode from enforce (unset) to warn"},
		{"read root outside", "[fs]\nwrite_roots = [\"$WORK\"]\nread_roots = [\"$DIR/ro\"]\n", "[fs]\nread_roots = [\"/usr\"]\n",
			2, "fs.read_roots", `"/usr" is outside the operator layer's read and write roots`},
		{"invalid workspace value", operatorLayer, "[fs]\nprotected = [\"a/*/b\"]\n",
			2, "fs.protected", `"*" may only`},
		{"unknown workspace key", operatorLayer, "[fs]\nxyzzy = []\n",
			2, "fs.xyzzy", "unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newLayerEnv(t, tt.operator)
			if err := os.Symlink("/etc", e.work+"/escape"); err != nil {
				t.Fatal(err)
			}
			e.rejects(t, tt.workspace, tt.line, tt.key, tt.msg)
		})
	}
}

func TestLayersOperatorErrorsFirst(t *testing.T) {
	e := newLayerEnv(t, "[fs]\nwrite_roots = [\"rel\"]\n")
	_, err := e.load(t, "[fs]\n")
	p := assertProblem(t, err, "fs.write_roots", 2, "not an absolute path", "")
	if p.File != e.op {
		t.Errorf("problem reported in %s, want the operator file", p.File)
	}
}

func TestWatchLayers(t *testing.T) {
	e := newLayerEnv(t, operatorLayer)
	writeInPlace(t, e.ws, e.expand("[fs]\nwrite_roots = [\"$WORK/proj\"]\n"))
	h := newHarness(t)
	var tg fakeTarget
	_, err := Watch(e.op, &tg, append(h.opts(), e.watchOpts()...)...)
	if err == nil || !strings.Contains(err.Error(), "ModeSwapper") {
		t.Fatalf("operator sets modes: err = %v", err)
	}
	var mt modeTarget
	h.watch(e.op, &mt, nil, e.watchOpts()...)
	good := mt.p.Load()
	if !good.CheckPath(policy.OpWrite, e.work+"/proj/x", "").Allowed || good.CheckPath(policy.OpWrite, e.work+"/x", "").Allowed {
		t.Fatal("layers not applied")
	}

	// The workspace tries to widen: rejected, the last good policy stays.
	writeAtomic(t, e.ws, e.expand("[fs]\nwrite_roots = [\"$DIR\"]\n"))
	ev := h.wait(WatchRejected, nil)
	if !strings.Contains(ev.Err.Error(), "workspace.toml:2:16: fs.write_roots: \""+e.dir+"\" is outside the operator layer's write roots") {
		t.Errorf("rejection: %v", ev.Err)
	}
	if mt.p.Load() != good {
		t.Fatal("widening edit swapped in")
	}

	// The operator narrows: the workspace root is now outside, so the pair
	// is rejected too.
	writeAtomic(t, e.op, e.expand("[fs]\nwrite_roots = [\"$WORK/other\"]\n"))
	h.wait(WatchRejected, nil)

	// Both fixed: loaded.
	writeAtomic(t, e.ws, e.expand("[fs]\nwrite_roots = [\"$WORK/other/sub\"]\n"))
	h.wait(WatchReloaded, allows(e.work+"/other/sub"))
}
