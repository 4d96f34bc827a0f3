package fsguard_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// TestLinkFidelity: where symbolic links meet trailing slashes and
// MkdirAll, the guard has the OS's effect and error, on twin fresh
// layouts: a link to a directory, a dangling link, a file, a directory.
// RemoveAll of "link/" removes the link, never its target's contents;
// MkdirAll through a link to nothing fails as os.MkdirAll does instead of
// making the link's target.
func TestLinkFidelity(t *testing.T) {
	layout := func(t *testing.T) string {
		dir := t.TempDir()
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.MkdirAll(filepath.Join(dir, "target"), 0o755))
		must(os.WriteFile(filepath.Join(dir, "target", "f"), []byte("x"), 0o644))
		must(os.Mkdir(filepath.Join(dir, "empty"), 0o755))
		must(os.Symlink("target", filepath.Join(dir, "link")))
		must(os.Symlink("empty", filepath.Join(dir, "elink")))
		must(os.Symlink("missing", filepath.Join(dir, "dangling")))
		must(os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644))
		must(os.Mkdir(filepath.Join(dir, "dir"), 0o755))
		return dir
	}
	state := func(dir string) map[string]bool {
		out := map[string]bool{}
		for _, n := range []string{"target", "target/f", "target/x", "empty", "link", "elink", "dangling", "missing", "missing/x", "file", "dir"} {
			_, err := os.Lstat(filepath.Join(dir, n))
			out[n] = err == nil
		}
		return out
	}
	for _, tc := range []struct {
		name string
		op   func(afero.Fs, string) error
	}{
		{"Remove link/", func(f afero.Fs, d string) error { return f.Remove(filepath.Join(d, "link") + "/") }},
		{"Remove elink/ (to an empty dir)", func(f afero.Fs, d string) error { return f.Remove(filepath.Join(d, "elink") + "/") }},
		{"Remove dangling/", func(f afero.Fs, d string) error { return f.Remove(filepath.Join(d, "dangling") + "/") }},
		{"RemoveAll link/", func(f afero.Fs, d string) error { return f.RemoveAll(filepath.Join(d, "link") + "/") }},
		{"RemoveAll elink//", func(f afero.Fs, d string) error { return f.RemoveAll(filepath.Join(d, "elink") + "//") }},
		{"RemoveAll file/", func(f afero.Fs, d string) error { return f.RemoveAll(filepath.Join(d, "file") + "/") }},
		{"RemoveAll dir/", func(f afero.Fs, d string) error { return f.RemoveAll(filepath.Join(d, "dir") + "/") }},
		{"Remove dir/", func(f afero.Fs, d string) error { return f.Remove(filepath.Join(d, "dir") + "/") }},
		{"MkdirAll dangling", func(f afero.Fs, d string) error { return f.MkdirAll(filepath.Join(d, "dangling"), 0o755) }},
		{"MkdirAll dangling/x", func(f afero.Fs, d string) error { return f.MkdirAll(filepath.Join(d, "dangling", "x"), 0o755) }},
		{"MkdirAll link/x", func(f afero.Fs, d string) error { return f.MkdirAll(filepath.Join(d, "link", "x"), 0o755) }},
		{"Mkdir dangling", func(f afero.Fs, d string) error { return f.Mkdir(filepath.Join(d, "dangling"), 0o755) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rawDir, gDir := layout(t), layout(t)
			rawErr := tc.op(afero.NewOsFs(), rawDir)
			gErr := tc.op(guarded(t, gDir), gDir)
			if errString(rawErr, rawDir) != errString(gErr, gDir) {
				t.Errorf("error: os %v, guard %v", rawErr, gErr)
			}
			rs, gs := state(rawDir), state(gDir)
			for n := range rs {
				if rs[n] != gs[n] {
					t.Errorf("%s exists: os %v, guard %v", n, rs[n], gs[n])
				}
			}
		})
	}
}

// guarded is a guarded OS filesystem whose only write root is dir.
func guarded(t *testing.T, dir string) afero.Fs {
	t.Helper()
	p, err := policy.New(policy.Spec{WriteRoots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(p, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return fsguard.New(ctx, afero.NewOsFs())
}

// errString renders err with its directory replaced, so twin layouts
// compare.
func errString(err error, dir string) string {
	if err == nil {
		return "<nil>"
	}
	s := err.Error()
	for i := 0; i+len(dir) <= len(s); i++ {
		if s[i:i+len(dir)] == dir {
			return s[:i] + "DIR" + s[i+len(dir):]
		}
	}
	return s
}
