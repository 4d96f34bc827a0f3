package fsguard_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// tempDir returns a fresh temp dir with its symbolic links resolved, so
// expectations about resolved paths hold where TMPDIR is itself a link.
func tempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// enter builds a guard over spec and enters it. The scope is released when
// the test ends.
func enter(t testing.TB, spec policy.Spec, opts ...audit.Option) (context.Context, *audit.Guard, *audit.Recorder) {
	t.Helper()
	if spec.Home == "" {
		spec.Home = tempDir(t)
	}
	pol, err := policy.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	rec := audit.NewRecorder()
	opts = append([]audit.Option{audit.WithLogger(quiet), audit.WithRecorder(rec)}, opts...)
	g, err := audit.New(pol, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return ctx, g, rec
}

func mustDo(t testing.TB, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func write(t testing.TB, path, content string) {
	t.Helper()
	mustDo(t, os.MkdirAll(filepath.Dir(path), 0o755), os.WriteFile(path, []byte(content), 0o644))
}

// isDenial reports whether err is an auditguard denial in the shape the
// issue asks for: a *fs.PathError or *os.LinkError wrapping *audit.DenyError.
// (os.IsPermission cannot say yes to it: it predates errors.Is and only
// looks one level down for fs.ErrPermission itself or an errno, so nothing
// that wraps a DenyError satisfies it. errors.Is(err, fs.ErrPermission) is
// the check that works.)
func isDenial(err error) bool {
	var de *audit.DenyError
	if !errors.As(err, &de) || !errors.Is(err, fs.ErrPermission) {
		return false
	}
	var pe *fs.PathError
	var le *os.LinkError
	return errors.As(err, &pe) || errors.As(err, &le)
}

// snapshot describes every entry under dir (links not followed): type,
// permissions, owner, link count, times, size, content hash, link target.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		uid, gid, nlink := ownerOf(fi)
		desc := fmt.Sprintf("%v uid=%d gid=%d nlink=%d mtime=%d size=%d", fi.Mode(), uid, gid, nlink,
			fi.ModTime().UnixNano(), fi.Size())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			desc += " sha=" + hex.EncodeToString(sum[:8])
		}
		out[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffSnapshots lists what changed between two snapshots.
func diffSnapshots(before, after map[string]string) []string {
	var d []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			d = append(d, "removed "+p)
		case a != b:
			d = append(d, "changed "+p+": "+b+" => "+a)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			d = append(d, "added "+p)
		}
	}
	slices.Sort(d)
	return d
}

func entries(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			out = append(out, strings.TrimPrefix(p, dir+"/"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
