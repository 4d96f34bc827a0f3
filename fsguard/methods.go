package fsguard

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// writeFlags are the open flags that make an open a write.
const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND

// offErr is the scope check an Off-mode passthrough still makes.
func (f *Fs) offErr(op, name string) error {
	if err := f.scope.ErrFor(aferoHelpers...); err != nil {
		return pathErr(op, name, err)
	}
	return nil
}

// single resolves name, checks op on it and returns the resolution. It is
// the front half of every one-name method.
// It also returns the working directory the name was taken from, so the
// call itself uses the same one even if another goroutine moves the handle.
// flag, for opens, fills the event's Detail.
func (f *Fs) single(op policy.Op, opName, name string, follow, linkRule bool, flag int) (resolved, string, error) {
	cwd := f.getwd()
	ev := &audit.Event{Op: op, Target: name}
	if opName == "open" {
		ev.Detail = flagString(flag)
	}
	r, err := f.resolve(name, cwd, follow)
	if err != nil {
		return r, cwd, pathErr(opName, name, f.denyResolve(ev, err))
	}
	ev.Resolved = r.path
	req := &pathReq{op: op, path: r.path, cwd: cwd}
	if linkRule {
		req.nlink = f.nlinkOf(r)
	}
	if err := f.check(ev, req); err != nil {
		return r, cwd, pathErr(opName, name, err)
	}
	return r, cwd, nil
}

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
// unless O_NOFOLLOW is given) and, on the OS, carried out through the write
// root's os.Root.
func (f *Fs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	if err := badName("open", name); err != nil {
		return nil, err
	}
	abs := f.abs(name)
	fl, err := f.openFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f.guardFile(fl, name, abs)
}

func (f *Fs) openFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if f.off() {
		if err := f.offErr("open", name); err != nil {
			return nil, err
		}
		fl, err := f.base.OpenFile(f.abs(name), flag, perm)
		if err != nil {
			return nil, f.renameErr(err, "open", name)
		}
		return named(fl, name), nil
	}
	if flag&writeFlags == 0 {
		return f.openRead(name, flag)
	}
	if fl, err, ok := f.fastOpenWrite(name, f.getwd(), flag, perm); ok {
		return fl, err
	}
	// O_NOFOLLOW, and O_CREATE|O_EXCL, act on a final symbolic link itself
	// (the kernel then refuses it): check and open that entry.
	follow := flag&syscall.O_NOFOLLOW == 0 && flag&(os.O_CREATE|os.O_EXCL) != os.O_CREATE|os.O_EXCL
	r, _, err := f.single(policy.OpWrite, "open", name, follow, true, flag)
	if err != nil {
		return nil, err
	}
	var fl afero.File
	if flag&syscall.O_NOFOLLOW != 0 {
		// os.Root resolves a final link itself; keep open(2)'s answer.
		fi := r.info
		if fi == nil {
			fi, _ = f.lstat(r.path)
		}
		if fi != nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, pathErr("open", name, syscall.ELOOP)
		}
	}
	root, rp, ok, rerr := f.inRootR(r)
	switch {
	case rerr != nil:
		return nil, f.renameErr(rerr, "open", name)
	case ok:
		var of *os.File
		of, err = root.OpenFile(rp, flag, perm)
		if err == nil {
			fl = of
		}
	default:
		fl, err = f.base.OpenFile(r.target(), flag, perm)
	}
	if err != nil {
		return nil, f.renameErr(err, "open", name)
	}
	return named(fl, name), nil
}

// Stat returns the information of where name resolves (links followed).
func (f *Fs) Stat(name string) (os.FileInfo, error) {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	if err := badName("stat", name); err != nil {
		return nil, err
	}
	if f.off() {
		if err := f.offErr("stat", name); err != nil {
			return nil, err
		}
		return f.base.Stat(f.abs(name))
	}
	if f.isOS {
		return f.stat("stat", name, true)
	}
	if !f.quietRead() {
		if _, _, err := f.single(policy.OpRead, "stat", name, true, false, 0); err != nil {
			return nil, err
		}
	}
	fi, err := f.base.Stat(f.abs(name))
	return fi, f.renameErr(err, "stat", name)
}

// LstatIfPossible returns the information of name itself, not following a
// final symbolic link, when the base can; the bool reports whether Lstat was
// used.
func (f *Fs) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	if err := badName("lstat", name); err != nil {
		return nil, false, err
	}
	var a string
	if f.off() {
		if err := f.offErr("lstat", name); err != nil {
			return nil, false, err
		}
		a = f.abs(name)
	} else if f.isOS {
		fi, err := f.stat("lstat", name, false)
		return fi, true, err
	} else if f.quietRead() {
		a = f.abs(name)
	} else {
		_, cwd, err := f.single(policy.OpRead, "lstat", name, false, false, 0)
		if err != nil {
			return nil, false, err
		}
		a = absAt(name, cwd)
	}
	switch {
	case f.isOS:
		fi, err := os.Lstat(a)
		return fi, true, f.renameErr(err, "lstat", name)
	case f.lst != nil:
		fi, ok, err := f.lst.LstatIfPossible(a)
		return fi, ok, f.renameErr(err, "lstat", name)
	}
	fi, err := f.base.Stat(a)
	return fi, false, f.renameErr(err, "lstat", name)
}

// ReadlinkIfPossible returns the target of the symbolic link name.
func (f *Fs) ReadlinkIfPossible(name string) (string, error) {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	if err := badName("readlink", name); err != nil {
		return "", err
	}
	var a string
	if f.off() {
		if err := f.offErr("readlink", name); err != nil {
			return "", err
		}
		a = f.abs(name)
	} else if f.quietRead() {
		a = f.abs(name)
	} else {
		_, cwd, err := f.single(policy.OpRead, "readlink", name, false, false, 0)
		if err != nil {
			return "", err
		}
		a = absAt(name, cwd)
	}
	s, err := f.readlink(a)
	return s, f.renameErr(err, "readlink", name)
}

// Mkdir creates the directory name: a create of the new entry.
func (f *Fs) Mkdir(name string, perm os.FileMode) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	if err := badName("mkdir", name); err != nil {
		return err
	}
	if f.off() {
		if err := f.offErr("mkdir", name); err != nil {
			return err
		}
		return f.renameErr(f.base.Mkdir(f.abs(name), perm), "mkdir", name)
	}
	if err, ok := f.mkdirSlashedLink(name); ok {
		return err
	}
	if err, ok := f.fastMkdir(name, f.getwd(), perm); ok {
		return err
	}
	r, _, err := f.single(policy.OpCreate, "mkdir", name, false, false, 0)
	if err != nil {
		return err
	}
	return f.carryOut(r, "mkdir", name,
		func(root *os.Root, p string) error { return root.Mkdir(p, perm) },
		func(p string) error { return f.base.Mkdir(p, perm) })
}

// mkdirSlashedLink answers Mkdir of a symbolic link named with a trailing
// slash ("link/") as the kernel does: mkdir never follows a final link,
// so the name exists (EEXIST), dangling or not, and nothing is made. The
// policy is asked about the link first, as for any mkdir. ok is false for
// any other name.
func (f *Fs) mkdirSlashedLink(name string) (err error, ok bool) {
	t := strings.TrimRight(name, "/")
	if t == name || t == "" {
		return nil, false
	}
	r, rerr := f.resolve(t, f.getwd(), false)
	if rerr != nil {
		return nil, false
	}
	if fi, lerr := f.lstat(r.path); lerr != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil, false
	}
	if _, _, err := f.single(policy.OpCreate, "mkdir", t, false, false, 0); err != nil {
		return err, true
	}
	return pathErr("mkdir", name, syscall.EEXIST), true
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
	if err := badName("mkdir", name); err != nil {
		return err
	}
	if f.off() {
		if err := f.offErr("mkdir", name); err != nil {
			return err
		}
		return f.renameErr(f.base.MkdirAll(f.abs(name), perm), "mkdir", name)
	}
	cwd := f.getwd()
	ev := &audit.Event{Op: policy.OpCreate, Target: name}
	r, err := f.resolveLexical(name, cwd, true)
	if err != nil {
		derr := f.denyResolve(ev, err)
		if derr == syscall.ENOTDIR {
			return pathErr("mkdir", f.notDirPrefix(name, cwd), derr)
		}
		return pathErr("mkdir", name, derr)
	}
	ev.Resolved = r.path
	var req multiReq
	if r.info == nil {
		for p := r.path; p != "/"; p = parentOf(p) {
			if _, err := f.lstat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
				break
			}
			req = append(req, pathReq{op: policy.OpCreate, path: p, cwd: cwd})
		}
	}
	if len(req) == 0 {
		// Nothing to create: a read of the existing entry, as os.MkdirAll
		// only stats it.
		ev.Op = policy.OpRead
		ev.Detail = "MkdirAll of an existing entry"
		if err := f.check(ev, &pathReq{op: policy.OpRead, path: r.path, cwd: cwd}); err != nil {
			return pathErr("mkdir", name, err)
		}
		fi, err := f.base.Stat(r.path)
		if err != nil {
			return f.renameErr(err, "mkdir", name)
		}
		if !fi.IsDir() {
			return pathErr("mkdir", name, syscall.ENOTDIR)
		}
		return nil
	}
	// Outermost first, so a denial names the first directory that would
	// have been made.
	for i, j := 0, len(req)-1; i < j; i, j = i+1, j-1 {
		req[i], req[j] = req[j], req[i]
	}
	if err := f.check(ev, req); err != nil {
		return pathErr("mkdir", name, err)
	}
	if r.path != filepath.Clean(absAt(name, cwd)) {
		// Allowed, and a symbolic link on the way: os.MkdirAll stops at
		// one that points at nothing ("mkdir P: file exists") instead of
		// making its target. Nothing is created.
		if p, ok := f.danglingPrefix(name, cwd); ok {
			return &fs.PathError{Op: "mkdir", Path: p, Err: syscall.EEXIST}
		}
	}
	return f.carryOut(r, "mkdir", name,
		func(root *os.Root, p string) error { return root.MkdirAll(p, perm) },
		func(p string) error { return f.base.MkdirAll(p, perm) })
}

// Remove removes the entry name itself (a final symbolic link is removed,
// not followed).
func (f *Fs) Remove(name string) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	if err := badName("remove", name); err != nil {
		return err
	}
	if f.off() {
		if err := f.offErr("remove", name); err != nil {
			return err
		}
		return f.renameErr(f.base.Remove(f.abs(name)), "remove", name)
	}
	if err, ok := f.removeSlashedLink(name); ok {
		return err
	}
	if err, ok := f.fastRemove(name, f.getwd()); ok {
		return err
	}
	r, _, err := f.single(policy.OpDelete, "remove", name, false, false, 0)
	if err != nil {
		return err
	}
	return f.carryOut(r, "remove", name, (*os.Root).Remove, f.base.Remove)
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

// removeSlashedLink answers Remove of a symbolic link named with a
// trailing slash ("link/") as the kernel does: rmdir does not follow the
// link, which is not a directory (ENOTDIR, dangling or not), so nothing
// is removed. The policy is asked about
// the link first, as for any remove. ok is false for any other name.
func (f *Fs) removeSlashedLink(name string) (err error, ok bool) {
	t := strings.TrimRight(name, "/")
	if t == name || t == "" {
		return nil, false
	}
	r, rerr := f.resolve(t, f.getwd(), false)
	if rerr != nil {
		return nil, false
	}
	fi, lerr := f.lstat(r.path)
	if lerr != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil, false
	}
	if _, _, err := f.single(policy.OpDelete, "remove", t, false, false, 0); err != nil {
		return err, true
	}
	return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTDIR}, true
}

// RemoveAll removes name and everything under it. Every entry it would
// remove is checked first (symbolic links are removed, not followed); if
// any is denied, nothing is removed.
func (f *Fs) RemoveAll(name string) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
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
	if f.off() {
		if err := f.offErr("removeall", name); err != nil {
			return err
		}
		return f.renameErr(f.base.RemoveAll(f.abs(name)), "removeall", name)
	}
	cwd := f.getwd()
	ev := &audit.Event{Op: policy.OpDelete, Target: name}
	// os.RemoveAll removes the last name itself, trailing slashes or not:
	// "link/" removes the link, never its target's contents.
	target := name
	if t := strings.TrimRight(name, "/"); t != "" {
		target = t
	}
	r, err := f.resolve(target, cwd, false)
	if err != nil {
		derr := f.denyResolve(ev, err)
		if derr == syscall.ENOENT {
			return nil // os.RemoveAll of nothing succeeds
		}
		return pathErr("removeall", name, derr)
	}
	ev.Resolved = r.path
	req := multiReq{{op: policy.OpDelete, path: r.path, cwd: cwd}}
	// The tree is only walked when the entry itself may go: a denied entry
	// (outside the roots, a root itself) is decided alone, and a host that
	// rescues it approves the whole tree.
	if f.pureAllows(req) {
		if err := f.walkTree(r.path, func(p string) {
			req = append(req, pathReq{op: policy.OpDelete, path: p, cwd: cwd})
		}); err != nil {
			return f.renameErr(err, "removeall", name)
		}
	}
	if err := f.check(ev, req); err != nil {
		return pathErr("removeall", name, err)
	}
	return f.carryOut(r, "removeall", name, (*os.Root).RemoveAll, f.base.RemoveAll)
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
	if err := badNames("rename", oldname, newname); err != nil {
		return err
	}
	if f.off() {
		if err := f.offErr("rename", oldname); err != nil {
			return f.renameLinkErr(err, "rename", oldname, newname)
		}
		return f.renameLinkErr(f.base.Rename(f.abs(oldname), f.abs(newname)), "rename", oldname, newname)
	}
	if err, ok := f.fastRename(oldname, newname, f.getwd()); ok {
		return err
	}
	ro, rn, err := f.pair(policy.OpMove, "rename", oldname, newname, false, func(ro, rn resolved, cwd string) (audit.Request, error) {
		req := multiReq{{op: policy.OpMove, path: ro.path, cwd: cwd}, {op: policy.OpMove, path: rn.path, cwd: cwd}}
		if !f.pureAllows(req) {
			return req, nil // decided on the two names alone, as RemoveAll
		}
		err := f.walkTree(ro.path, func(p string) {
			req = append(req,
				pathReq{op: policy.OpMove, path: p, cwd: cwd},
				pathReq{op: policy.OpMove, path: rn.path + p[len(ro.path):], cwd: cwd})
		})
		return req, err
	})
	if err != nil {
		return err
	}
	err = f.twoNames(ro.path, rn.path,
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
	if err := badNames("link", oldname, newname); err != nil {
		return err
	}
	if !f.isOS {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: ErrNoHardLink}
	}
	if f.off() {
		if err := f.offErr("link", oldname); err != nil {
			return f.renameLinkErr(err, "link", oldname, newname)
		}
		return f.renameLinkErr(os.Link(f.abs(oldname), f.abs(newname)), "link", oldname, newname)
	}
	ro, rn, err := f.pair(policy.OpLink, "link", oldname, newname, false, func(ro, rn resolved, cwd string) (audit.Request, error) {
		return &pairReq{
			a: pathReq{op: policy.OpLink, path: ro.path, cwd: cwd, nlink: f.nlinkOf(ro)},
			b: pathReq{op: policy.OpLink, path: rn.path, cwd: cwd},
		}, nil
	})
	if err != nil {
		return err
	}
	err = f.twoNames(ro.path, rn.path,
		func(r *os.Root, a, b string) error { return r.Link(a, b) },
		func(da int, a string, db int, b string) error { return linkat(da, a, db, b) },
		os.Link)
	return f.renameLinkErr(err, "link", oldname, newname)
}

// ErrNoHardLink is returned by Link on a base that has no hard links.
var ErrNoHardLink = errors.New("hard links are not supported by this filesystem")

// pair resolves both names of a two-name operation and runs the pipeline
// with the request build makes.
func (f *Fs) pair(op policy.Op, opName, oldname, newname string, followOld bool,
	build func(ro, rn resolved, cwd string) (audit.Request, error)) (resolved, resolved, error) {
	cwd := f.getwd()
	ev := &audit.Event{Op: op, Target: oldname, Target2: newname}
	ro, err := f.resolve(oldname, cwd, followOld)
	if err != nil {
		return ro, ro, f.renameLinkErr(f.denyResolve(ev, err), opName, oldname, newname)
	}
	ev.Resolved = ro.path
	rn, err := f.resolve(newname, cwd, false)
	if err != nil {
		return ro, rn, f.renameLinkErr(f.denyResolve(ev, err), opName, oldname, newname)
	}
	ev.Resolved2 = rn.path
	for _, r := range []resolved{ro, rn} {
		if r.slash {
			if fi, err := f.base.Stat(r.path); err == nil && !fi.IsDir() {
				return ro, rn, &os.LinkError{Op: opName, Old: oldname, New: newname, Err: syscall.ENOTDIR}
			}
		}
	}
	req, err := build(ro, rn, cwd)
	if err != nil {
		return ro, rn, f.renameLinkErr(err, opName, oldname, newname)
	}
	if err := f.check(ev, req); err != nil {
		return ro, rn, &os.LinkError{Op: opName, Old: oldname, New: newname, Err: err}
	}
	return ro, rn, nil
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
	if err := badNames("symlink", oldname, newname); err != nil {
		return err
	}
	if f.ln == nil && !f.isOS {
		return &os.LinkError{Op: "symlink", Old: oldname, New: newname, Err: afero.ErrNoSymlink}
	}
	if f.off() {
		if err := f.offErr("symlink", newname); err != nil {
			return f.renameLinkErr(err, "symlink", oldname, newname)
		}
		return f.renameLinkErr(f.ln.SymlinkIfPossible(oldname, f.abs(newname)), "symlink", oldname, newname)
	}
	cwd := f.getwd()
	ev := &audit.Event{Op: policy.OpLink, Target: oldname, Target2: newname}
	rn, err := f.resolve(newname, cwd, false)
	if err != nil {
		return f.renameLinkErr(f.denyResolve(ev, err), "symlink", oldname, newname)
	}
	ev.Resolved2 = rn.path
	newReq := pathReq{op: policy.OpLink, path: rn.path, cwd: cwd}
	var req audit.Request = &newReq
	if !f.opts.symlinkAnywhere {
		if oldname == "" {
			return &os.LinkError{Op: "symlink", Old: oldname, New: newname, Err: syscall.ENOENT}
		}
		rt, err := f.resolve(oldname, parentOf(rn.path), true)
		if err != nil {
			return f.renameLinkErr(f.denyResolve(ev, err), "symlink", oldname, newname)
		}
		ev.Resolved = rt.path
		req = &pairReq{a: newReq, b: pathReq{op: policy.OpLink, path: rt.path, cwd: cwd, detail: detailSymlinkTarget}}
	}
	if err := f.check(ev, req); err != nil {
		return &os.LinkError{Op: "symlink", Old: oldname, New: newname, Err: err}
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
	return f.attr("chmod", name,
		func(r *os.Root, p string) error { return r.Chmod(p, mode) },
		func(p string) error { return f.base.Chmod(p, mode) })
}

// Chown changes the owner of where name resolves: an attr change.
func (f *Fs) Chown(name string, uid, gid int) error {
	return f.attr("chown", name,
		func(r *os.Root, p string) error { return r.Chown(p, uid, gid) },
		func(p string) error { return f.base.Chown(p, uid, gid) })
}

// Chtimes changes the times of where name resolves: an attr change.
func (f *Fs) Chtimes(name string, atime, mtime time.Time) error {
	return f.attr("chtimes", name,
		func(r *os.Root, p string) error { return r.Chtimes(p, atime, mtime) },
		func(p string) error { return f.base.Chtimes(p, atime, mtime) })
}

func (f *Fs) attr(opName, name string, inRoot func(*os.Root, string) error, onBase func(string) error) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	if err := badName(opName, name); err != nil {
		return err
	}
	if f.off() {
		if err := f.offErr(opName, name); err != nil {
			return err
		}
		return f.renameErr(onBase(f.abs(name)), opName, name)
	}
	r, _, err := f.single(policy.OpAttr, opName, name, true, true, 0)
	if err != nil {
		return err
	}
	return f.carryOut(r, opName, name, inRoot, onBase)
}

// carryOut performs an allowed mutation of r: through the os.Root of the
// deepest write root holding it (path relative to that root), or on the
// base with the resolved path when no root does (a call a host callback or
// Warn mode let through). Errors carry the caller's name.
func (f *Fs) carryOut(r resolved, opName, name string, inRoot func(*os.Root, string) error, onBase func(string) error) error {
	root, rp, ok, err := f.inRootR(r)
	switch {
	case err != nil:
	case ok:
		err = inRoot(root, rp)
	default:
		err = onBase(r.target())
	}
	return f.renameErr(err, opName, name)
}

// Chdir changes the handle's working directory (not the process's): a
// chdir checked on the destination, which must be a directory.
func (f *Fs) Chdir(dir string) error {
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	if err := badName("chdir", dir); err != nil {
		return err
	}
	// In Off mode check passes (after the scope rules); the destination is
	// still resolved and must be a directory.
	r, _, err := f.single(policy.OpChdir, "chdir", dir, true, false, 0)
	if err != nil {
		return err
	}
	fi := r.info
	if fi == nil || fi.Mode()&fs.ModeSymlink != 0 {
		if fi, err = f.base.Stat(r.path); err != nil {
			return f.renameErr(err, "chdir", dir)
		}
	}
	if !fi.IsDir() {
		return pathErr("chdir", dir, syscall.ENOTDIR)
	}
	p := r.path
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
		{os.O_TRUNC, "O_TRUNC"}, {os.O_APPEND, "O_APPEND"}, {os.O_SYNC, "O_SYNC"}, {syscall.O_NOFOLLOW, "O_NOFOLLOW"},
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
