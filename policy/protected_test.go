package policy_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// TestProtectedClasses is the protected-name table: for each class, a
// name created (or overwritten: both are a write), moved (either name),
// removed and read, near the root and deep, outside and inside dependency
// trees. Runs-class names hold everywhere; credentials hold outside
// dependency trees; reads are read-deny's alone.
func TestProtectedClasses(t *testing.T) {
	const work = "/srv/w"
	p, err := policy.New(policy.Spec{WriteRoots: []string{work}, ReadDeny: []string{".env", "*.pem"}})
	if err != nil {
		t.Fatal(err)
	}
	places := []struct {
		dir string
		dep bool
	}{
		{"", false},
		{"a/b/c/d/e/f/g", false},
		{"node_modules/pkg/test", true},
		{"app/node_modules/@scope/pkg/node_modules/dep", true},
		{".venv/lib/python3.13/site-packages/pip/_vendor/certifi", true},
		{"venv/lib/python3/site-packages/x", true},
		{"usr/lib/python3/dist-packages/x", true},
		{"home/go/pkg/mod/example.com/m@v1.0.0/testdata", true},
		{"proj/vendor/example.com/m", true},
		{"proj/target/debug/build/x/out", true},
		{"home/.cargo/registry/src/index/rustls-0.23/test-ca", true},
		{"home/.cargo/git/checkouts/x/abc", true},
		{"NODE_MODULES/x", true}, // names fold case
		{"node_modulesx/pkg", false},
		{"pkg/x/mod", false}, // pkg/mod is a two-component name
	}
	names := []struct {
		name     string
		class    policy.ProtectClass
		pattern  string
		readDeny bool
	}{
		{".bashrc", policy.ClassRuns, ".bashrc", false},
		{".npmrc", policy.ClassRuns, ".npmrc", false},
		{".envrc", policy.ClassRuns, ".envrc", false},
		{".cargo/config.toml", policy.ClassRuns, ".cargo/config.toml", false},
		{".vscode/tasks.json", policy.ClassRuns, ".vscode", false},
		{".ssh/config", policy.ClassRuns, ".ssh", false},
		{".git/hooks/pre-commit", policy.ClassGit, ".git/hooks", false},
		{".env", policy.ClassCredential, ".env", true},
		{".env.production", policy.ClassCredential, ".env.*", false},
		{"cacert.pem", policy.ClassCredential, "*.pem", true},
		{"server.KEY", policy.ClassCredential, "*.key", false},
		{"id_ed25519", policy.ClassCredential, "id_ed25519", false},
		{".netrc", policy.ClassCredential, ".netrc", false},
	}
	ops := []struct {
		name string
		op   policy.Op
	}{{"created or overwritten", policy.OpWrite}, {"moved", policy.OpMove}, {"removed", policy.OpDelete}, {"linked", policy.OpLink}}
	for _, pl := range places {
		for _, n := range names {
			path := filepath.Join(work, pl.dir, n.name)
			protected := n.class != policy.ClassCredential || !pl.dep
			for _, o := range ops {
				d := p.CheckPath(o.op, path, "")
				if protected {
					if d.Allowed || d.Rule.Pattern != n.pattern || d.Rule.Class != n.class || d.Tier != policy.TierHard {
						t.Errorf("%s %s: %+v, want a hard denial by %s entry %q", path, o.name, d, n.class, n.pattern)
					}
				} else if !d.Allowed {
					t.Errorf("%s %s in a dependency tree: denied by %v", path, o.name, d.Rule)
				}
			}
			if d := p.CheckPath(policy.OpRead, path, ""); d.Allowed == n.readDeny {
				t.Errorf("%s read: allowed=%v (%v), read-deny covers it: %v", path, d.Allowed, d.Rule, n.readDeny)
			}
		}
	}
}

// TestCredentialAboveDependencyTree: a dependency tree below a credential
// name does not open it; a host that lists a credential name as protected
// protects it everywhere.
func TestCredentialAboveDependencyTree(t *testing.T) {
	const work = "/srv/w"
	p, err := policy.New(policy.Spec{WriteRoots: []string{work}, Protected: []string{"*.key"},
		Credentials: []string{"secrets"}, DependencyTrees: []string{"third_party", work + "/cache/mods"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		allowed bool
	}{
		{".azure/node_modules/x.pem", false},               // .azure holds the secrets above
		{"node_modules/.azure/x.pem", true},                // inside the tree
		{"node_modules/x/server.key", false},               // listed as protected by the host
		{"secrets", false},                                 // the host's credential
		{"third_party/secrets", true},                      // the host's dependency tree
		{"cache/mods/example.com/m@v1/key.pem", true},      // an absolute dependency tree
		{"cache/mods", true},                               // not a credential
		{"cache/modsx/key.pem", false},                     // a sibling of the tree
		{"node_modules/.bashrc", false},                    // runs class: everywhere
		{"node_modules/x/.git/config", false},              // git: everywhere
		{"node_modules/x/.git/objects/ab/cd.pem", true},    // state of a repository in a tree
		{"x/.git/objects/ab/cd.pem", false},                // the credential name holds outside
		{"node_modules", true},                             // the tree itself
		{".env.local/node_modules/x", false},               // a credential directory above
		{"node_modules/x/.env.local/node_modules/y", true}, // below the first tree
	}
	for _, tt := range tests {
		path := work + "/" + tt.path
		if d := p.CheckPath(policy.OpWrite, path, ""); d.Allowed != tt.allowed {
			t.Errorf("write %s: allowed=%v (%v), want %v", tt.path, d.Allowed, d.Rule, tt.allowed)
		}
	}
}

// TestGoModCacheIsDependencyTree: the go profile's GOMODCACHE (under the
// cache directory, named go-mod) is a dependency tree wherever it is, and
// FileSpec carries it to the sandbox.
func TestGoModCacheIsDependencyTree(t *testing.T) {
	mustLook(t, "go")
	dir := t.TempDir()
	p, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{CacheDir: filepath.Join(dir, "cache"), Use: []policy.ProfileUse{{Name: "go"}}}})
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "cache", "go-mod", "example.com", "m@v1.0.0", "testdata", "key.pem")
	if d := p.CheckPath(policy.OpWrite, key, ""); !d.Allowed {
		t.Fatalf("module download of a test key: %v", d.Rule)
	}
	if d := p.CheckPath(policy.OpWrite, filepath.Join(dir, "key.pem"), ""); d.Allowed {
		t.Fatal("a key outside the module cache is writable")
	}
	fs := p.FileSpec("")
	if !slices.Contains(fs.DependencyTrees, filepath.Join(dir, "cache", "go-mod")) || !slices.Contains(fs.DependencyTrees, "node_modules") ||
		!slices.Contains(fs.Credentials, "*.pem") || slices.Contains(fs.Protected, "*.pem") {
		t.Fatalf("FileSpec: credentials %v, dependency trees %v", fs.Credentials, fs.DependencyTrees)
	}
	child, err := policy.New(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{key, filepath.Join(dir, "key.pem"), filepath.Join(dir, ".git/hooks/x"), filepath.Join(dir, ".git")} {
		a, b := p.CheckPath(policy.OpWrite, path, ""), child.CheckPath(policy.OpWrite, path, "")
		if a.Allowed != b.Allowed || a.Rule.Pattern != b.Rule.Pattern && !a.Allowed {
			t.Errorf("%s: host %v, sandbox %v", path, a.Rule, b.Rule)
		}
	}
}

// TestProtectedTableComplete: every built-in entry has a class, what it
// does and a source, and the default lists are the table by class.
func TestProtectedTableComplete(t *testing.T) {
	for _, n := range policy.ProtectedNames() {
		if n.Class == 0 || n.What == "" || n.Source == "" {
			t.Errorf("%+v: missing class, what or source", n)
		}
		inRuns := slices.Contains(policy.DefaultProtected, n.Pattern)
		inCred := slices.Contains(policy.DefaultCredentials, n.Pattern)
		switch {
		case n.Pattern == policy.GitEntry:
			if inRuns || inCred {
				t.Errorf("%s is the git model's own rule, not a list entry", n.Pattern)
			}
		case n.Class == policy.ClassCredential && (!inCred || inRuns), n.Class != policy.ClassCredential && (inCred || !inRuns):
			t.Errorf("%s (%v): in protected %v, in credentials %v", n.Pattern, n.Class, inRuns, inCred)
		}
	}
	for _, d := range policy.DependencyTrees() {
		if d.What == "" || d.Source == "" || !slices.Contains(policy.DefaultDependencyTrees, d.Pattern) {
			t.Errorf("%+v: missing what or source, or not in the default list", d)
		}
	}
}

// TestClassesOnTheWire: a policy rebuilt from its JSON form (an isolate
// child) keeps each entry's class and the dependency trees.
func TestClassesOnTheWire(t *testing.T) {
	const work = "/srv/w"
	p, err := policy.New(policy.Spec{WriteRoots: []string{work}, Protected: []string{"Makefile"},
		Credentials: []string{"*.token"}, DependencyTrees: []string{"third_party"}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back policy.Policy
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"Makefile", "third_party/Makefile", "a.token", "third_party/a.token", "node_modules/a.token",
		".git/config", ".git/HEAD", ".git", "x.pem", "node_modules/x.pem"} {
		a, b := p.CheckPath(policy.OpWrite, work+"/"+path, ""), back.CheckPath(policy.OpWrite, work+"/"+path, "")
		if a.Allowed != b.Allowed || a.Rule.Pattern != b.Rule.Pattern || a.Rule.Class != b.Rule.Class {
			t.Errorf("%s: before %v (%v), after %v (%v)", path, a.Rule, a.Rule.Class, b.Rule, b.Rule.Class)
		}
	}
}
