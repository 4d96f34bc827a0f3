package fsguard_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// TestCheckIsTheRealRoute: for each case, Check's answer is what the call
// its Op stands for then does. Check acts on nothing, writes no record,
// and the host callback sees DryRun; the real call sees it unset.
// The cases include the drift an earlier Check had: a create through a
// final symbolic link (MkdirAll follows it).
func TestCheckIsTheRealRoute(t *testing.T) {
	root, outside := tempDir(t), tempDir(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "file.txt"), nil, 0o644))
	must(os.WriteFile(filepath.Join(root, "hard.txt"), nil, 0o644))
	must(os.Link(filepath.Join(root, "hard.txt"), filepath.Join(outside, "hard-too.txt")))
	must(os.Mkdir(filepath.Join(root, ".git"), 0o755))
	must(os.Mkdir(filepath.Join(outside, "dir"), 0o755))
	// to-outside-new: a final link to a directory that does not exist yet,
	// outside the roots; MkdirAll would make it there.
	must(os.Symlink(filepath.Join(outside, "new-dir"), filepath.Join(root, "to-outside-new")))
	must(os.Symlink(filepath.Join(outside, "dir"), filepath.Join(root, "to-outside-dir")))
	must(os.Symlink(filepath.Join(outside, "new.txt"), filepath.Join(root, "dangling")))
	must(os.Symlink(filepath.Join(outside, "del.txt"), filepath.Join(root, "link-to-remove")))

	var mu sync.Mutex
	var dry []bool
	ctx, _, rec := enter(t, policy.Spec{WriteRoots: []string{root}},
		audit.WithOnCall(func(_ context.Context, ev *audit.Event) audit.Verdict {
			mu.Lock()
			dry = append(dry, ev.DryRun)
			mu.Unlock()
			return audit.Continue
		}))
	g := fsguard.New(ctx, afero.NewOsFs(), fsguard.WithDir(root))
	t.Cleanup(func() { g.Close() })

	calls := map[policy.Op]func(name string) error{
		policy.OpRead: func(n string) error {
			f, err := g.Open(n)
			if err == nil {
				f.Close()
			}
			return err
		},
		policy.OpWrite: func(n string) error {
			f, err := g.Create(n)
			if err == nil {
				f.Close()
			}
			return err
		},
		policy.OpCreate: func(n string) error { return g.MkdirAll(n, 0o755) },
		policy.OpDelete: g.Remove,
		policy.OpAttr:   func(n string) error { return g.Chmod(n, 0o600) },
		policy.OpChdir:  g.Chdir,
	}
	for _, tc := range []struct {
		name    string
		op      policy.Op
		target  string
		allowed bool
	}{
		{"read in the root", policy.OpRead, "file.txt", true},
		{"read outside", policy.OpRead, filepath.Join(outside, "hard-too.txt"), true},
		{"write in the root", policy.OpWrite, "new.txt", true},
		{"write outside", policy.OpWrite, filepath.Join(outside, "x.txt"), false},
		{"write a protected name", policy.OpWrite, ".git/config", false},
		{"write through a dangling link", policy.OpWrite, "dangling", false},
		{"write a file with two names", policy.OpWrite, "hard.txt", false},
		{"create in the root", policy.OpCreate, "a/b/c", true},
		{"create outside", policy.OpCreate, filepath.Join(outside, "made"), false},
		{"create through a final link to nothing outside", policy.OpCreate, "to-outside-new", false},
		{"create of an existing dir through a link", policy.OpCreate, "to-outside-dir", true},
		{"delete a link itself", policy.OpDelete, "link-to-remove", true},
		{"delete outside", policy.OpDelete, filepath.Join(outside, "dir"), false},
		{"chmod in the root", policy.OpAttr, "file.txt", true},
		{"chmod through a link outside", policy.OpAttr, "to-outside-dir", false},
		{"chdir", policy.OpChdir, root, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			dry = nil
			mu.Unlock()
			before := snapshot(t, root)
			d := g.Check(tc.op, tc.target)
			if diff := diffSnapshots(before, snapshot(t, root)); len(diff) > 0 {
				t.Fatalf("Check acted: %v", diff)
			}
			if n := len(rec.Records()); n != 0 {
				t.Fatalf("Check left %d records", n)
			}
			mu.Lock()
			if len(dry) != 1 || !dry[0] {
				t.Fatalf("OnCall saw DryRun %v, want [true]", dry)
			}
			dry = nil
			mu.Unlock()
			if d.Allowed != tc.allowed || d.Allowed != (d.Err == nil) {
				t.Fatalf("Check = %+v, want allowed=%v", d, tc.allowed)
			}

			err := calls[tc.op](tc.target)
			rec.Reset()
			mu.Lock()
			if len(dry) == 0 || dry[0] {
				t.Fatalf("OnCall saw DryRun %v in the real call", dry)
			}
			mu.Unlock()
			if d.Allowed {
				if err != nil {
					t.Fatalf("Check allowed it; the call failed: %v", err)
				}
				return
			}
			var pe, dpe *fs.PathError
			var de, dde *audit.DenyError
			if !errors.As(err, &pe) || !errors.As(d.Err, &dpe) || !errors.As(err, &de) || !errors.As(d.Err, &dde) {
				t.Fatalf("call: %v; Check: %v: want *fs.PathError around *audit.DenyError", err, d.Err)
			}
			if !errors.Is(d.Err, fs.ErrPermission) || pe.Op != dpe.Op || pe.Path != dpe.Path {
				t.Fatalf("Check's error %#v, the call's %#v", dpe, pe)
			}
			if de.Decision.Rule != dde.Decision.Rule || de.Decision.Tier != dde.Decision.Tier || de.By != dde.By || de.Resolved != dde.Resolved {
				t.Fatalf("the call was denied by %v (%v, %s); Check said %v (%v, %s)",
					de.Decision.Rule, de.By, de.Resolved, dde.Decision.Rule, dde.By, dde.Resolved)
			}
		})
	}
	if err := g.Chdir(root); err != nil {
		t.Fatal(err)
	}
}

// TestCheckWithoutScope: a released scope's Check is denied by the scope
// rules, as the call is.
func TestCheckWithoutScope(t *testing.T) {
	root := tempDir(t)
	pol, err := policy.New(policy.Spec{WriteRoots: []string{root}, Home: root})
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(pol, audit.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fsys := fsguard.New(ctx, afero.NewOsFs())
	release()
	d := fsys.Check(policy.OpWrite, filepath.Join(root, "x"))
	var de *audit.DenyError
	if d.Allowed || d.By != audit.ByScope || !errors.As(d.Err, &de) || !errors.Is(d.Err, audit.ErrScopeClosed) {
		t.Fatalf("Check after release = %+v", d)
	}
	_, err = fsys.Create(filepath.Join(root, "x"))
	if !errors.Is(err, audit.ErrScopeClosed) {
		t.Fatalf("Create after release: %v", err)
	}
}
