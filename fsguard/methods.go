package fsguard

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// The afero.Fs methods. Each one opens the scope's in-flight mark and runs
// its route (route.go): front, resolve once, request, decide once, act.
// Check (check.go) runs the same routes with the act left out.

// writeFlags are the open flags that make an open a write.
const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND

// badName returns the error the OS gives for a name no system call can
// take, before anything is resolved or checked: ENOENT for an empty name
// (os.Open("") does not open the working directory) and EINVAL for a name
// holding a NUL byte (the kernel would see a shorter name). Every method
// answers both exactly as afero.OsFs does.
func badName(op, name string) error {
	if name == "" {
		return pathErr(op, name, syscall.ENOENT)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return pathErr(op, name, syscall.EINVAL)
	}
	return nil
}

// badNames is badName for two-name calls, as an *os.LinkError. A symbolic
// link's target may be any string but an empty one or one with a NUL.
func badNames(op, oldname, newname string) error {
	for _, n := range []string{oldname, newname} {
		if err := badName(op, n); err != nil {
			return &os.LinkError{Op: op, Old: oldname, New: newname, Err: err.(*fs.PathError).Err}
		}
	}
	return nil
}

// absAt makes name absolute against cwd, without cleaning it.
func absAt(name, cwd string) string {
	if len(name) > 0 && name[0] == '/' {
		return name
	}
	return cwd + "/" + name
}

// Create creates or truncates name for writing, like os.Create.
func (f *Fs) Create(name string) (afero.File, error) {
	return f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Open opens name for reading.
func (f *Fs) Open(name string) (afero.File, error) {
	return f.OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile opens name. A read-only open is a read of where name resolves; an
// open with any of O_WRONLY, O_RDWR, O_CREATE, O_TRUNC or O_APPEND is a
// write checked where it really lands (the last symbolic link followed,
// unless O_NOFOLLOW is given) and, on the OS, carried out beneath the
// write root.
func (f *Fs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	op := policy.OpRead
	if flag&writeFlags != 0 {
		op = policy.OpWrite
	} else if f.quiet(name) {
		cwd := f.getwd()
		fl, err := f.base.OpenFile(absAt(name, cwd), flag, 0)
		if err != nil {
			return nil, f.renameErr(err, "open", name)
		}
		return f.guardFile(named(fl, name), name, absAt(name, cwd))
	}
	c := f.pooledCall(op, "open", name)
	fl, err := f.open(c, flag, perm)
	cwd := c.cwd
	putCall(c)
	if err != nil {
		return nil, err
	}
	return f.guardFile(fl, name, absAt(name, cwd))
}

// open is OpenFile's route up to the file: the front, then the read or
// the write route.
func (f *Fs) open(c *call, flag int, perm os.FileMode) (afero.File, error) {
	if err := badName("open", c.name); err != nil {
		return nil, err
	}
	c.flag = flag
	c.ev.Detail = flagString(flag)
	if off, err := f.offGate(c); off {
		if err != nil || !c.acts() {
			return nil, err
		}
		return f.openByName(c, perm)
	}
	if flag&writeFlags == 0 {
		return f.openRead(c)
	}
	return f.openWrite(c, perm)
}

// openByName opens the name as called on the base: no check stands
// between (Off mode, or a quiet read).
func (f *Fs) openByName(c *call, perm os.FileMode) (afero.File, error) {
	fl, err := f.base.OpenFile(absAt(c.name, c.cwd), c.flag, perm)
	if err != nil {
		return nil, f.renameErr(err, "open", c.name)
	}
	return named(fl, c.name), nil
}

// openRead is the route of a read-only open (a quiet read, see quiet,
// never gets here: OpenFile opens the name as called). On the fast route the file itself is the
// proof, and that descriptor is handed back; in a scope with callbacks it
// is open while they decide (a denial closes it): opening a FIFO or a
// device that a callback then refuses has the effect of opening it.
func (f *Fs) openRead(c *call) (afero.File, error) {
	c.follow = c.flag&oNoFollow == 0
	for try := 1; ; try++ {
		if err := f.locate(c, pinRead); err != nil {
			return nil, err
		}
		if err := f.decide(c); err != nil || !c.acts() {
			c.p.release()
			return nil, err
		}
		switch {
		case c.p.ok && c.p.missing:
			return nil, c.fail(syscall.ENOENT)
		case c.p.ok:
			return c.p.file(c.name), nil
		case !f.pinnedRead(c.r.path):
			return f.openByName(c, 0)
		case !c.follow && f.isLink(c.r):
			return nil, c.fail(syscall.ELOOP) // open(2) with O_NOFOLLOW on a link
		}
		fl, err := openNoLinks(c.r.target(), c.name, c.flag)
		if err == syscall.ELOOP && try < maxReroutes {
			c = c.retry() // a link appeared on the decided path: decide again
			continue
		}
		if err != nil {
			return nil, c.fail(err)
		}
		return fl, nil
	}
}

// isLink reports whether the resolved path is a symbolic link itself.
func (f *Fs) isLink(r resolved) bool {
	fi := r.info
	if fi == nil {
		var err error
		if fi, err = f.lstat(r.path); err != nil {
			return false
		}
	}
	return fi.Mode()&fs.ModeSymlink != 0
}

// openWrite is the route of an open for writing. O_NOFOLLOW, and
// O_CREATE|O_EXCL, act on a final symbolic link itself (the kernel then
// refuses it): that entry is checked and opened. On the fast route the
// existing file is opened beneath the write root before the decision
// (that is the proof; nothing changes yet) and truncated, or a missing
// one created, only after it.
func (f *Fs) openWrite(c *call, perm os.FileMode) (afero.File, error) {
	flag := c.flag
	c.follow = flag&oNoFollow == 0 && flag&(os.O_CREATE|os.O_EXCL) != os.O_CREATE|os.O_EXCL
	c.linkRule = true
	for try := 1; ; try++ {
		if err := f.locate(c, pinWrite); err != nil {
			return nil, err
		}
		if err := f.decide(c); err != nil || !c.acts() {
			c.p.release()
			return nil, err
		}
		if !c.p.ok {
			return f.openWriteInRoot(c, perm)
		}
		fl, err, again := c.p.openWrite(c.name, c.r.path, flag, perm)
		c.p.release()
		if again && try < 3 {
			c = c.retry()
			continue
		}
		if err != nil {
			return nil, c.fail(err)
		}
		return fl, nil
	}
}

// openWriteInRoot is the act of a write open on the slow route: through
// the write root's os.Root, or on the base when no root holds the path.
func (f *Fs) openWriteInRoot(c *call, perm os.FileMode) (afero.File, error) {
	if c.flag&oNoFollow != 0 && f.isLink(c.r) {
		// os.Root resolves a final link itself; keep open(2)'s answer.
		return nil, c.fail(syscall.ELOOP)
	}
	var fl afero.File
	root, rp, ok, err := f.inRootR(c.r)
	switch {
	case err != nil:
	case ok:
		var of *os.File
		if of, err = root.OpenFile(rp, c.flag, perm); err == nil {
			fl = of
		}
	default:
		fl, err = f.base.OpenFile(c.r.target(), c.flag, perm)
	}
	if err != nil {
		return nil, f.renameErr(err, "open", c.name)
	}
	return named(fl, c.name), nil
}

// Stat returns the information of where name resolves (links followed).
func (f *Fs) Stat(name string) (os.FileInfo, error) {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	if f.quiet(name) {
		fi, _, err := f.statByName("stat", name, f.getwd(), true)
		return fi, err
	}
	c := f.pooledCall(policy.OpRead, "stat", name)
	c.follow = true
	fi, _, err := f.stat(c)
	putCall(c)
	return fi, err
}

// LstatIfPossible returns the information of name itself, not following a
// final symbolic link, when the base can; the bool reports whether Lstat was
// used.
func (f *Fs) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	if f.quiet(name) {
		return f.statByName("lstat", name, f.getwd(), false)
	}
	c := f.pooledCall(policy.OpRead, "lstat", name)
	fi, ok, err := f.stat(c)
	putCall(c)
	return fi, ok, err
}

// stat is the route of Stat (c.follow) and Lstat. On the fast route the
// parent is pinned without following any link, through the write root
// that holds it (no call at all for an entry of the root itself) or with
// openat2 from "/", and the entry is looked at with
// fstatat(AT_SYMLINK_NOFOLLOW) on it; a link there, when Stat would follow
// it, ends the fast route. On the slow route the resolved path is looked
// at again with no link followed (statNoLinks).
func (f *Fs) stat(c *call) (fs.FileInfo, bool, error) {
	if err := badName(c.opName, c.name); err != nil {
		return nil, false, err
	}
	if off, err := f.offGate(c); off {
		if err != nil || !c.acts() {
			return nil, false, err
		}
		return f.statByName(c.opName, c.name, c.cwd, c.follow)
	}
	for try := 1; ; try++ {
		if err := f.locate(c, pinStat); err != nil {
			return nil, false, err
		}
		if err := f.decide(c); err != nil || !c.acts() {
			c.p.release()
			return nil, false, err
		}
		if c.p.ok {
			// Released here rather than deferred: a defer inside this
			// loop cannot be open-coded, and the runtime's defer record
			// was a measurable part of a checked Stat. Nothing between
			// the proof and this return can panic.
			if c.p.missing {
				c.p.release()
				return nil, false, c.fail(syscall.ENOENT)
			}
			fi := c.p.stat()
			c.p.release()
			return fi, !c.follow, nil
		}
		if !f.pinnedRead(c.r.path) || c.r.path == "/" {
			return f.statByName(c.opName, c.name, c.cwd, c.follow)
		}
		info, err := statNoLinks(c.r.path, filepath.Base(c.name))
		if err == nil && c.follow && info.Mode()&fs.ModeSymlink != 0 {
			err = syscall.ELOOP // the resolution followed it: it was swapped in
		}
		if err == syscall.ELOOP && try < maxReroutes {
			c = c.retry()
			continue
		}
		if err != nil {
			return nil, false, c.fail(err)
		}
		if c.r.slash && !info.IsDir() {
			return nil, false, c.fail(syscall.ENOTDIR)
		}
		return info, !c.follow, nil
	}
}

// statByName looks at the name as called on the base; the bool reports
// whether Lstat was used.
func (f *Fs) statByName(opName, name, cwd string, follow bool) (fs.FileInfo, bool, error) {
	a := absAt(name, cwd)
	switch {
	case follow:
		fi, err := f.base.Stat(a)
		return fi, false, f.renameErr(err, opName, name)
	case f.isOS:
		fi, err := os.Lstat(a)
		return fi, true, f.renameErr(err, opName, name)
	case f.lst != nil:
		fi, ok, err := f.lst.LstatIfPossible(a)
		return fi, ok, f.renameErr(err, opName, name)
	}
	fi, err := f.base.Stat(a)
	return fi, false, f.renameErr(err, opName, name)
}

// quiet reports whether a read of name takes route step 1's quiet way
// (see quietRead): a name a system call can take, in a silent scope whose
// policies deny no read. Nothing is decided, so no call is built.
func (f *Fs) quiet(name string) bool {
	// quietRead first: when it is false (checks on) the route's badName
	// scans the name, so it is not scanned twice.
	return name != "" && f.quietRead() && strings.IndexByte(name, 0) < 0
}

// ReadlinkIfPossible returns the target of the symbolic link name.
func (f *Fs) ReadlinkIfPossible(name string) (string, error) {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	c := f.newCall(policy.OpRead, "readlink", name)
	if err := badName("readlink", name); err != nil {
		return "", err
	}
	if off, err := f.offGate(c); err != nil {
		return "", err
	} else if !off && !f.quietRead() {
		if err := f.locate(c, pinNone); err != nil {
			return "", err
		}
		if err := f.decide(c); err != nil {
			return "", err
		}
	}
	s, err := f.readlink(absAt(name, c.cwd))
	return s, f.renameErr(err, "readlink", name)
}

// Mkdir creates the directory name: a create of the new entry.
func (f *Fs) Mkdir(name string, perm os.FileMode) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	return f.mkdir(f.newCall(policy.OpCreate, "mkdir", name), perm)
}

// mkdir is Mkdir's route. mkdir(2) never follows a final symbolic link,
// trailing slash or not: a link named "link/" exists (EEXIST, dangling or
// not) and nothing is made, once the policy was asked about the link.
func (f *Fs) mkdir(c *call, perm os.FileMode) error {
	if err := badName("mkdir", c.name); err != nil {
		return err
	}
	if off, err := f.offGate(c); off {
		if err != nil || !c.acts() {
			return err
		}
		return f.renameErr(f.base.Mkdir(absAt(c.name, c.cwd), perm), "mkdir", c.name)
	}
	if t := trimSlash(c.name); t != c.name {
		c.rname = t
	}
	if err := f.locate(c, pinParent); err != nil {
		return err
	}
	defer c.p.release()
	if err := f.decide(c); err != nil || !c.acts() {
		return err
	}
	switch {
	case f.slashedLink(c):
		return c.fail(syscall.EEXIST)
	case c.p.ok:
		return c.fail(c.p.mkdir(perm))
	}
	return f.carryOut(c,
		func(root *os.Root, p string) error { return root.Mkdir(p, perm) },
		func(p string) error { return f.base.Mkdir(p, perm) })
}

// notDirPrefix names a failed MkdirAll as os.MkdirAll does: the deepest
// leading part of name that exists and is not a directory.
func (f *Fs) notDirPrefix(name, cwd string) string {
	for i := len(name); i > 0; i-- {
		if i < len(name) && name[i] != '/' {
			continue
		}
		p := strings.TrimRight(name[:i], "/")
		if p == "" {
			continue
		}
		if fi, err := f.base.Stat(absAt(p, cwd)); err == nil {
			if !fi.IsDir() {
				return p
			}
			break
		}
	}
	return name
}

// MkdirAll creates name and every missing parent. Each directory it would
// create is checked; if any is denied, none is created. When nothing is
// missing it is a read of the existing directory.
func (f *Fs) MkdirAll(name string, perm os.FileMode) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	return f.mkdirAll(f.newCall(policy.OpCreate, "mkdir", name), perm)
}

// mkdirAll is MkdirAll's route. A final symbolic link is followed, and
// ".." after a missing directory climbs lexically, as os.MkdirAll, which
// makes the missing directory first, does.
func (f *Fs) mkdirAll(c *call, perm os.FileMode) error {
	if err := badName("mkdir", c.name); err != nil {
		return err
	}
	if off, err := f.offGate(c); off {
		if err != nil || !c.acts() {
			return err
		}
		return f.renameErr(f.base.MkdirAll(absAt(c.name, c.cwd), perm), "mkdir", c.name)
	}
	c.follow = true
	r, err := f.resolveLexical(c.name, c.cwd, true, true)
	if err != nil {
		derr := f.denyResolve(c, err)
		if errors.Is(derr, syscall.ENOTDIR) {
			return pathErr("mkdir", f.notDirPrefix(c.name, c.cwd), syscall.ENOTDIR)
		}
		return derr
	}
	c.r = r
	c.ev.Resolved = r.path
	dirs := f.mkdirAllDirs(c)
	var req multiReq
	for _, d := range dirs {
		req = append(req, pathReq{op: policy.OpCreate, path: d, cwd: c.cwd})
	}
	if len(req) == 0 {
		// Nothing to create: a read of the existing entry, as os.MkdirAll
		// only stats it.
		c.ev.Op = policy.OpRead
		c.ev.Detail = "MkdirAll of an existing entry"
		req = multiReq{{op: policy.OpRead, path: r.path, cwd: c.cwd}}
	}
	if err := f.carry(c, req, f.ask(req)); err != nil || !c.acts() {
		return err
	}
	if len(dirs) == 0 {
		fi, err := f.base.Stat(r.path)
		if err != nil {
			return f.renameErr(err, "mkdir", c.name)
		}
		if !fi.IsDir() {
			return pathErr("mkdir", c.name, syscall.ENOTDIR)
		}
		return nil
	}
	if r.path != filepath.Clean(absAt(c.name, c.cwd)) {
		// Allowed, and a symbolic link on the way: os.MkdirAll stops at
		// one that points at nothing ("mkdir P: file exists") instead of
		// making its target. Nothing is created.
		if p, ok := f.danglingPrefix(c.name, c.cwd); ok {
			return &fs.PathError{Op: "mkdir", Path: p, Err: syscall.EEXIST}
		}
	}
	// The deepest directory makes its missing parents; a name with ".."
	// makes each of its directories in turn.
	if !strings.Contains(c.name, "..") {
		dirs = dirs[len(dirs)-1:]
	}
	for _, d := range dirs {
		if err := f.carryOutAt(resolved{path: d}, "mkdir", c.name,
			func(root *os.Root, p string) error { return root.MkdirAll(p, perm) },
			func(p string) error { return f.base.MkdirAll(p, perm) }); err != nil {
			return err
		}
	}
	return nil
}

// mkdirAllDirs lists the directories MkdirAll of c's name would make,
// outermost first: the missing ancestors of where it resolved. A name
// with ".." is split as os.MkdirAll splits it, which makes each leading
// part in turn: "x/missing/../y" makes x/missing, then x/y.
func (f *Fs) mkdirAllDirs(c *call) []string {
	var dirs []string
	missing := func(p string) bool {
		_, err := f.lstat(p)
		return err != nil && errors.Is(err, fs.ErrNotExist)
	}
	if !strings.Contains(c.name, "..") {
		if c.r.info != nil {
			return nil
		}
		for p := c.r.path; p != "/" && missing(p); p = parentOf(p) {
			dirs = append(dirs, p)
		}
		for i, j := 0, len(dirs)-1; i < j; i, j = i+1, j-1 {
			dirs[i], dirs[j] = dirs[j], dirs[i]
		}
		return dirs
	}
	name := c.name
	for i := 1; i <= len(name); i++ {
		if i < len(name) && name[i] != '/' {
			continue
		}
		pre := name[:i]
		if strings.HasSuffix(pre, "/") {
			continue
		}
		if b := baseName(pre); b == "." || b == ".." {
			continue
		}
		r, err := f.resolveLexical(pre, c.cwd, true, true)
		if err == nil && missing(r.path) && !slices.Contains(dirs, r.path) {
			dirs = append(dirs, r.path)
		}
	}
	return dirs
}

// Remove removes the entry name itself (a final symbolic link is removed,
// not followed).
func (f *Fs) Remove(name string) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	return f.remove(f.newCall(policy.OpDelete, "remove", name))
}

// remove is Remove's route. rmdir(2) does not follow a final symbolic
// link either: a link named "link/" is not a directory (ENOTDIR, dangling
// or not) and nothing is removed, once the policy was asked about the
// link.
func (f *Fs) remove(c *call) error {
	if err := badName("remove", c.name); err != nil {
		return err
	}
	if off, err := f.offGate(c); off {
		if err != nil || !c.acts() {
			return err
		}
		return f.renameErr(f.base.Remove(absAt(c.name, c.cwd)), "remove", c.name)
	}
	if t := trimSlash(c.name); t != c.name {
		c.rname = t
	}
	if err := f.locate(c, pinParent); err != nil {
		return err
	}
	defer c.p.release()
	if err := f.decide(c); err != nil || !c.acts() {
		return err
	}
	switch {
	case f.slashedLink(c):
		return c.fail(syscall.ENOTDIR)
	case c.p.ok:
		return c.fail(c.p.remove())
	}
	return f.carryOut(c, (*os.Root).Remove, f.base.Remove)
}

// danglingPrefix finds, among the leading parts of name that MkdirAll
// walks (as os.MkdirAll splits it), the first that is a symbolic link to
// nothing before any part is missing: os.MkdirAll fails there with
// EEXIST, where following the link would create its target. It is asked
// only once the policy allowed the creation: where the guard allows, the
// error is the OS's.
func (f *Fs) danglingPrefix(name, cwd string) (string, bool) {
	for i := 1; i <= len(name); i++ {
		if i < len(name) && name[i] != '/' {
			continue
		}
		p := name[:i]
		if strings.TrimRight(p, "/") != p {
			continue
		}
		r, err := f.resolve(p, cwd, false)
		if err != nil {
			return "", false
		}
		fi, err := f.lstat(r.path)
		if err != nil {
			return "", false // missing: os.MkdirAll makes it and what follows
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if _, err := f.base.Stat(r.path); err != nil && errors.Is(err, fs.ErrNotExist) {
			return p, true
		}
	}
	return "", false
}

// RemoveAll removes name and everything under it. Every entry it would
// remove is checked first (symbolic links are removed, not followed); if
// any is denied, nothing is removed.
func (f *Fs) RemoveAll(name string) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	c := f.newCall(policy.OpDelete, "removeall", name)
	if err := badName("removeall", name); err != nil {
		// os.RemoveAll answers these its own way: nil for "" (Go issue
		// 28830), and its unlinkat's EINVAL for a NUL, which no system
		// call ever sees (so asking it has no effect).
		if name == "" {
			if serr := f.scope.ErrFor(aferoHelpers...); serr != nil {
				return pathErr("removeall", name, serr)
			}
			return nil
		}
		if f.isOS {
			return os.RemoveAll(name)
		}
		return err
	}
	if off, err := f.offGate(c); off {
		if err != nil {
			return err
		}
		return f.renameErr(f.base.RemoveAll(absAt(name, c.cwd)), "removeall", name)
	}
	// os.RemoveAll removes the last name itself, trailing slashes or not:
	// "link/" removes the link, never its target's contents.
	r, err := f.resolve(trimSlash(name), c.cwd, false)
	if err != nil {
		derr := f.denyResolve(c, err)
		if errors.Is(derr, syscall.ENOENT) {
			return nil // os.RemoveAll of nothing succeeds
		}
		return derr
	}
	c.r = r
	c.ev.Resolved = r.path
	req := multiReq{{op: policy.OpDelete, path: r.path, cwd: c.cwd}}
	// The tree is only walked when the entry itself may go: a denied entry
	// (outside the roots, a root itself) is decided alone, and a host that
	// rescues it approves the whole tree.
	d := f.ask(req)
	if d.Allowed {
		if err := f.walkTree(r.path, func(p string) {
			req = append(req, pathReq{op: policy.OpDelete, path: p, cwd: c.cwd})
		}); err != nil {
			return f.renameErr(err, "removeall", name)
		}
		d = f.ask(req)
	}
	if err := f.carry(c, req, d); err != nil {
		return err
	}
	return f.carryOut(c, (*os.Root).RemoveAll, f.base.RemoveAll)
}

// walkTree calls fn for every entry below dir, without following symbolic
// links. A missing dir or a non-directory has no entries.
func (f *Fs) walkTree(dir string, fn func(path string)) error {
	fi, err := f.lstat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if !fi.IsDir() {
		return nil
	}
	d, err := f.base.Open(dir)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		p := dir + "/" + n
		if dir == "/" {
			p = "/" + n
		}
		fn(p)
		if err := f.walkTree(p, fn); err != nil {
			return err
		}
	}
	return nil
}

// Rename moves oldname to newname: a move of both entries (neither final
// symbolic link followed). Renaming a directory checks every entry it holds
// at its old and its new place, so a protected name cannot be moved out
// from under its protection or into it.
func (f *Fs) Rename(oldname, newname string) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	c := f.newCall2(policy.OpMove, "rename", oldname, newname)
	if err := badNames("rename", oldname, newname); err != nil {
		return err
	}
	if off, err := f.offGate(c); off {
		if err != nil {
			return err
		}
		return f.renameLinkErr(f.base.Rename(absAt(oldname, c.cwd), absAt(newname, c.cwd)), "rename", oldname, newname)
	}
	// Resolve once: on the fast route, two entries that are not
	// directories, both names clean under write roots the policies allow,
	// pinned by their parents; otherwise both names resolved.
	po, pn := absAt(oldname, c.cwd), absAt(newname, c.cwd)
	req := multiReq{{op: policy.OpMove, path: po, cwd: c.cwd}, {op: policy.OpMove, path: pn, cwd: c.cwd}}
	var d policy.Decision
	fast := false
	if f.fastOK(po) && f.fastOK(pn) {
		if d = f.ask(req); d.Allowed {
			fast = f.pinRename(c, po, pn)
		}
	}
	if fast {
		defer c.p.release()
		defer c.p2.release()
		c.r, c.r2 = resolved{path: po}, resolved{path: pn}
		c.ev.Resolved, c.ev.Resolved2 = po, pn
	} else {
		if err := f.resolvePair(c, false); err != nil {
			return err
		}
		// The request: both names, and every entry a directory holds at
		// its old and new place, walked only when the names may move (a
		// host that rescues a denied move approves the whole tree).
		req = multiReq{{op: policy.OpMove, path: c.r.path, cwd: c.cwd}, {op: policy.OpMove, path: c.r2.path, cwd: c.cwd}}
		if d = f.ask(req); d.Allowed {
			err := f.walkTree(c.r.path, func(p string) {
				req = append(req,
					pathReq{op: policy.OpMove, path: p, cwd: c.cwd},
					pathReq{op: policy.OpMove, path: c.r2.path + p[len(c.r.path):], cwd: c.cwd})
			})
			if err != nil {
				return f.renameLinkErr(err, "rename", oldname, newname)
			}
			d = f.ask(req)
		}
	}
	if err := f.carry(c, req, d); err != nil {
		return err
	}
	if fast {
		return c.fail(rename(&c.p, c.p2))
	}
	err := f.twoNames(c.r.path, c.r2.path,
		func(r *os.Root, a, b string) error { return r.Rename(a, b) },
		func(da int, a string, db int, b string) error { return renameat(da, a, db, b) },
		func(a, b string) error { return f.base.Rename(a, b) })
	return f.renameLinkErr(err, "rename", oldname, newname)
}

// Link makes newname a hard link to oldname: a link of both entries. The
// old name's final symbolic link is not followed (as link(2)); a regular
// file that already has more than one name is denied by default. Only the
// OS base supports hard links.
func (f *Fs) Link(oldname, newname string) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	c := f.newCall2(policy.OpLink, "link", oldname, newname)
	if err := badNames("link", oldname, newname); err != nil {
		return err
	}
	if !f.isOS {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: ErrNoHardLink}
	}
	if off, err := f.offGate(c); off {
		if err != nil {
			return err
		}
		return f.renameLinkErr(os.Link(absAt(oldname, c.cwd), absAt(newname, c.cwd)), "link", oldname, newname)
	}
	if err := f.resolvePair(c, false); err != nil {
		return err
	}
	req := &pairReq{
		a: pathReq{op: policy.OpLink, path: c.r.path, cwd: c.cwd},
		b: pathReq{op: policy.OpLink, path: c.r2.path, cwd: c.cwd},
	}
	d := f.ask(req)
	if d.Allowed {
		// The hard-link rule, asked only once the policies allowed.
		if req.a.nlink = f.nlinkAt(c.r); req.a.nlink > 1 {
			d = policy.Deny(policy.TierHard, RuleMultiLink, detailMultiLink)
		}
	}
	if err := f.carry(c, req, d); err != nil {
		return err
	}
	if err := f.slashedNew(c); err != nil {
		return err
	}
	err := f.twoNames(c.r.path, c.r2.path,
		func(r *os.Root, a, b string) error { return r.Link(a, b) },
		func(da int, a string, db int, b string) error { return linkat(da, a, db, b) },
		os.Link)
	return f.renameLinkErr(err, "link", oldname, newname)
}

// ErrNoHardLink is returned by Link on a base that has no hard links.
var ErrNoHardLink = errors.New("hard links are not supported by this filesystem")

// slashedNew answers a link or symlink whose new name ends in "/" as the
// kernel does, once the guard allowed it: a name is only created as a
// directory, so what exists there (a dangling link included) is EEXIST
// and a missing name ENOENT; nothing is made either way.
func (f *Fs) slashedNew(c *call) error {
	t := trimSlash(c.name2)
	if t == c.name2 {
		return nil
	}
	if _, err := f.lstat(absAt(t, c.cwd)); err == nil {
		return c.fail(syscall.EEXIST)
	}
	return c.fail(syscall.ENOENT)
}

// resolvePair resolves both names of a two-name call (the new name's
// final link never followed) into c.r and c.r2. A name with a trailing
// "/" that is not a directory fails as the kernel fails it.
func (f *Fs) resolvePair(c *call, followOld bool) error {
	ro, err := f.resolve(c.name, c.cwd, followOld)
	if err != nil {
		return f.renameLinkErr(f.denyResolve(c, err), c.opName, c.name, c.name2)
	}
	c.r = ro
	c.ev.Resolved = ro.path
	rn, err := f.resolve(c.name2, c.cwd, false)
	if err != nil {
		return f.renameLinkErr(f.denyResolve(c, err), c.opName, c.name, c.name2)
	}
	c.r2 = rn
	c.ev.Resolved2 = rn.path
	for _, r := range []resolved{ro, rn} {
		if r.slash {
			if fi, err := f.base.Stat(r.path); err == nil && !fi.IsDir() {
				return c.fail(syscall.ENOTDIR)
			}
		}
	}
	return nil
}

// twoNames carries out a two-name mutation: through one os.Root when a
// write root holds both names, through directory handles opened inside
// each name's root when they sit under different roots, and on the base
// with the resolved paths when no root holds them (a rescued or warned
// call).
func (f *Fs) twoNames(a, b string,
	inRoot func(r *os.Root, a, b string) error,
	atDirs func(da int, a string, db int, b string) error,
	onBase func(a, b string) error) error {
	if dir := f.rootFor(a, b); dir != "" {
		h, err := f.roots.get(dir)
		if err != nil {
			return err
		}
		r, err := h.osRoot()
		if err != nil {
			return err
		}
		return inRoot(r, rel(dir, a), rel(dir, b))
	}
	da, na, oka, err := f.parentIn(a)
	if err != nil {
		return err
	}
	if oka {
		defer da.Close()
	}
	db, nb, okb, err := f.parentIn(b)
	if err != nil {
		return err
	}
	if okb {
		defer db.Close()
	}
	if oka && okb {
		return atDirs(int(da.Fd()), na, int(db.Fd()), nb)
	}
	return onBase(a, b)
}

// SymlinkIfPossible creates newname as a symbolic link to oldname: a link of
// the new entry and, unless WithSymlinkTargetsAnywhere, of where oldname
// resolves from the new link's own directory.
func (f *Fs) SymlinkIfPossible(oldname, newname string) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	c := f.newCall2(policy.OpLink, "symlink", oldname, newname)
	if err := badNames("symlink", oldname, newname); err != nil {
		return err
	}
	if f.ln == nil && !f.isOS {
		return &os.LinkError{Op: "symlink", Old: oldname, New: newname, Err: afero.ErrNoSymlink}
	}
	if off, err := f.offGate(c); off {
		if err != nil {
			return err
		}
		return f.renameLinkErr(f.ln.SymlinkIfPossible(oldname, absAt(newname, c.cwd)), "symlink", oldname, newname)
	}
	rn, err := f.resolve(newname, c.cwd, false)
	if err != nil {
		return f.renameLinkErr(f.denyResolve(c, err), "symlink", oldname, newname)
	}
	c.r2 = rn
	c.ev.Resolved2 = rn.path
	newReq := pathReq{op: policy.OpLink, path: rn.path, cwd: c.cwd}
	var req audit.Request = &newReq
	if !f.opts.symlinkAnywhere {
		rt, err := f.resolve(oldname, parentOf(rn.path), true)
		if err != nil {
			return f.renameLinkErr(f.denyResolve(c, err), "symlink", oldname, newname)
		}
		c.r = rt
		c.ev.Resolved = rt.path
		req = &pairReq{a: newReq, b: pathReq{op: policy.OpLink, path: rt.path, cwd: c.cwd, detail: detailSymlinkTarget}}
	}
	if err := f.carry(c, req, f.ask(req)); err != nil {
		return err
	}
	if err := f.slashedNew(c); err != nil {
		return err
	}
	root, rp, ok, err := f.inRoot(rn.path)
	switch {
	case err != nil:
	case ok:
		err = root.Symlink(oldname, rp)
	case f.ln != nil:
		err = f.ln.SymlinkIfPossible(oldname, rn.path)
	default:
		err = os.Symlink(oldname, rn.path)
	}
	return f.renameLinkErr(err, "symlink", oldname, newname)
}

// Chmod changes the mode of where name resolves: an attr change.
func (f *Fs) Chmod(name string, mode os.FileMode) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	return f.attr(f.newCall(policy.OpAttr, "chmod", name),
		func(r *os.Root, p string) error { return r.Chmod(p, mode) },
		func(p string) error { return f.base.Chmod(p, mode) })
}

// Chown changes the owner of where name resolves: an attr change.
func (f *Fs) Chown(name string, uid, gid int) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	return f.attr(f.newCall(policy.OpAttr, "chown", name),
		func(r *os.Root, p string) error { return r.Chown(p, uid, gid) },
		func(p string) error { return f.base.Chown(p, uid, gid) })
}

// Chtimes changes the times of where name resolves: an attr change.
func (f *Fs) Chtimes(name string, atime, mtime time.Time) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	return f.attr(f.newCall(policy.OpAttr, "chtimes", name),
		func(r *os.Root, p string) error { return r.Chtimes(p, atime, mtime) },
		func(p string) error { return f.base.Chtimes(p, atime, mtime) })
}

// attr is the route of the attribute changes: the final link followed,
// the hard-link rule applied, the act through the write root's os.Root.
func (f *Fs) attr(c *call, inRoot func(*os.Root, string) error, onBase func(string) error) error {
	if err := badName(c.opName, c.name); err != nil {
		return err
	}
	if off, err := f.offGate(c); off {
		if err != nil || !c.acts() {
			return err
		}
		return f.renameErr(onBase(absAt(c.name, c.cwd)), c.opName, c.name)
	}
	c.follow, c.linkRule = true, true
	if err := f.locate(c, pinNone); err != nil {
		return err
	}
	if err := f.decide(c); err != nil || !c.acts() {
		return err
	}
	return f.carryOut(c, inRoot, onBase)
}

// Chdir changes the handle's working directory (not the process's): a
// chdir checked on the destination, which must be a directory.
func (f *Fs) Chdir(dir string) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	return f.chdir(f.newCall(policy.OpChdir, "chdir", dir))
}

// chdir is Chdir's route. In Off mode the decision passes (after the
// scope rules); the destination is still resolved and must be a directory.
func (f *Fs) chdir(c *call) error {
	if err := badName("chdir", c.name); err != nil {
		return err
	}
	c.follow = true
	if err := f.locate(c, pinNone); err != nil {
		return err
	}
	if err := f.decide(c); err != nil || !c.acts() {
		return err
	}
	fi := c.r.info
	if fi == nil || fi.Mode()&fs.ModeSymlink != 0 {
		var err error
		if fi, err = f.base.Stat(c.r.path); err != nil {
			return f.renameErr(err, "chdir", c.name)
		}
	}
	if !fi.IsDir() {
		return c.fail(syscall.ENOTDIR)
	}
	p := c.r.path
	f.cwd.Store(&p)
	return nil
}

// flagString renders open flags for the event's Detail; the common
// combinations are constants.
func flagString(flag int) string {
	switch flag {
	case os.O_RDONLY:
		return "O_RDONLY"
	case os.O_RDWR | os.O_CREATE | os.O_TRUNC:
		return "O_RDWR|O_CREATE|O_TRUNC"
	case os.O_WRONLY | os.O_CREATE | os.O_TRUNC:
		return "O_WRONLY|O_CREATE|O_TRUNC"
	case os.O_WRONLY | os.O_CREATE | os.O_APPEND:
		return "O_WRONLY|O_CREATE|O_APPEND"
	case os.O_RDWR | os.O_CREATE | os.O_EXCL:
		return "O_RDWR|O_CREATE|O_EXCL"
	}
	names := []struct {
		bit  int
		name string
	}{
		{os.O_WRONLY, "O_WRONLY"}, {os.O_RDWR, "O_RDWR"}, {os.O_CREATE, "O_CREATE"}, {os.O_EXCL, "O_EXCL"},
		{os.O_TRUNC, "O_TRUNC"}, {os.O_APPEND, "O_APPEND"}, {os.O_SYNC, "O_SYNC"}, {oNoFollow, "O_NOFOLLOW"},
	}
	out := ""
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		out = "O_RDONLY"
	}
	for _, n := range names {
		if flag&n.bit != 0 {
			if out != "" {
				out += "|"
			}
			out += n.name
		}
	}
	return out
}
