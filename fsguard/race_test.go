package fsguard_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// TestRaceSwappedDirectory keeps swapping root/d between a real directory
// and a symbolic link to an outside directory (absolute and relative, in
// turn) while another goroutine keeps writing under root/d through the
// guard. Whatever the interleaving, nothing may land outside: a swap
// between the check and the system call is caught by the os.Root the
// write goes through.
func TestRaceSwappedDirectory(t *testing.T) {
	for _, v := range pathVariants {
		t.Run(v.name, func(t *testing.T) {
			defer fsguard.SetFastPaths(v.fast)()
			raceSwappedDirectory(t, variantOpts(v.onCall))
		})
	}
}

func raceSwappedDirectory(t *testing.T, opts []audit.Option) {
	base := tempDir(t)
	root := filepath.Join(base, "root")
	out := filepath.Join(base, "outside")
	mustDo(t, os.MkdirAll(filepath.Join(root, "d"), 0o755), os.Mkdir(out, 0o755))
	ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{root}}, opts...)
	g := fsguard.New(ctx, afero.NewOsFs(), fsguard.WithDir(root))

	// The writer runs at least minWrites iterations and goes on (up to
	// maxWrites) until the swapper has swapped minSwaps times, so both
	// sides really interleave on a slow or busy machine.
	const minWrites, maxWrites, minSwaps, maxSwaps = 1000, 20000, 500, 200000
	done := make(chan struct{})
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		d, keep := filepath.Join(root, "d"), filepath.Join(root, "d.keep")
		targets := []string{out, "../outside"}
		for swaps.Load() < maxSwaps {
			select {
			case <-done:
				return
			default:
			}
			// d becomes a link out, then the real directory again.
			if err := os.Rename(d, keep); err != nil {
				t.Error(err)
				return
			}
			if err := os.Symlink(targets[swaps.Load()%2], d); err != nil {
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

	ok, i := 0, 0
	for ; i < maxWrites && (i < minWrites || swaps.Load() < minSwaps); i++ {
		name := fmt.Sprintf("d/f-%d", i)
		if f, err := g.Create(name); err == nil {
			f.WriteString("x")
			f.Close()
			ok++
		}
		g.Mkdir(fmt.Sprintf("d/dir-%d", i), 0o755)
		g.Chmod(name, 0o600)
		g.SymlinkIfPossible("f", fmt.Sprintf("d/l-%d", i))
		g.Rename(name, name+".renamed")
	}
	close(done)
	wg.Wait()

	if got := entries(t, out); len(got) > 0 {
		t.Fatalf("%d entries landed outside the root: %v", len(got), got[:min(len(got), 10)])
	}
	t.Logf("%d swaps, %d of %d creates succeeded, 0 entries outside", swaps.Load(), ok, i)
	if swaps.Load() == 0 {
		t.Fatal("the swapper never ran")
	}
}

// TestConcurrentUse shares one handle between goroutines that write, read,
// rename and remove, while another moves the handle's working directory
// back and forth; run under -race it checks the handle's own state.
func TestConcurrentUse(t *testing.T) {
	root := tempDir(t)
	mustDo(t, os.MkdirAll(filepath.Join(root, "x"), 0o755), os.MkdirAll(filepath.Join(root, "y"), 0o755))
	ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{root}})
	g := fsguard.New(ctx, afero.NewOsFs(), fsguard.WithDir(filepath.Join(root, "x")))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				name := filepath.Join(root, fmt.Sprintf("w%d-%d", w, i))
				if err := afero.WriteFile(g, name, []byte("x"), 0o644); err != nil {
					t.Error(err)
					return
				}
				if _, err := g.Stat(name); err != nil {
					t.Error(err)
				}
				if err := g.Rename(name, name+".r"); err != nil {
					t.Error(err)
				}
				if err := g.Remove(name + ".r"); err != nil {
					t.Error(err)
				}
				// Relative names land in whichever directory is current.
				if err := afero.WriteFile(g, fmt.Sprintf("rel-%d-%d", w, i), nil, 0o644); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 400 {
			dir := filepath.Join(root, []string{"x", "y"}[i%2])
			if err := g.Chdir(dir); err != nil {
				t.Error(err)
				return
			}
			if wd, _ := g.Getwd(); wd != filepath.Join(root, "x") && wd != filepath.Join(root, "y") {
				t.Errorf("Getwd = %q", wd)
			}
		}
	}()
	wg.Wait()
	if n := len(entries(t, filepath.Join(root, "x"))) + len(entries(t, filepath.Join(root, "y"))); n != 800 {
		t.Fatalf("%d relative files landed in x and y, want 800; the root holds %v", n, entries(t, root))
	}
}

// TestCloseWhileInUse closes the handle's root descriptors while calls are
// in flight: calls may fail, but nothing may land anywhere but the root,
// and the handle keeps working afterwards.
func TestCloseWhileInUse(t *testing.T) {
	base := tempDir(t)
	root := filepath.Join(base, "root")
	mustDo(t, os.MkdirAll(filepath.Join(root, "d"), 0o755))
	ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{root}})
	g := fsguard.New(ctx, afero.NewOsFs(), fsguard.WithDir(root))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 2000 {
			select {
			case <-stop:
				return
			default:
			}
			g.Close()
			// Unrelated descriptors, so a reused number would show.
			if f, err := os.CreateTemp(base, "other-"); err == nil {
				f.Close()
				os.Remove(f.Name())
			}
		}
	}()
	for i := range 1000 {
		name := fmt.Sprintf("d/f-%d", i)
		afero.WriteFile(g, name, []byte("x"), 0o644)
		g.Rename(name, name+".r")
		g.Remove(name + ".r")
		g.Mkdir(fmt.Sprintf("d/m-%d", i), 0o755)
	}
	close(stop)
	wg.Wait()
	for _, e := range entries(t, base) {
		if e != "root" && !strings.HasPrefix(e, "root/") {
			t.Errorf("entry outside the root: %s", e)
		}
	}
	mustDo(t, afero.WriteFile(g, "after.txt", nil, 0o644), g.Close())
}
