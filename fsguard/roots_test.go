package fsguard_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// openFds counts this process's open descriptors.
func openFds(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

// TestRootDescriptorsAcrossReloads: a long-lived Fs holds one descriptor
// per write root it has used (the os.Root that some calls need is
// opened only then), whatever the number of policy reloads, and
// lets go of a root's descriptors when a reload drops the root. Writes go
// through both routes a root serves (the openat2 fast path and os.Root,
// which a rename across directories of one root takes).
func TestRootDescriptorsAcrossReloads(t *testing.T) {
	base := tempDir(t)
	var roots []string
	for i := range 3 {
		r := filepath.Join(base, "root"+strconv.Itoa(i))
		mustDo(t, os.MkdirAll(filepath.Join(r, "sub"), 0o755))
		roots = append(roots, r)
	}
	ctx, guard, _ := enter(t, policy.Spec{WriteRoots: roots, Home: base})
	fsys := fsguard.New(ctx, afero.NewOsFs())
	defer fsys.Close()
	use := func() {
		t.Helper()
		for _, r := range roots {
			mustDo(t, afero.WriteFile(fsys, filepath.Join(r, "f"), []byte("x"), 0o644))
			mustDo(t, fsys.Rename(filepath.Join(r, "f"), filepath.Join(r, "sub", "f")))
			mustDo(t, fsys.Remove(filepath.Join(r, "sub", "f")))
		}
	}
	before := openFds(t)
	use()
	start := openFds(t)
	if start-before != len(roots) {
		t.Errorf("descriptors held for %d roots: %d", len(roots), start-before)
	}
	for i := range 20 {
		pol, err := policy.New(policy.Spec{WriteRoots: roots, Home: base, Protected: []string{"gen-" + strconv.Itoa(i)}})
		mustDo(t, err)
		mustDo(t, guard.SetPolicy(context.Background(), pol))
		use()
	}
	if n := openFds(t); n != start {
		t.Fatalf("descriptors after 20 reloads with the same roots: %d, before: %d", n, start)
	}
	// Drop two roots: their descriptors go.
	pol, err := policy.New(policy.Spec{WriteRoots: roots[:1], Home: base})
	mustDo(t, err)
	mustDo(t, guard.SetPolicy(context.Background(), pol))
	mustDo(t, afero.WriteFile(fsys, filepath.Join(roots[0], "g"), []byte("x"), 0o644))
	deadline := time.Now().Add(5 * time.Second)
	for openFds(t) >= start && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := openFds(t); n >= start {
		t.Fatalf("descriptors after dropping two of three roots: %d, before: %d", n, start)
	}
	if err := afero.WriteFile(fsys, filepath.Join(roots[1], "g"), []byte("x"), 0o644); !isDenial(err) {
		t.Fatalf("write into a dropped root: %v", err)
	}
}
