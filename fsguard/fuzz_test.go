package fsguard_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// FuzzMutationsStayInside throws names at every mutating method on the
// escape fixture (links out, a chain back in, a hard link, protected
// names) and checks that nothing outside the root ever changes, whatever
// the call returned.
func FuzzMutationsStayInside(f *testing.F) {
	for _, seed := range []string{
		"in.txt", "new.txt", "../outside/secret.txt", "../root_evil/x.txt", "sub/../../outside/x",
		"link_mid/x", "link_mid/../root/in.txt", "link_last", "dangling", "abs_in", "chain/inner.txt",
		"chain/../../outside/y", "hard.txt", ".git/hooks/pre-commit", "sub/.Env.Local", "/", ".", "..",
		"link_mid/", "sub//./inner.txt", "../root/../outside/dir/z", "/proc/self/root/tmp/x",
	} {
		f.Add(seed, uint8(0))
		f.Add(seed, uint8(128+5))
	}
	f.Fuzz(func(t *testing.T, name string, which uint8) {
		if strings.IndexByte(name, 0) >= 0 || len(name) > 200 {
			return
		}
		base, root := layout(t)
		// The link count is left out: removing or renaming the inside name
		// of a hard link changes the count the outside name reports, and
		// nothing else.
		outside := map[string]map[string]string{}
		for _, d := range []string{"outside", "root_evil"} {
			outside[d] = withoutNlink(snapshot(t, filepath.Join(base, d)))
		}
		// which >= 128 runs the call on the slow path alone.
		defer fsguard.SetFastPaths(which < 128)()
		ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{root}})
		g := fsguard.New(ctx, afero.NewOsFs(), fsguard.WithDir(root))
		in := filepath.Join(root, "in.txt")
		switch which % 128 % 12 {
		case 0:
			afero.WriteFile(g, name, []byte("x"), 0o644)
		case 1:
			g.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		case 2:
			g.MkdirAll(name, 0o755)
		case 3:
			g.Remove(name)
		case 4:
			g.RemoveAll(name)
		case 5:
			g.Rename(name, "moved")
		case 6:
			g.Rename(in, name)
		case 7:
			g.Link(in, name)
		case 8:
			g.SymlinkIfPossible(name, "newlink")
			afero.WriteFile(g, "newlink", []byte("through"), 0o644)
		case 9:
			g.Chmod(name, 0o600)
		case 10:
			g.Chtimes(name, t0, t0)
		case 11:
			g.Mkdir(name, 0o755)
		}
		for d, before := range outside {
			if diff := diffSnapshots(before, withoutNlink(snapshot(t, filepath.Join(base, d)))); len(diff) > 0 {
				t.Fatalf("op %d (byte %d) on %q changed %s: %v", which%128%12, which, name, d, diff)
			}
		}
	})
}

func withoutNlink(snap map[string]string) map[string]string {
	out := make(map[string]string, len(snap))
	for p, d := range snap {
		var keep []string
		for _, f := range strings.Fields(d) {
			if !strings.HasPrefix(f, "nlink=") {
				keep = append(keep, f)
			}
		}
		out[p] = strings.Join(keep, " ")
	}
	return out
}
