//go:build linux

package policy

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// kernelResolve asks the kernel where path lands: open it with O_PATH and
// read the descriptor's real path back.
func kernelResolve(path string, follow bool) (string, bool) {
	flags := unix.O_PATH | unix.O_CLOEXEC
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(path, flags, 0)
	if err != nil {
		return "", false
	}
	defer unix.Close(fd)
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", false
	}
	return real, true
}

var fuzzNames = []string{"a", "b", "c"}

// buildLayout turns bytes into dirs, files and symbolic links under root.
func buildLayout(root string, layout []byte) {
	dirs := []string{root}
	var entries []string
	for i := 0; i+2 < len(layout) && i < 3*24; i += 3 {
		op, psel, tsel := layout[i], layout[i+1], layout[i+2]
		parent := dirs[int(psel)%len(dirs)]
		p := filepath.Join(parent, fuzzNames[int(op/3)%len(fuzzNames)])
		switch op % 3 {
		case 0:
			if os.Mkdir(p, 0o755) == nil {
				dirs = append(dirs, p)
				entries = append(entries, p)
			}
		case 1:
			if os.WriteFile(p, nil, 0o644) == nil {
				entries = append(entries, p)
			}
		case 2:
			targets := []string{"a", "../a", "..", ".", "b/c", "../../b", filepath.Base(p), "/"}
			target := targets[int(tsel)%len(targets)]
			if tsel >= 128 && len(entries) > 0 {
				target = entries[int(tsel)%len(entries)]
			}
			if os.Symlink(target, p) == nil {
				entries = append(entries, p)
			}
		}
	}
}

func buildQuery(query []byte) string {
	comps := []string{"a", "b", "c", "..", ".", ""}
	var parts []string
	for i, q := range query {
		if i == 12 {
			break
		}
		parts = append(parts, comps[int(q)%len(comps)])
	}
	return strings.Join(parts, "/")
}

// FuzzResolveMatchesKernel checks the resolver against the kernel: for random
// layouts of directories and symbolic links, wherever the kernel resolves a
// path, Resolve must give the same answer.
func FuzzResolveMatchesKernel(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 1, 0, 5, 0, 1}, []byte{0, 1, 3, 1}, true, false)
	f.Add([]byte{0, 0, 0, 3, 0, 0, 2, 1, 130, 8, 0, 1}, []byte{2, 3, 1, 0}, true, true)
	f.Add([]byte{2, 0, 6, 5, 0, 3}, []byte{0, 0, 0}, false, false)
	f.Add([]byte{0, 0, 0, 0, 1, 0, 2, 2, 1, 2, 0, 3}, []byte{0, 0, 2, 3, 3, 1}, true, true)
	f.Add([]byte{0, 0, 0, 5, 0, 4, 2, 1, 7}, []byte{1, 3, 3, 0}, true, false)
	f.Fuzz(func(t *testing.T, layout, query []byte, follow, absolute bool) {
		root := tempRoot(t)
		buildLayout(root, layout)
		q := buildQuery(query)
		if q == "" {
			return
		}
		path := q
		if absolute {
			path = root + "/" + q
		}
		abs := path
		if !strings.HasPrefix(path, "/") {
			abs = root + "/" + path
		}
		want, ok := kernelResolve(abs, follow)
		if !ok {
			return // the kernel could not resolve it either; decisions on it deny or fall back
		}
		got, err := Resolve(OSFS{}, path, root, follow)
		if err != nil {
			t.Fatalf("kernel resolved %q (follow=%v) to %q; Resolve failed: %v", path, follow, want, err)
		}
		if got != want {
			t.Fatalf("Resolve(%q, follow=%v) = %q; kernel says %q", path, follow, got, want)
		}
	})
}
