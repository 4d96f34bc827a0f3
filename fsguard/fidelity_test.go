//go:build unix

package fsguard_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// TestFidelity runs each afero.Fs method, on names the guard allows, on raw
// afero.OsFs and on the guarded Fs, each on its own fresh copy of one
// layout, and compares the effect (the resulting tree) and the error: its
// type, Op, Path (or Old/New), errno and errors.Is class. The names cover
// ".." after a missing directory, trailing slashes after links, dangling
// links, empty names, NUL bytes and open flags. It runs on every route.
func TestFidelity(t *testing.T) {
	layout := func(t *testing.T) string {
		d := tempDir(t)
		mustDo(t,
			os.Mkdir(filepath.Join(d, "sub"), 0o755),
			os.WriteFile(filepath.Join(d, "file"), []byte("data"), 0o644),
			os.Symlink("sub", filepath.Join(d, "link")),
			os.Symlink("file", filepath.Join(d, "flink")),
			os.Symlink("missing", filepath.Join(d, "dangling")),
		)
		return d
	}
	type call func(fsys afero.Fs, at func(string) string) error
	open := func(name string, flag int) call {
		return func(fsys afero.Fs, at func(string) string) error {
			f, err := fsys.OpenFile(at(name), flag, 0o644)
			if err == nil {
				f.Close()
			}
			return err
		}
	}
	stat := func(name string) call {
		return func(fsys afero.Fs, at func(string) string) error { _, err := fsys.Stat(at(name)); return err }
	}
	lstat := func(name string) call {
		return func(fsys afero.Fs, at func(string) string) error {
			_, _, err := fsys.(afero.Lstater).LstatIfPossible(at(name))
			return err
		}
	}
	readlink := func(name string) call {
		return func(fsys afero.Fs, at func(string) string) error {
			_, err := fsys.(afero.LinkReader).ReadlinkIfPossible(at(name))
			return err
		}
	}
	mkdir := func(name string) call {
		return func(fsys afero.Fs, at func(string) string) error { return fsys.Mkdir(at(name), 0o755) }
	}
	mkdirAll := func(name string) call {
		return func(fsys afero.Fs, at func(string) string) error { return fsys.MkdirAll(at(name), 0o755) }
	}
	remove := func(name string) call {
		return func(fsys afero.Fs, at func(string) string) error { return fsys.Remove(at(name)) }
	}
	removeAll := func(name string) call {
		return func(fsys afero.Fs, at func(string) string) error { return fsys.RemoveAll(at(name)) }
	}
	rename := func(a, b string) call {
		return func(fsys afero.Fs, at func(string) string) error { return fsys.Rename(at(a), at(b)) }
	}
	chmod := func(name string) call {
		return func(fsys afero.Fs, at func(string) string) error { return fsys.Chmod(at(name), 0o600) }
	}
	chtimes := func(name string) call {
		return func(fsys afero.Fs, at func(string) string) error { return fsys.Chtimes(at(name), t0, t0) }
	}
	chown := func(name string) call {
		return func(fsys afero.Fs, at func(string) string) error {
			return fsys.Chown(at(name), os.Getuid(), os.Getgid())
		}
	}
	// chownTo gives name to another user (it works for real when the
	// tests run as root; otherwise both sides answer EPERM).
	chownTo := func(name string) call {
		return func(fsys afero.Fs, at func(string) string) error { return fsys.Chown(at(name), 4242, 4343) }
	}
	symlink := func(target, name string) call {
		return func(fsys afero.Fs, at func(string) string) error {
			return fsys.(afero.Linker).SymlinkIfPossible(target, at(name))
		}
	}
	link := func(a, b string) call {
		return func(fsys afero.Fs, at func(string) string) error {
			if g, ok := fsys.(*fsguard.Fs); ok {
				return g.Link(at(a), at(b))
			}
			return os.Link(at(a), at(b))
		}
	}
	writeFile := func(name string) call {
		return func(fsys afero.Fs, at func(string) string) error {
			return afero.WriteFile(fsys, at(name), []byte("w"), 0o644)
		}
	}
	cases := map[string]call{
		"WriteFile sub/missing/../g":   writeFile("sub/missing/../g"),
		"Create missing/../new":        open("missing/../new", os.O_RDWR|os.O_CREATE|os.O_TRUNC),
		"Open missing/../file":         open("missing/../file", os.O_RDONLY),
		"Stat missing/../file":         stat("missing/../file"),
		"Lstat missing/../file":        lstat("missing/../file"),
		"Readlink missing/../flink":    readlink("missing/../flink"),
		"Mkdir missing/../x":           mkdir("missing/../x"),
		"Remove missing/../file":       remove("missing/../file"),
		"Rename missing/../file":       rename("missing/../file", "y"),
		"Rename to missing/../y":       rename("file", "missing/../y"),
		"Chmod missing/../file":        chmod("missing/../file"),
		"Chtimes missing/../file":      chtimes("missing/../file"),
		"Symlink at missing/../s":      symlink("file", "missing/../s"),
		"Link missing/../file":         link("missing/../file", "h"),
		"Stat sub/../file":             stat("sub/../file"),
		"Stat link/":                   stat("link/"),
		"Stat flink/":                  stat("flink/"),
		"Lstat link/":                  lstat("link/"),
		"Lstat flink/":                 lstat("flink/"),
		"Open flink/":                  open("flink/", os.O_RDONLY),
		"Open link/":                   open("link/", os.O_RDONLY),
		"Readlink flink/":              readlink("flink/"),
		"Remove flink/":                remove("flink/"),
		"Rename flink/":                rename("flink/", "z"),
		"Rename to link/":              rename("file", "link/"),
		"Mkdir dangling/":              mkdir("dangling/"),
		"Stat dangling":                stat("dangling"),
		"Lstat dangling":               lstat("dangling"),
		"Open dangling":                open("dangling", os.O_RDONLY),
		"Create dangling":              open("dangling", os.O_RDWR|os.O_CREATE|os.O_TRUNC),
		"Chmod dangling":               chmod("dangling"),
		"Remove dangling":              remove("dangling"),
		"Readlink dangling":            readlink("dangling"),
		"Readlink file":                readlink("file"),
		"Chown file":                   chown("file"),
		"Chtimes missing":              chtimes("missing"),
		"MkdirAll sub/a/b":             mkdirAll("sub/a/b"),
		"MkdirAll file/a":              mkdirAll("file/a"),
		"RemoveAll sub":                removeAll("sub"),
		"Link file":                    link("file", "h"),
		"Link over file":               link("flink", "file"),
		"Symlink over file":            symlink("x", "file"),
		"OpenFile RDONLY|CREATE new":   open("new", os.O_RDONLY|os.O_CREATE),
		"OpenFile WRONLY sub":          open("sub", os.O_WRONLY),
		"OpenFile DIRECTORY file":      open("file", os.O_RDONLY|syscall.O_DIRECTORY),
		"OpenFile EXCL file":           open("file", os.O_WRONLY|os.O_CREATE|os.O_EXCL),
		"OpenFile NOFOLLOW flink":      open("flink", os.O_RDONLY|syscall.O_NOFOLLOW),
		"OpenFile NOFOLLOW flink (w)":  open("flink", os.O_WRONLY|syscall.O_NOFOLLOW),
		"OpenFile APPEND missing":      open("missing", os.O_WRONLY|os.O_APPEND),
		"OpenFile TRUNC file":          open("file", os.O_WRONLY|os.O_TRUNC),
		"OpenFile RDONLY missing/x":    open("missing/x", os.O_RDONLY),
		"OpenFile RDONLY file/x":       open("file/x", os.O_RDONLY),
		"Stat file/x":                  stat("file/x"),
		"Mkdir file/x":                 mkdir("file/x"),
		"Remove missing":               remove("missing"),
		"Rename missing":               rename("missing", "x"),
		"Stat nul":                     stat("a\x00b"),
		"Open nul":                     open("a\x00b", os.O_RDONLY),
		"Create nul":                   open("a\x00b", os.O_RDWR|os.O_CREATE),
		"Mkdir nul":                    mkdir("a\x00b"),
		"Remove nul":                   remove("a\x00b"),
		"Chmod nul":                    chmod("a\x00b"),
		"Lstat nul":                    lstat("a\x00b"),
		"Readlink nul":                 readlink("a\x00b"),
		"Rename nul":                   rename("file", "a\x00b"),
		"Symlink nul target":           symlink("a\x00b", "s"),
		"Link nul":                     link("file", "a\x00b"),
		"RemoveAll sub/missing/../sub": removeAll("sub/missing/../sub"),
		"MkdirAll sub/missing/../y":    mkdirAll("sub/missing/../y"),
		"MkdirAll missing/../y/z":      mkdirAll("missing/../y/z"),
		"MkdirAll a/b/../../sub/c":     mkdirAll("a/b/../../sub/c"),
		"MkdirAll sub/missing/../../":  mkdirAll("sub/missing/../../"),
		"Chown file to another user":   chownTo("file"),
		"Chown flink to another user":  chownTo("flink"),
		"Chown link/ to another user":  chownTo("link/"),
		"Chown dangling to another":    chownTo("dangling"),
		"Link file/":                   link("file/", "h"),
		"Link to h/":                   link("file", "h/"),
		"Link flink/":                  link("flink/", "h"),
		"Link link/":                   link("link/", "h"),
		"Link to sub/":                 link("file", "sub/"),
		"Link to dangling/":            link("file", "dangling/"),
		"Symlink at s/":                symlink("file", "s/"),
		"Symlink at sub/":              symlink("file", "sub/"),
		"Symlink at link/":             symlink("file", "link/"),
		"Symlink at dangling/":         symlink("file", "dangling/"),
		"Symlink to sub/":              symlink("sub/", "s"),
	}
	empty := map[string]call{
		"Open empty":      func(fsys afero.Fs, _ func(string) string) error { _, err := fsys.Open(""); return err },
		"Create empty":    func(fsys afero.Fs, _ func(string) string) error { _, err := fsys.Create(""); return err },
		"Stat empty":      func(fsys afero.Fs, _ func(string) string) error { _, err := fsys.Stat(""); return err },
		"Mkdir empty":     func(fsys afero.Fs, _ func(string) string) error { return fsys.Mkdir("", 0o755) },
		"MkdirAll empty":  func(fsys afero.Fs, _ func(string) string) error { return fsys.MkdirAll("", 0o755) },
		"Remove empty":    func(fsys afero.Fs, _ func(string) string) error { return fsys.Remove("") },
		"RemoveAll empty": func(fsys afero.Fs, _ func(string) string) error { return fsys.RemoveAll("") },
		"Chmod empty":     func(fsys afero.Fs, _ func(string) string) error { return fsys.Chmod("", 0o600) },
		"Chtimes empty":   func(fsys afero.Fs, _ func(string) string) error { return fsys.Chtimes("", t0, t0) },
		"Rename empty":    func(fsys afero.Fs, at func(string) string) error { return fsys.Rename("", at("x")) },
		"Lstat empty": func(fsys afero.Fs, _ func(string) string) error {
			_, _, err := fsys.(afero.Lstater).LstatIfPossible("")
			return err
		},
		"Readlink empty": func(fsys afero.Fs, _ func(string) string) error {
			_, err := fsys.(afero.LinkReader).ReadlinkIfPossible("")
			return err
		},
		"Symlink empty to": func(fsys afero.Fs, at func(string) string) error {
			return fsys.(afero.Linker).SymlinkIfPossible("", at("s"))
		},
	}
	for k, v := range empty {
		cases[k] = v
	}
	names := make([]string, 0, len(cases))
	for k := range cases {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, v := range pathVariants {
		t.Run(v.name, func(t *testing.T) {
			defer fsguard.SetFastPaths(v.fast)()
			for _, name := range names {
				c := cases[name]
				t.Run(name, func(t *testing.T) {
					rawDir, gDir := layout(t), layout(t)
					ctx, _, _ := enter(t, policyIn(gDir), variantOpts(v.onCall)...)
					g := fsguard.New(ctx, afero.NewOsFs(), fsguard.WithDir(gDir))
					rawErr := c(afero.NewOsFs(), func(n string) string { return joinAt(rawDir, n) })
					gErr := c(g, func(n string) string { return joinAt(gDir, n) })
					if r, gs := errShape(rawErr, rawDir), errShape(gErr, gDir); r != gs {
						t.Errorf("error:\n  os:    %s\n  guard: %s", r, gs)
					}
					if r, gs := relSnapshot(t, rawDir), relSnapshot(t, gDir); !slices.Equal(r, gs) {
						t.Errorf("effects differ:\n  os:    %v\n  guard: %v", r, gs)
					}
				})
			}
		})
	}
}

// joinAt names n inside d as a caller would, keeping trailing slashes and
// odd bytes (filepath.Join would clean them away).
func joinAt(d, n string) string { return d + "/" + n }

// errShape renders what a caller can branch on in err: its type, the
// operation and names (directory replaced), the errno and the errors.Is
// classes.
func errShape(err error, dir string) string {
	if err == nil {
		return "<nil>"
	}
	rel := func(s string) string { return strings.ReplaceAll(s, dir, "DIR") }
	var b strings.Builder
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &le):
		fmt.Fprintf(&b, "LinkError op=%s old=%q new=%q", le.Op, rel(le.Old), rel(le.New))
	case errors.As(err, &pe):
		fmt.Fprintf(&b, "PathError op=%s path=%q", pe.Op, rel(pe.Path))
	default:
		fmt.Fprintf(&b, "%T", err)
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		fmt.Fprintf(&b, " errno=%d(%v)", int(errno), errno)
	}
	for _, c := range []error{fs.ErrNotExist, fs.ErrExist, fs.ErrPermission, fs.ErrInvalid} {
		if errors.Is(err, c) {
			fmt.Fprintf(&b, " is=%v", c)
		}
	}
	return b.String()
}

// policyIn is a policy whose only write root is dir.
func policyIn(dir string) policy.Spec { return policy.Spec{WriteRoots: []string{dir}} }
