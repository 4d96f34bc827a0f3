package fsguard_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// layout is the fixture every escape case starts from:
//
//	base/root/            the only write root
//	  in.txt  sub/inner.txt  sub/.Env.Local  dir/
//	  link_mid  -> ../outside            (a directory link out)
//	  link_last -> ../outside/secret.txt (a file link out)
//	  dangling  -> ../outside/new.txt    (a link out to nothing yet)
//	  abs_in    -> base/root/in.txt      (absolute, pointing back inside)
//	  chain     -> ../outside/back       (leaves, then comes back: back -> ../root/sub)
//	  hard.txt                           (hard link to outside/hard-src.txt)
//	  .git/hooks/pre-commit  .bashrc  .ENV
//	base/root_evil/x.txt                 (a sibling sharing the root's prefix)
//	base/outside/secret.txt  hard-src.txt  dir/  back -> ../root/sub
func layout(t *testing.T) (base, root string) {
	t.Helper()
	base = tempDir(t)
	root = filepath.Join(base, "root")
	out := filepath.Join(base, "outside")
	write(t, filepath.Join(root, "in.txt"), "in")
	write(t, filepath.Join(root, "sub", "inner.txt"), "inner")
	write(t, filepath.Join(root, "sub", ".Env.Local"), "SECRET=1")
	write(t, filepath.Join(root, ".git", "hooks", "pre-commit"), "#!/bin/sh\n")
	write(t, filepath.Join(root, ".bashrc"), "# rc\n")
	write(t, filepath.Join(root, ".ENV"), "TOKEN=1")
	write(t, filepath.Join(base, "root_evil", "x.txt"), "evil")
	write(t, filepath.Join(out, "secret.txt"), "secret")
	write(t, filepath.Join(out, "hard-src.txt"), "shared")
	mustDo(t,
		os.Mkdir(filepath.Join(root, "dir"), 0o755),
		os.Mkdir(filepath.Join(out, "dir"), 0o755),
		os.Symlink("../outside", filepath.Join(root, "link_mid")),
		os.Symlink("../outside/secret.txt", filepath.Join(root, "link_last")),
		os.Symlink("../outside/new.txt", filepath.Join(root, "dangling")),
		os.Symlink(filepath.Join(root, "in.txt"), filepath.Join(root, "abs_in")),
		os.Symlink("../outside/back", filepath.Join(root, "chain")),
		os.Symlink("../root/sub", filepath.Join(out, "back")),
		os.Link(filepath.Join(out, "hard-src.txt"), filepath.Join(root, "hard.txt")),
	)
	return base, root
}

var t0 = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

// escapeOps are the guarded calls each case runs on its path p. Second
// names, where needed, are fixed entries inside the root.
var escapeOps = map[string]func(g *fsguard.Fs, root, p string) error{
	"create": func(g *fsguard.Fs, _, p string) error {
		f, err := g.Create(p)
		if err == nil {
			_, err = f.WriteString("x")
			f.Close()
		}
		return err
	},
	"openwrite": func(g *fsguard.Fs, _, p string) error {
		f, err := g.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err == nil {
			_, err = f.WriteString("x")
			f.Close()
		}
		return err
	},
	"open": func(g *fsguard.Fs, _, p string) error {
		f, err := g.Open(p)
		if err == nil {
			f.Close()
		}
		return err
	},
	"stat":      func(g *fsguard.Fs, _, p string) error { _, err := g.Stat(p); return err },
	"lstat":     func(g *fsguard.Fs, _, p string) error { _, _, err := g.LstatIfPossible(p); return err },
	"readlink":  func(g *fsguard.Fs, _, p string) error { _, err := g.ReadlinkIfPossible(p); return err },
	"mkdir":     func(g *fsguard.Fs, _, p string) error { return g.Mkdir(p, 0o755) },
	"mkdirall":  func(g *fsguard.Fs, _, p string) error { return g.MkdirAll(p+"/a/b", 0o755) },
	"remove":    func(g *fsguard.Fs, _, p string) error { return g.Remove(p) },
	"removeall": func(g *fsguard.Fs, _, p string) error { return g.RemoveAll(p) },
	"chmod":     func(g *fsguard.Fs, _, p string) error { return g.Chmod(p, 0o600) },
	"chown":     func(g *fsguard.Fs, _, p string) error { return g.Chown(p, os.Getuid(), os.Getgid()) },
	"chtimes":   func(g *fsguard.Fs, _, p string) error { return g.Chtimes(p, t0, t0) },
	"chdir":     func(g *fsguard.Fs, _, p string) error { return g.Chdir(p) },
	"rename-from": func(g *fsguard.Fs, root, p string) error {
		return g.Rename(p, filepath.Join(root, "moved"))
	},
	"rename-to": func(g *fsguard.Fs, root, p string) error {
		return g.Rename(filepath.Join(root, "in.txt"), p)
	},
	"link-from": func(g *fsguard.Fs, root, p string) error {
		return g.Link(p, filepath.Join(root, "linked"))
	},
	"link-to": func(g *fsguard.Fs, root, p string) error {
		return g.Link(filepath.Join(root, "sub", "inner.txt"), p)
	},
	"symlink-at": func(g *fsguard.Fs, _, p string) error { return g.SymlinkIfPossible("in.txt", p) },
	"symlink-to": func(g *fsguard.Fs, root, p string) error {
		return g.SymlinkIfPossible(p, filepath.Join(root, "newlink"))
	},
}

var (
	writeOps = []string{"create", "openwrite", "mkdir", "mkdirall", "remove", "removeall", "chmod", "chown",
		"chtimes", "rename-from", "rename-to", "link-from", "link-to", "symlink-at", "symlink-to"}
	readOps = []string{"open", "stat", "lstat"}
)

// escapeCase is one path and what each operation on it must do.
type escapeCase struct {
	name  string
	path  string   // relative to base
	deny  []string // must be denied, leaving the disk unchanged
	allow []string // must not be denied (the OS may still refuse)
	// fail lists operations that must fail and leave the disk unchanged,
	// with the kernel's own error rather than a denial (a file used as a
	// directory while resolving).
	fail []string
}

func without(ops []string, drop ...string) []string {
	var out []string
	for _, o := range ops {
		keep := true
		for _, d := range drop {
			if o == d {
				keep = false
			}
		}
		if keep {
			out = append(out, o)
		}
	}
	return out
}

func plus(a []string, b ...string) []string { return append(append([]string(nil), a...), b...) }

func escapeCases() []escapeCase {
	all := plus(writeOps, readOps...)
	outside := func(name, path string, dir bool) escapeCase {
		c := escapeCase{name: name, path: path, deny: plus(writeOps, "chdir"), allow: readOps}
		if !dir && !strings.HasSuffix(path, "new.txt") {
			// MkdirAll("file/a/b") fails resolving "file/a" as a directory.
			c.deny = without(c.deny, "mkdirall")
			c.fail = []string{"mkdirall"}
		}
		return c
	}
	protected := func(name, path string) escapeCase {
		return escapeCase{name: name, path: path, deny: without(writeOps, "mkdirall"), allow: readOps,
			fail: []string{"mkdirall"}}
	}
	return []escapeCase{
		{name: "inside file", path: "root/in.txt", allow: without(all, "mkdirall"), fail: []string{"mkdirall"}},
		{name: "inside new name", path: "root/new.txt", allow: without(all, "stat", "lstat", "open")},
		{name: "inside dir", path: "root/dir", allow: plus(all, "chdir")},
		outside("outside file", "outside/secret.txt", false),
		outside("outside dir", "outside/dir", true),
		outside("outside new name", "outside/new.txt", false),
		outside("sibling prefix dir", "root_evil/x.txt", false),
		outside("dotdot climbing out", "root/sub/../../outside/secret.txt", false),
		outside("dotdot climbing out to a dir", "root/../outside/dir", true),
		outside("symlink in a middle component", "root/link_mid/secret.txt", false),
		outside("symlink in a middle component, new name", "root/link_mid/new.txt", false),
		{
			name: "symlink as last component pointing out", path: "root/link_last",
			deny:  []string{"create", "openwrite", "chmod", "chown", "chtimes", "symlink-to", "chdir"},
			allow: []string{"remove", "removeall", "rename-from", "rename-to", "link-from", "lstat", "readlink", "open", "stat"},
			fail:  []string{"mkdirall"},
		},
		{
			name: "dangling symlink pointing out", path: "root/dangling",
			deny:  []string{"create", "openwrite", "chmod", "chown", "chtimes", "mkdirall", "symlink-to", "chdir"},
			allow: []string{"remove", "removeall", "rename-from", "rename-to", "link-from", "lstat", "readlink"},
		},
		{name: "absolute symlink pointing back inside", path: "root/abs_in", allow: without(all, "mkdirall"), fail: []string{"mkdirall"}},
		{name: "symlink chain that leaves and comes back", path: "root/chain/inner.txt", allow: without(all, "mkdirall"), fail: []string{"mkdirall"}},
		{name: "symlink chain to a dir that comes back", path: "root/chain", allow: []string{"chdir", "mkdirall", "stat", "open", "chmod"}},
		{
			name: "hard link to an outside file", path: "root/hard.txt",
			deny:  []string{"create", "openwrite", "chmod", "chown", "chtimes", "link-from"},
			allow: []string{"remove", "removeall", "rename-from", "rename-to", "symlink-to", "open", "stat", "lstat"},
		},
		protected("protected .git/hooks/pre-commit", "root/.git/hooks/pre-commit"),
		protected("protected .bashrc", "root/.bashrc"),
		protected("protected .ENV (case folded)", "root/.ENV"),
		protected("protected .Env.Local (glob .env.*)", "root/sub/.Env.Local"),
		{name: "protected new .zshrc", path: "root/sub/.zshrc", deny: []string{"create", "openwrite", "mkdir", "mkdirall", "symlink-at", "link-to", "rename-to"}},
		// The empty hooks directory may be made (git init, git clone), so
		// mkdir of the existing one gets the kernel's EEXIST.
		{name: "protected dir .git/hooks", path: "root/.git/hooks", deny: without(writeOps, "mkdir"), allow: plus(readOps, "chdir"), fail: []string{"mkdir"}},
		// .git is one object: never removed or moved, even when empty.
		{name: "dir holding protected names (.git)", path: "root/.git", deny: []string{"removeall", "rename-from", "remove"}, allow: []string{"chdir", "stat"}},
		{name: "dir holding protected names (sub)", path: "root/sub", deny: []string{"removeall", "rename-from"}, allow: []string{"chdir", "chmod", "mkdirall"}},
		{name: "the write root itself", path: "root", deny: []string{"remove", "removeall", "rename-from"}, allow: []string{"chdir", "chmod", "chtimes", "stat", "mkdirall"}},
	}
}

// pathVariants run a test body on each way a call can be decided: the
// openat2 fast paths with a silent scope (pure decisions), the fast paths
// with an OnCall callback (every call through the pipeline), and the slow
// path (policy.Resolve and os.Root) alone.
var pathVariants = []struct {
	name   string
	fast   bool
	onCall bool
}{{"fast", true, false}, {"fast+oncall", true, true}, {"slow", false, false}}

func variantOpts(onCall bool) []audit.Option {
	if !onCall {
		return nil
	}
	return []audit.Option{audit.WithOnCall(func(context.Context, *audit.Event) audit.Verdict { return audit.Continue })}
}

// TestEscapeTable runs every operation on every escape path against a real
// directory tree, and checks that each denied call left the disk exactly
// as it was.
func TestEscapeTable(t *testing.T) {
	for _, v := range pathVariants {
		t.Run(v.name, func(t *testing.T) {
			defer fsguard.SetFastPaths(v.fast)()
			escapeTable(t, variantOpts(v.onCall))
		})
	}
}

func escapeTable(t *testing.T, opts []audit.Option) {
	for _, c := range escapeCases() {
		t.Run(c.name, func(t *testing.T) {
			seen := map[string]bool{}
			run := func(op string, want string) {
				if seen[op] {
					t.Fatalf("op %s listed twice", op)
				}
				seen[op] = true
				t.Run(op, func(t *testing.T) {
					base, root := layout(t)
					ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{root}}, opts...)
					g := fsguard.New(ctx, afero.NewOsFs(), fsguard.WithDir(root))
					before := snapshot(t, base)
					err := escapeOps[op](g, root, filepath.Join(base, c.path))
					after := snapshot(t, base)
					switch want {
					case "deny":
						if !isDenial(err) {
							t.Fatalf("%s %s: want a denial, got %v", op, c.path, err)
						}
					case "fail":
						if err == nil || isDenial(err) {
							t.Fatalf("%s %s: want the kernel's error, got %v", op, c.path, err)
						}
					case "allow":
						if isDenial(err) {
							t.Fatalf("%s %s: want allowed, got %v", op, c.path, err)
						}
						return
					}
					if d := diffSnapshots(before, after); len(d) > 0 {
						t.Fatalf("%s %s was refused but changed the disk:\n%s", op, c.path, strings.Join(d, "\n"))
					}
				})
			}
			for _, op := range c.deny {
				run(op, "deny")
			}
			for _, op := range c.fail {
				run(op, "fail")
			}
			for _, op := range c.allow {
				run(op, "allow")
			}
		})
	}
}
