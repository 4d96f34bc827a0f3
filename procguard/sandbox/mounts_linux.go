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

// scanRoots finds, in one walk of the write and read roots, the existing
// paths maskReadDeny and protectNames cover: read-denied paths anywhere
// in them, protected paths inside write roots. The absolute entries of
// every policy are added as they are.
func scanRoots(st *initState) error {
	writeRoots := st.roots(false)
	inWriteRoot := func(p string) bool {
		return slices.ContainsFunc(writeRoots, func(r string) bool { return policy.Within(p, r) })
	}
	for _, f := range st.spec.Files {
		for _, e := range f.ReadDeny {
			if filepath.IsAbs(e) {
				st.toMask = append(st.toMask, e)
			}
		}
		for _, e := range f.Protected {
			if filepath.IsAbs(e) && inWriteRoot(e) {
				st.toProtect = append(st.toProtect, e)
			}
		}
		for _, e := range f.Credentials {
			// An absolute credential path is bound read-only where the
			// policy protects it (outside the dependency trees).
			if filepath.IsAbs(e) && inWriteRoot(e) && st.denied(policy.OpWrite, e, policy.KindProtected) {
				st.toProtect = append(st.toProtect, e)
			}
		}
	}
	for _, root := range st.roots(true) {
		writable := inWriteRoot(root)
		st.scan(root, func(path string) (descend bool) {
			if st.denied(policy.OpRead, path, policy.KindReadDeny) {
				st.toMask = append(st.toMask, path)
				return false // masked whole
			}
			if (writable || inWriteRoot(path)) && st.denied(policy.OpWrite, path, policy.KindProtected) {
				st.toProtect = append(st.toProtect, path)
				return false // bound read-only whole
			}
			return true
		})
	}
	st.toMask, st.toProtect = existing(st.toMask), existing(st.toProtect)
	return nil
}

// existing keeps the paths that exist and are not symbolic links (a link's
// target has its own spelling, judged by its own name), each once.
func existing(paths []string) []string {
	out := paths[:0]
	for _, p := range dedupe(paths) {
		var sb unix.Stat_t
		if err := unix.Lstat(p, &sb); err == nil && sb.Mode&unix.S_IFMT != unix.S_IFLNK {
			out = append(out, p)
		}
	}
	return out
}

// maskReadDeny makes every read-denied path scanRoots found unreadable. A
// directory gets an empty read-only tmpfs with mode 000 over it; a file
// gets /dev/null bound read-only over it (reads see nothing).
func maskReadDeny(st *initState) error {
	for _, t := range st.toMask {
		var sb unix.Stat_t
		if err := unix.Stat(t, &sb); err != nil {
			return &fs.PathError{Op: "mask", Path: t, Err: err}
		}
		var err error
		if sb.Mode&unix.S_IFMT != unix.S_IFDIR {
			// Its other hard links are not masked: the supervisor
			// refuses the file by inode.
			st.markSecret(sb.Dev, sb.Ino)
		}
		if sb.Mode&unix.S_IFMT == unix.S_IFDIR {
			err = unix.Mount("tmpfs", t, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=000,size=4k")
		} else {
			err = bindReadOnly("/dev/null", t)
		}
		if err != nil {
			return &fs.PathError{Op: "mask", Path: t, Err: err}
		}
		st.report.Masked = append(st.report.Masked, t)
		st.held = append(st.held, fileID{Path: t, Dev: uint64(sb.Dev), Ino: sb.Ino})
	}
	return nil
}

// protectNames binds every protected path scanRoots found read-only over
// itself: its content cannot change, and it cannot be removed or replaced
// (a mount point is busy). A path under a mask stays masked.
func protectNames(st *initState) error {
	for _, t := range st.toProtect {
		if slices.ContainsFunc(st.report.Masked, func(m string) bool { return policy.Within(t, m) }) {
			continue
		}
		id := idOf(t)
		if err := bindReadOnly(t, t); err != nil {
			return &fs.PathError{Op: "bind read-only", Path: t, Err: err}
		}
		st.report.ReadOnly = append(st.report.ReadOnly, t)
		st.held = append(st.held, id)
	}
	return nil
}

// readOnlyRoot makes every mount of the sandbox read-only but the write
// roots: each write root's tree is cloned first (open_tree, with the
// masks and read-only binds inside it), the whole tree is then marked
// read-only (mount_setattr, recursively), and the clones are attached
// back over the write roots, keeping the flags they had. Metadata calls
// (chmod, chown, utimes, xattrs) are not all trapped, and Landlock does
// not cover them: this is what keeps them from changing anything outside
// the write roots, whatever name or descriptor they use. Before Linux
// 5.12 (no mount_setattr) the root stays as it is and a note says so.
func readOnlyRoot(st *initState) error {
	roots := outermost(st.roots(false))
	if slices.Contains(roots, "/") {
		return nil
	}
	var clones []int
	defer func() {
		for _, fd := range clones {
			unix.Close(fd)
		}
	}()
	for _, r := range roots {
		fd, err := unix.OpenTree(unix.AT_FDCWD, r, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err == unix.ENOSYS {
			st.report.Notes = append(st.report.Notes, "the root is not read-only (open_tree needs Linux 5.2): metadata calls outside the write roots are held only where they are trapped")
			return nil
		}
		if err != nil {
			return &fs.PathError{Op: "open_tree", Path: r, Err: err}
		}
		clones = append(clones, fd)
		// Unknown, it is recorded as nothing: the sandbox is then stale
		// at once, never kept past what it holds.
		id := fileID{Path: r}
		var sb unix.Stat_t
		if unix.Fstat(fd, &sb) == nil {
			id.Dev, id.Ino = uint64(sb.Dev), sb.Ino
		}
		st.held = append(st.held, id)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &attr); err != nil {
		if err == unix.ENOSYS {
			st.report.Notes = append(st.report.Notes, "the root is not read-only (mount_setattr needs Linux 5.12): metadata calls outside the write roots are held only where they are trapped")
			return nil
		}
		return &fs.PathError{Op: "mount_setattr read-only", Path: "/", Err: err}
	}
	for i, r := range roots {
		if err := unix.MoveMount(clones[i], "", unix.AT_FDCWD, r, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return &fs.PathError{Op: "move_mount", Path: r, Err: err}
		}
	}
	st.report.RootReadOnly = true
	return nil
}

// outermost keeps the paths no other path of the list contains.
func outermost(paths []string) []string {
	var out []string
	for _, p := range paths {
		if !slices.ContainsFunc(paths, func(o string) bool { return o != p && policy.Within(p, o) }) {
			out = append(out, p)
		}
	}
	return out
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
// never following symbolic links, calling visit for each path; it
// descends into a directory only when visit says so.
func (st *initState) scan(root string, visit func(string) (descend bool)) {
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
			if visit(p) && e.IsDir() && d.depth+1 < scanDepth {
				queue = append(queue, dir{p, d.depth + 1})
			}
		}
	}
}

func dedupe(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
