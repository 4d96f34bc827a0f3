package fsguard_test

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// readOpsAll are the reads each read-escape case runs on its path.
var readOpsAll = map[string]func(g *fsguard.Fs, p string) error{
	"open": func(g *fsguard.Fs, p string) error {
		f, err := g.Open(p)
		if err == nil {
			_, err = io.ReadAll(f)
			f.Close()
		}
		return err
	},
	"stat":     func(g *fsguard.Fs, p string) error { _, err := g.Stat(p); return err },
	"lstat":    func(g *fsguard.Fs, p string) error { _, _, err := g.LstatIfPossible(p); return err },
	"readlink": func(g *fsguard.Fs, p string) error { _, err := g.ReadlinkIfPossible(p); return err },
}

// TestReadEscapeTable: with read-deny entries in force (a directory tree
// and a name pattern), every read of a denied file is denied however the
// name reaches it (directly, through a link in the middle or at the end,
// through ".."), on every route (fast, fast with a callback, slow); reads
// of a link itself, and of allowed files reached through links, are not.
func TestReadEscapeTable(t *testing.T) {
	cases := []struct {
		path        string // relative to base
		deny, allow []string
	}{
		{"outside/secret.txt", []string{"open", "stat", "lstat"}, nil},
		{"outside", []string{"open", "stat", "lstat"}, nil},
		{"root/link_mid/secret.txt", []string{"open", "stat", "lstat"}, nil},
		{"root/link_mid", []string{"open", "stat"}, []string{"lstat", "readlink"}},
		{"root/link_last", []string{"open", "stat"}, []string{"lstat", "readlink"}},
		{"root/sub/../../outside/secret.txt", []string{"open", "stat", "lstat"}, nil},
		{"root/dangling", []string{"open", "stat"}, []string{"lstat", "readlink"}},
		{"root/sub/key.pem", []string{"open", "stat", "lstat"}, nil},
		{"root/pem_link", []string{"open", "stat"}, []string{"lstat", "readlink"}},
		{"root/in.txt", nil, []string{"open", "stat", "lstat"}},
		{"root/abs_in", nil, []string{"open", "stat", "lstat", "readlink"}},
		{"root/chain/inner.txt", nil, []string{"open", "stat", "lstat"}},
		{"root/sub", nil, []string{"open", "stat", "lstat"}},
		{"root/missing", nil, []string{"open", "stat", "lstat"}},
	}
	for _, v := range pathVariants {
		t.Run(v.name, func(t *testing.T) {
			defer fsguard.SetFastPaths(v.fast)()
			base, root := layout(t)
			write(t, filepath.Join(root, "sub", "key.pem"), "KEY")
			mustDo(t, os.Symlink("sub/key.pem", filepath.Join(root, "pem_link")))
			ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{root}, ReadDeny: []string{filepath.Join(base, "outside"), "*.pem"}},
				variantOpts(v.onCall)...)
			g := fsguard.New(ctx, afero.NewOsFs(), fsguard.WithDir(root))
			for _, c := range cases {
				for want, ops := range map[string][]string{"deny": c.deny, "allow": c.allow} {
					for _, op := range ops {
						err := readOpsAll[op](g, filepath.Join(base, c.path))
						if (want == "deny") != isDenial(err) {
							t.Errorf("%s %s: want %s, got %v", op, c.path, want, err)
						}
					}
				}
			}
		})
	}
}

// TestRaceSwappedDirectoryReads keeps swapping root/d between a real
// directory and a symbolic link to a read-denied directory while readers
// keep opening and stating d/f through the guard: whatever the
// interleaving, the denied file's content and size are never seen. The
// fast read opens the file itself without following any link, so a swap
// between decision and open cannot redirect it.
func TestRaceSwappedDirectoryReads(t *testing.T) {
	for _, v := range pathVariants {
		if !v.fast {
			continue // the slow path reads by name: see docs/permission-model.md
		}
		t.Run(v.name, func(t *testing.T) {
			base := tempDir(t)
			root, out := filepath.Join(base, "root"), filepath.Join(base, "outside")
			write(t, filepath.Join(root, "d", "f"), "ok")
			write(t, filepath.Join(out, "f"), "SECRET!")
			ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{root}, ReadDeny: []string{out}}, variantOpts(v.onCall)...)
			g := fsguard.New(ctx, afero.NewOsFs(), fsguard.WithDir(root))

			const minReads, maxReads, minSwaps = 1000, 20000, 300
			var swaps atomic.Int64
			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, keep := filepath.Join(root, "d"), filepath.Join(root, "d.keep")
				for {
					select {
					case <-done:
						return
					default:
					}
					if err := os.Rename(d, keep); err != nil {
						t.Error(err)
						return
					}
					if err := os.Symlink(out, d); err != nil {
						t.Error(err)
						return
					}
					if err := os.Remove(d); err != nil {
						t.Error(err)
						return
					}
					if err := os.Rename(keep, d); err != nil {
						t.Error(err)
						return
					}
					swaps.Add(1)
				}
			}()
			seen := 0
			for i := 0; i < maxReads && (i < minReads || swaps.Load() < minSwaps); i++ {
				if b, err := afero.ReadFile(g, "d/f"); err == nil {
					seen++
					if string(b) != "ok" {
						t.Errorf("read the denied file: %q", b)
					}
				}
				if fi, err := g.Stat("d/f"); err == nil && fi.Size() != 2 {
					t.Errorf("stat the denied file: size %d", fi.Size())
				}
				if fi, _, err := g.LstatIfPossible("d/f"); err == nil && fi.Size() != 2 {
					t.Errorf("lstat the denied file: size %d", fi.Size())
				}
			}
			close(done)
			wg.Wait()
			if swaps.Load() == 0 || seen == 0 {
				t.Fatalf("no interleaving: %d swaps, %d reads", swaps.Load(), seen)
			}
		})
	}
}
