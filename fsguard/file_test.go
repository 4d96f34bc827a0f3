package fsguard_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// Metadata changes through an open file go through the guard: a read
// handle on a file outside the roots cannot chmod, chown or truncate it,
// and no file can move the process's working directory. Inside a root they
// act like *os.File's.
func TestFileMutationsAreChecked(t *testing.T) {
	base, root := layout(t)
	outside := filepath.Join(base, "outside", "secret.txt")
	inside := filepath.Join(root, "in.txt")
	ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{root}})
	g := fsguard.New(ctx, afero.NewOsFs())

	type chmoder interface{ Chmod(fs.FileMode) error }
	type chowner interface{ Chown(int, int) error }
	type chdirer interface{ Chdir() error }
	ops := []struct {
		name string
		do   func(f afero.File) error
	}{
		{"Chmod", func(f afero.File) error { return f.(chmoder).Chmod(0o777) }},
		{"Chown", func(f afero.File) error { return f.(chowner).Chown(os.Getuid(), os.Getgid()) }},
		{"Truncate", func(f afero.File) error { return f.Truncate(0) }},
	}
	for _, op := range ops {
		t.Run(op.name+" outside", func(t *testing.T) {
			before, _ := os.Stat(outside)
			f, err := g.Open(outside)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := op.do(f); !errors.Is(err, fs.ErrPermission) {
				t.Fatalf("%s through a read handle outside the roots: %v, want a denial", op.name, err)
			}
			after, _ := os.Stat(outside)
			if before.Mode() != after.Mode() || before.Size() != after.Size() {
				t.Fatalf("%s changed the file: %v %d -> %v %d", op.name, before.Mode(), before.Size(), after.Mode(), after.Size())
			}
		})
		t.Run(op.name+" inside", func(t *testing.T) {
			f, err := g.OpenFile(inside, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := op.do(f); err != nil {
				t.Fatalf("%s inside a root: %v", op.name, err)
			}
		})
	}
	t.Run("Chmod follows a rename out of the root", func(t *testing.T) {
		p := filepath.Join(root, "moving.txt")
		write(t, p, "m")
		f, err := g.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := os.Rename(p, filepath.Join(base, "outside", "moved.txt")); err != nil {
			t.Fatal(err)
		}
		if err := f.(chmoder).Chmod(0o777); !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("chmod of a file moved outside the roots: %v", err)
		}
	})
	t.Run("Chdir is refused", func(t *testing.T) {
		wd, _ := os.Getwd()
		d, err := g.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.(chdirer).Chdir(); !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("File.Chdir: %v, want a denial", err)
		}
		if now, _ := os.Getwd(); now != wd {
			t.Fatalf("the process moved to %s", now)
		}
	})
	t.Run("the raw file is not reachable", func(t *testing.T) {
		f, err := g.Open(inside)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, ok := f.(*os.File); ok {
			t.Fatal("Open returned a raw *os.File")
		}
		if _, ok := f.(interface{ Fd() uintptr }); ok {
			t.Fatal("a guarded file offers Fd")
		}
	})
	t.Run("WithRawFiles opts out", func(t *testing.T) {
		raw := fsguard.New(ctx, afero.NewOsFs(), fsguard.WithRawFiles())
		f, err := raw.Open(inside)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, ok := f.(*os.File); !ok {
			t.Fatalf("WithRawFiles returned %T", f)
		}
	})
}
