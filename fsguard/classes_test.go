package fsguard_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// TestProtectedClassesOnDisk is the protected-name table on the real
// filesystem: for a name of each class, near the root, deep, and inside
// dependency trees, a guarded handle creates it, overwrites an existing
// one, moves an existing one away and another file onto it, removes it
// and reads it; each refusal leaves the disk as it was, each allowed call
// has its effect. Runs-class and git names hold everywhere; credentials
// hold outside dependency trees; reads are read-deny's alone.
func TestProtectedClassesOnDisk(t *testing.T) {
	names := []struct {
		name      string
		protected bool // outside dependency trees
		inDeps    bool // protected inside them too
		readDeny  bool
	}{
		{".bashrc", true, true, false},
		{".npmrc", true, true, false},
		{".envrc", true, true, false},
		{".git/hooks/pre-commit", true, true, false},
		{".git/config", true, true, false},
		{".env", true, false, true},
		{"cacert.pem", true, false, true},
		{"id_rsa", true, false, false},
		{"notes.txt", false, false, false},
	}
	places := []struct {
		dir string
		dep bool
	}{
		{"", false},
		{"a/b/c/d/e/f/g/h", false},
		{"node_modules/pkg/test", true},
		{".venv/lib/python3.12/site-packages/pip/_vendor/certifi", true},
		{"cache/go-mod/example.com/m@v1.0.0/testdata", true}, // the go profile's GOMODCACHE, named here
		{"third/vendor/example.com/x", true},
	}
	type op struct {
		name  string
		fresh bool // the name does not exist before the call
		do    func(g afero.Fs, path string) error
		// effect reports whether the call changed the disk as it should
		// have when allowed.
		effect func(path string) bool
	}
	content := func(path string) string { b, _ := os.ReadFile(path); return string(b) }
	ops := []op{
		{"create", true, func(g afero.Fs, p string) error { return afero.WriteFile(g, p, []byte("new"), 0o644) },
			func(p string) bool { return content(p) == "new" }},
		{"overwrite", false, func(g afero.Fs, p string) error { return afero.WriteFile(g, p, []byte("over"), 0o644) },
			func(p string) bool { return content(p) == "over" }},
		{"move away", false, func(g afero.Fs, p string) error { return g.Rename(p, filepath.Join(filepath.Dir(p), "moved")) },
			func(p string) bool { _, err := os.Lstat(p); return os.IsNotExist(err) }},
		{"move onto", false, func(g afero.Fs, p string) error { return g.Rename(filepath.Join(filepath.Dir(p), "other"), p) },
			func(p string) bool { return content(p) == "other" }},
		{"remove", false, func(g afero.Fs, p string) error { return g.Remove(p) },
			func(p string) bool { _, err := os.Lstat(p); return os.IsNotExist(err) }},
	}
	for _, pl := range places {
		for _, n := range names {
			for _, o := range ops {
				t.Run(pl.dir+"/"+n.name+"/"+o.name, func(t *testing.T) {
					root := tempDir(t)
					path := filepath.Join(root, pl.dir, n.name)
					write(t, path, "orig")
					write(t, filepath.Join(filepath.Dir(path), "other"), "other")
					ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{root}, ReadDeny: []string{".env", "*.pem"},
						DependencyTrees: []string{filepath.Join(root, "cache/go-mod")}})
					g := fsguard.New(ctx, afero.NewOsFs())
					target := path
					if o.fresh {
						mustDo(t, os.Remove(path))
					}
					before := snapshot(t, root)
					err := o.do(g, target)
					want := n.protected && (!pl.dep || n.inDeps)
					if want {
						if !isDenial(err) {
							t.Fatalf("%s %s: want a denial, got %v", o.name, target, err)
						}
						if d := diffSnapshots(before, snapshot(t, root)); len(d) > 0 {
							t.Fatalf("a denied %s changed the disk: %v", o.name, d)
						}
						return
					}
					if err != nil {
						t.Fatalf("%s %s: %v", o.name, target, err)
					}
					if !o.effect(target) {
						t.Fatalf("%s %s: allowed but without its effect", o.name, target)
					}
				})
			}
			t.Run(pl.dir+"/"+n.name+"/read", func(t *testing.T) {
				root := tempDir(t)
				path := filepath.Join(root, pl.dir, n.name)
				write(t, path, "orig")
				ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{root}, ReadDeny: []string{".env", "*.pem"}})
				g := fsguard.New(ctx, afero.NewOsFs())
				b, err := afero.ReadFile(g, path)
				switch {
				case n.readDeny && !isDenial(err):
					t.Fatalf("read %s: want a denial, got %q %v", path, b, err)
				case !n.readDeny && (err != nil || string(b) != "orig"):
					t.Fatalf("read %s: %q %v", path, b, err)
				}
			})
		}
	}
}
