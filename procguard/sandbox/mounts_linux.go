//go:build linux

package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
)

// Mounts change only the sandbox's private mount namespace. They are the
// hard half of the filesystem rules: a masked or read-only mount holds
// whatever the target does, while the seccomp supervisor (supervisor_linux.go)
// covers what mounts cannot: names that do not exist yet, and names deeper
// than the scan looks.

// Scan bounds: a root is walked this deep and this wide for existing
// protected and read-denied names. Past them only the supervisor judges.
const (
	scanDepth   = 6
	scanEntries = 20000
)

// maskReadDeny makes every existing read-denied path unreadable: the
// absolute entries of every policy, and the pattern matches found in the
// write and read roots. A directory gets an empty read-only tmpfs with mode
// 000 over it; a file gets /dev/null bound read-only over it (reads see
// nothing).
func maskReadDeny(st *initState) error {
	var targets []string
	for _, f := range st.spec.Files {
		for _, e := range f.ReadDeny {
			if filepath.IsAbs(e) {
				targets = append(targets, e)
			}
		}
	}
	for _, root := range st.roots(true) {
		st.scan(root, func(path string) (match, descend bool) {
			if st.denied(policy.OpRead, path, policy.KindReadDeny) {
				return true, false
			}
			return false, true
		}, func(path string) { targets = append(targets, path) })
	}
	for _, t := range dedupe(targets) {
		var sb unix.Stat_t
		if err := unix.Lstat(t, &sb); err != nil || sb.Mode&unix.S_IFMT == unix.S_IFLNK {
			continue // missing, or a link whose target has its own spelling
		}
		var err error
		if sb.Mode&unix.S_IFMT == unix.S_IFDIR {
			err = unix.Mount("tmpfs", t, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=000,size=4k")
		} else {
			err = bindReadOnly("/dev/null", t)
		}
		if err != nil {
			return &fs.PathError{Op: "mask", Path: t, Err: err}
		}
		st.report.Masked = append(st.report.Masked, t)
	}
	return nil
}

// protectNames binds every existing protected path inside a write root
// read-only over itself: its content cannot change, and it cannot be
// removed or replaced (a mount point is busy).
func protectNames(st *initState) error {
	var targets []string
	writeRoots := st.roots(false)
	for _, f := range st.spec.Files {
		for _, e := range f.Protected {
			if filepath.IsAbs(e) && slices.ContainsFunc(writeRoots, func(r string) bool { return policy.Within(e, r) }) {
				targets = append(targets, e)
			}
		}
	}
	for _, root := range writeRoots {
		st.scan(root, func(path string) (match, descend bool) {
			if st.denied(policy.OpWrite, path, policy.KindProtected) {
				return true, false
			}
			return false, true
		}, func(path string) { targets = append(targets, path) })
	}
	for _, t := range dedupe(targets) {
		var sb unix.Stat_t
		if err := unix.Lstat(t, &sb); err != nil || sb.Mode&unix.S_IFMT == unix.S_IFLNK {
			continue
		}
		if err := bindReadOnly(t, t); err != nil {
			return &fs.PathError{Op: "bind read-only", Path: t, Err: err}
		}
		st.report.ReadOnly = append(st.report.ReadOnly, t)
	}
	return nil
}

// bindReadOnly binds src over dst and makes that mount read-only, keeping
// the flags the outer namespace locked (a user namespace may add
// restrictions, never drop them).
func bindReadOnly(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(dst, &sfs); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(sfs.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	return unix.Mount("", dst, "", flags, "")
}

// roots lists the existing, resolved write roots (and, with reads, the read
// roots too), each once.
func (st *initState) roots(reads bool) []string {
	var out []string
	for _, f := range st.spec.Files {
		cand := f.WriteRoots
		if reads {
			cand = append(slices.Clone(cand), f.ReadRoots...)
		}
		for _, r := range cand {
			real, err := filepath.EvalSymlinks(r)
			if err == nil && real == r {
				out = append(out, r)
			}
		}
	}
	return dedupe(out)
}

// denied reports whether some policy denies op on path by a rule of kind.
func (st *initState) denied(op policy.Op, path string, kind policy.RuleKind) bool {
	for _, p := range st.pols {
		if d := p.CheckPath(op, path, ""); !d.Allowed && d.Rule != nil && d.Rule.Kind == kind {
			return true
		}
	}
	return false
}

// scan walks root breadth-first, bounded by scanDepth and scanEntries,
// never following symbolic links, and calls found for each path test
// matches.
func (st *initState) scan(root string, test func(string) (match, descend bool), found func(string)) {
	type dir struct {
		path  string
		depth int
	}
	queue := []dir{{root, 0}}
	seen := 0
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		ents, err := os.ReadDir(d.path)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if seen++; seen > scanEntries {
				st.report.ScanTruncated = true
				return
			}
			p := filepath.Join(d.path, e.Name())
			match, descend := test(p)
			if match {
				found(p)
			}
			if descend && e.IsDir() && d.depth+1 < scanDepth {
				queue = append(queue, dir{p, d.depth + 1})
			}
		}
	}
}

func dedupe(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
