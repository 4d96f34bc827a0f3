package fsguard_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// Names no system call can take (empty, or holding a NUL byte) get exactly
// afero.OsFs's answer from every method: the same error type, operation,
// names and errno, and the same (absent) effect. The guarded handle's
// working directory and the process's are the same directory, a write
// root, so an effect on the working directory would show on both.
func TestBadNamesSameAsOsFs(t *testing.T) {
	dir := tempDir(t)
	t.Chdir(dir)
	ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{dir}})
	raw := afero.NewOsFs()
	g := fsguard.New(ctx, afero.NewOsFs())
	write(t, dir+"/f", "f")

	type call func(fsys afero.Fs, n string) error
	methods := []struct {
		name string
		do   call
	}{
		{"Open", func(fsys afero.Fs, n string) error { f, err := fsys.Open(n); closeIf(f); return err }},
		{"Create", func(fsys afero.Fs, n string) error { f, err := fsys.Create(n); closeIf(f); return err }},
		{"OpenFile write", func(fsys afero.Fs, n string) error {
			f, err := fsys.OpenFile(n, os.O_WRONLY|os.O_CREATE, 0o644)
			closeIf(f)
			return err
		}},
		{"Stat", func(fsys afero.Fs, n string) error { _, err := fsys.Stat(n); return err }},
		{"Lstat", func(fsys afero.Fs, n string) error { _, _, err := fsys.(afero.Lstater).LstatIfPossible(n); return err }},
		{"Readlink", func(fsys afero.Fs, n string) error {
			_, err := fsys.(afero.LinkReader).ReadlinkIfPossible(n)
			return err
		}},
		{"Mkdir", func(fsys afero.Fs, n string) error { return fsys.Mkdir(n, 0o755) }},
		{"MkdirAll", func(fsys afero.Fs, n string) error { return fsys.MkdirAll(n, 0o755) }},
		{"Remove", func(fsys afero.Fs, n string) error { return fsys.Remove(n) }},
		{"RemoveAll", func(fsys afero.Fs, n string) error { return fsys.RemoveAll(n) }},
		{"Chmod", func(fsys afero.Fs, n string) error { return fsys.Chmod(n, 0o700) }},
		{"Chtimes", func(fsys afero.Fs, n string) error { return fsys.Chtimes(n, t0, t0) }},
		{"Rename from", func(fsys afero.Fs, n string) error { return fsys.Rename(n, "g") }},
		{"Rename to", func(fsys afero.Fs, n string) error { return fsys.Rename("f", n) }},
		{"Symlink target", func(fsys afero.Fs, n string) error { return fsys.(afero.Linker).SymlinkIfPossible(n, "l") }},
		{"Symlink name", func(fsys afero.Fs, n string) error { return fsys.(afero.Linker).SymlinkIfPossible("f", n) }},
	}
	for _, name := range []string{"", "a\x00b", "f\x00"} {
		for _, m := range methods {
			t.Run(fmt.Sprintf("%s %q", m.name, name), func(t *testing.T) {
				before := dirState(t, dir)
				want := m.do(raw, name)
				mid := dirState(t, dir)
				got := m.do(g, name)
				after := dirState(t, dir)
				if !sameError(got, want) {
					t.Fatalf("guarded: %#v\n   OsFs: %#v", got, want)
				}
				if !reflect.DeepEqual(before, mid) || !reflect.DeepEqual(mid, after) {
					t.Fatalf("effects differ: before %v, after OsFs %v, after guarded %v", before, mid, after)
				}
			})
		}
	}
}

func closeIf(f afero.File) {
	if f != nil {
		f.Close()
	}
}

// sameError reports whether a and b are the same error: both nil, or the
// same type with the same operation, names and underlying error.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var pa, pb *fs.PathError
	if errors.As(a, &pa) && errors.As(b, &pb) {
		return pa.Op == pb.Op && pa.Path == pb.Path && errors.Is(pa.Err, pb.Err) && errors.Is(pb.Err, pa.Err)
	}
	var la, lb *os.LinkError
	if errors.As(a, &la) && errors.As(b, &lb) {
		return la.Op == lb.Op && la.Old == lb.Old && la.New == lb.New && errors.Is(la.Err, lb.Err) && errors.Is(lb.Err, la.Err)
	}
	return false
}

// dirState lists dir's entries with their modes and sizes.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fi, err := os.Lstat(dir + "/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fmt.Sprintf("%v %d %v", fi.Mode(), fi.Size(), fi.ModTime().Equal(time.Time{}))
	}
	return out
}
