package policy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// tempRoot returns a fresh temp dir with symbolic links in its own path
// resolved, so expectations can be written as plain joins.
func tempRoot(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustMkdir(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t testing.TB, p string) {
	t.Helper()
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestResolve(t *testing.T) {
	root := tempRoot(t)
	in := filepath.Join(root, "in")
	out := filepath.Join(root, "out")
	mustMkdir(t, filepath.Join(in, "sub"))
	mustMkdir(t, filepath.Join(out, "deep"))
	mustWrite(t, filepath.Join(in, "file"))
	mustSymlink(t, filepath.Join(out, "deep"), filepath.Join(in, "toout"))                // absolute, middle
	mustSymlink(t, "../out/deep", filepath.Join(in, "reltoout"))                          // relative to the link's dir
	mustSymlink(t, filepath.Join(out, "missing"), filepath.Join(in, "dangling"))          // dangling, points out
	mustSymlink(t, filepath.Join(in, "sub"), filepath.Join(out, "back"))                  // out -> in
	mustSymlink(t, filepath.Join(out, "back"), filepath.Join(in, "chain"))                // in -> out -> in
	mustSymlink(t, "loop2", filepath.Join(in, "loop1"))                                   // loop
	mustSymlink(t, "loop1", filepath.Join(in, "loop2"))                                   //
	mustSymlink(t, "sub", filepath.Join(in, "rel"))                                       // relative, stays in
	mustSymlink(t, filepath.Join(in, "file"), filepath.Join(in, "filelink"))              // link to a file
	mustSymlink(t, filepath.Join(root, "out", "deep", ".."), filepath.Join(in, "dotdot")) // target with ..

	tests := []struct {
		name   string
		path   string
		cwd    string
		follow bool
		want   string
		err    error
	}{
		{"existing file", in + "/file", "", true, in + "/file", nil},
		{"missing file", in + "/new.txt", "", true, in + "/new.txt", nil},
		{"missing parents", in + "/a/b/c.txt", "", true, in + "/a/b/c.txt", nil},
		{"repeated and trailing separators", in + "//sub///", "", false, in + "/sub", nil},
		{"dot components", in + "/./sub/.", "", false, in + "/sub", nil},
		{"dotdot lexical on real dirs", in + "/sub/../file", "", true, in + "/file", nil},
		{"symlink in the middle", in + "/toout/x", "", true, out + "/deep/x", nil},
		{"dotdot after a symlink climbs from its target", in + "/toout/..", "", true, out, nil},
		{"dotdot after a symlink, then a name", in + "/toout/../deep", "", true, out + "/deep", nil},
		{"relative target read from the link's dir", in + "/reltoout/f", "", true, out + "/deep/f", nil},
		{"last symlink followed", in + "/toout", "", true, out + "/deep", nil},
		{"last symlink not followed", in + "/toout", "", false, in + "/toout", nil},
		{"trailing slash follows the last symlink", in + "/toout/", "", false, out + "/deep", nil},
		{"dangling symlink followed lands on its target", in + "/dangling", "", true, out + "/missing", nil},
		{"dangling symlink not followed", in + "/dangling", "", false, in + "/dangling", nil},
		{"chain out and back in", in + "/chain/f", "", true, in + "/sub/f", nil},
		{"relative link staying inside", in + "/rel/f", "", true, in + "/sub/f", nil},
		{"target containing dotdot", in + "/dotdot/x", "", true, out + "/x", nil},
		{"relative name from cwd", "sub/f", in, true, in + "/sub/f", nil},
		{"relative name climbing from cwd", "../out", in, true, out, nil},
		{"missing then dotdot", in + "/nope/../file", "", true, in + "/file", nil},
		{"root", "/", "", true, "/", nil},
		{"above root stays at root", "/../..", "", true, "/", nil},
		{"loop", in + "/loop1/x", "", true, "", ErrTooManyLinks},
		{"loop as last component, followed", in + "/loop1", "", true, "", ErrTooManyLinks},
		{"loop as last component, not followed", in + "/loop1", "", false, in + "/loop1", nil},
		{"file used as a directory", in + "/file/x", "", true, "", ErrNotDir},
		{"link to a file used as a directory", in + "/filelink/x", "", true, "", ErrNotDir},
		{"empty name", "", "", true, "", ErrInvalidPath},
		{"NUL byte", in + "/a\x00b", "", true, "", ErrInvalidPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(OSFS{}, tt.path, tt.cwd, tt.follow)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Resolve(%q) error = %v, want %v", tt.path, err, tt.err)
				}
				var re *ResolveError
				if !errors.As(err, &re) {
					t.Fatalf("error %T is not a *ResolveError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q) error: %v", tt.path, err)
			}
			if got != tt.want {
				t.Fatalf("Resolve(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

func TestResolveRelativeWithoutCwd(t *testing.T) {
	if _, err := Resolve(OSFS{}, "x", "", true); err == nil {
		t.Fatal("relative name without a working directory resolved")
	}
	if _, err := Resolve(OSFS{}, "x", "rel", true); err == nil {
		t.Fatal("relative name with a relative working directory resolved")
	}
}

// A permission error while resolving must deny, not fall back to the parent.
func TestResolveFailsClosedOnUnreadableDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions, so EACCES cannot be provoked")
	}
	root := tempRoot(t)
	locked := filepath.Join(root, "locked")
	mustMkdir(t, filepath.Join(locked, "inner"))
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	if _, err := Resolve(OSFS{}, locked+"/inner/x", "", true); err == nil {
		t.Fatal("resolution through an unreadable directory succeeded")
	}
}

// errFS fails every Lstat with a given error.
type errFS struct{ err error }

func (e errFS) Lstat(string) (os.FileInfo, error) { return nil, e.err }
func (e errFS) Readlink(string) (string, error)   { return "", e.err }

// Only "does not exist" may fall back to the parent; any other error denies.
// (An FS double is used because EACCES and EIO cannot be provoked as root.)
func TestResolveOnlyNotExistFallsBack(t *testing.T) {
	if _, err := Resolve(errFS{os.ErrNotExist}, "/a/b", "", true); err != nil {
		t.Fatalf("not-exist should fall back: %v", err)
	}
	boom := errors.New("I/O error")
	if _, err := Resolve(errFS{boom}, "/a/b", "", true); !errors.Is(err, boom) {
		t.Fatalf("other errors must fail resolution, got %v", err)
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		path, dir string
		want      bool
	}{
		{"/allowed", "/allowed", true},
		{"/allowed/x", "/allowed", true},
		{"/allowed_evil", "/allowed", false},
		{"/allowed_evil/x", "/allowed", false},
		{"/allowe", "/allowed", false},
		{"/anything", "/", true},
		{"/", "/", true},
	}
	for _, tt := range tests {
		if got := Within(tt.path, tt.dir); got != tt.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tt.path, tt.dir, got, tt.want)
		}
	}
}
