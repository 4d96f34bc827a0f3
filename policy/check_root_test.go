package policy

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestDecisionNamesItsRoot: an allowing decision by a root carries the
// root's directory, the deepest when roots nest, spelled as the resolved
// path is (a root given through a symbolic link matches by its target);
// the "." root names the working directory; every other decision names
// none. Root is always one of WriteRoots, ReadRoots or cwd.
func TestDecisionNamesItsRoot(t *testing.T) {
	base := tempRoot(t)
	work := filepath.Join(base, "work")
	inner := filepath.Join(work, "vendor")
	data := filepath.Join(base, "data")
	real := filepath.Join(base, "real")
	link := filepath.Join(base, "link")
	for _, d := range []string{inner, data, real} {
		mustMkdir(t, d)
	}
	mustSymlink(t, real, link)
	cwd := filepath.Join(base, "cwd")
	p := mustPolicy(t, Spec{WriteRoots: []string{work, inner, link, "."}, ReadRoots: []string{data}})

	tests := []struct {
		name string
		op   Op
		path string
		root string // "" for no root
	}{
		{"write in a root", OpWrite, work + "/src/main.go", work},
		{"write in the nested root", OpWrite, inner + "/x/y.go", inner},
		{"the root itself", OpAttr, work, work},
		{"a root given by a link matches by its target", OpWrite, real + "/f", real},
		{"the dot root", OpWrite, cwd + "/f", cwd},
		{"chdir in a root", OpChdir, inner, inner},
		{"read in a read root", OpRead, data + "/table.csv", data},
		{"read in a write root", OpRead, work + "/README", work},
		{"read through the dot root", OpRead, cwd + "/notes", cwd},
		{"denied outside the roots", OpWrite, base + "/elsewhere", ""},
		{"denied by a protected name", OpWrite, work + "/.bashrc", ""},
		{"denied removing a root", OpDelete, inner, ""},
		{"denied reading outside the read roots", OpRead, "/etc/hostname", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.CheckPath(tt.op, tt.path, cwd)
			if d.Root != tt.root {
				t.Fatalf("CheckPath(%v, %q).Root = %q, want %q (%+v)", tt.op, tt.path, d.Root, tt.root, d)
			}
			if d.Root == "" {
				return
			}
			if !d.Allowed || !Within(tt.path, d.Root) {
				t.Fatalf("Root %q on %+v", d.Root, d)
			}
			if d.Root != cwd && !slices.Contains(p.WriteRoots(), d.Root) && !slices.Contains(p.ReadRoots(), d.Root) {
				t.Fatalf("Root %q is not one of the policy's roots %q %q", d.Root, p.WriteRoots(), p.ReadRoots())
			}
		})
	}
	inInner, inCwd := inner+"/x/y.go", cwd+"/notes"
	allocs := testing.AllocsPerRun(100, func() {
		_ = p.CheckPath(OpWrite, inInner, cwd)
		_ = p.CheckPath(OpRead, inCwd, cwd)
	})
	if allocs != 0 {
		t.Errorf("CheckPath with a root allocates %.1f times", allocs)
	}
}
