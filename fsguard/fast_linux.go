package fsguard

import (
	"io/fs"
	"os"
	"syscall"
	"unsafe"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// The fast paths for the OS base. Resolving a name component by component
// costs one lstat per component; for the common case, a clean name under a
// write root with no symbolic link on the way, the kernel can prove the
// same thing in one call and then pin it:
//
//  1. the name, made absolute, must be lexically clean (no ".", "..",
//     repeated or trailing separators), so that without symbolic links it
//     is its own resolution; it must lie under a write root;
//  2. its parent is opened from the root's directory descriptor with
//     openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS)
//     (no call at all when the parent is the root itself): success proves
//     the parent chain holds no symbolic link, so the lexical name is where
//     the call lands, and the descriptor pins that directory;
//  3. the last component is looked at with fstatat(AT_SYMLINK_NOFOLLOW)
//     on that descriptor (a link there sends the call to the slow path
//     when it would be followed; the link count feeds the hard-link rule);
//  4. the decision is made on that path, exactly as on the slow path;
//  5. the call acts on (descriptor, last component) with O_NOFOLLOW, so a
//     link swapped in after step 3 makes it fail instead of following.
//
// Anything unusual (a link on the way, a missing parent, an error, a
// kernel without openat2) falls back to the slow path, which resolves
// with policy.Resolve and acts through os.Root. No fast path runs the
// audit pipeline and then falls back: the slow path would ask again.

// fastStat fills a syscall.Stat_t (what os.Stat's Sys returns) through
// unix.Fstatat: the two types describe the same kernel struct.
var _ [unsafe.Sizeof(unix.Stat_t{})]byte = [unsafe.Sizeof(syscall.Stat_t{})]byte{}

const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func openDirFd(dir string) int {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

func closeDirFd(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

// fastName returns the root handle, root directory and absolute path for
// name when the fast path may try it. The handle comes read-held
// (rootHandle.acquire); the caller releases it when done with its
// descriptor.
func (f *Fs) fastName(name, cwd string) (*rootHandle, string, string, bool) {
	if !f.isOS || fastOff.Load() || f.scope == nil {
		return nil, "", "", false
	}
	p := absAt(name, cwd)
	if !lexicallyClean(p) {
		return nil, "", "", false
	}
	dir := f.rootFor(p)
	if dir == "" || dir == p {
		return nil, "", "", false
	}
	h, err := f.roots.get(dir)
	if err != nil || !h.acquire() {
		return nil, "", "", false
	}
	return h, dir, p, true
}

// lexicallyClean reports whether p is absolute with no empty, "." or ".."
// component and no trailing separator.
func lexicallyClean(p string) bool {
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' {
		return false
	}
	start := 1
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		switch p[start:i] {
		case "", ".", "..":
			return false
		}
		start = i + 1
	}
	return true
}

// parent is a pinned parent directory: the descriptor and the last
// component of the path.
type parent struct {
	fd    int
	base  string
	owned bool // fd must be closed
}

func (pd parent) close() {
	if pd.owned {
		unix.Close(pd.fd)
	}
}

// openParent opens p's parent beneath the root without following any
// symbolic link. ok is false when the fast path cannot go on.
func openParent(h *rootHandle, dir, p string) (parent, bool) {
	pp := parentOf(p)
	pd := parent{fd: h.fd, base: baseName(p)}
	if pp == dir {
		return pd, true
	}
	for {
		fd, err := unix.Openat2(h.fd, rel(dir, pp), &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: beneath,
		})
		switch {
		case err == nil:
			pd.fd, pd.owned = fd, true
			return pd, true
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err == unix.ENOSYS:
			fastOff.Store(true)
		}
		return pd, false
	}
}

// entryInfo is what fstatat says about the last component.
type entryInfo struct {
	missing bool
	mode    uint32
	nlink   uint64
}

func lookAt(pd parent) (entryInfo, bool) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(pd.fd, pd.base, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case err == nil:
			return entryInfo{mode: st.Mode & unix.S_IFMT, nlink: uint64(st.Nlink)}, true
		case err == unix.EINTR:
			continue
		case err == unix.ENOENT:
			return entryInfo{missing: true}, true
		}
		return entryInfo{}, false
	}
}

// allow decides req on the fast path. Quiet scopes decide with the pure
// policies and go through the pipeline only when one denies; others always
// go through it, with the event filled in.
func (f *Fs) allow(ev func() *audit.Event, req audit.Request) error {
	if f.scope.Silent() && f.scope.Mode(audit.FS) != audit.Off && f.pureAllows(req) {
		return nil
	}
	return f.check(ev(), req)
}

// fastOpenWrite is OpenFile for a write on the fast path. It differs from
// the others: the file itself, not its parent, is what gets pinned.
//
//   - A pure decision on the lexical path comes first; a path any policy
//     denies (a protected name, outside the roots) goes to the slow path
//     before anything is opened.
//   - The file is opened from the root's descriptor with openat2 and
//     RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, without O_CREATE, O_TRUNC and
//     O_EXCL: success proves the lexical path is the real one, and opening
//     an existing file changes nothing. fstat on the descriptor gives the
//     link count; then the decision is made (pipeline or pure), and only
//     then is the file truncated (ftruncate) for O_TRUNC.
//   - If the file does not exist (ENOENT), the walk up to it held no
//     symbolic link either, so the lexical path is again the resolution:
//     the decision is made, then the file is created with openat2 and
//     O_CREATE|O_EXCL under the same resolve flags, so only what was
//     checked as new is created; a file that appeared meanwhile (maybe a
//     hard link) sends the call round again, and what is there is decided
//     afresh (a scope with callbacks is then asked twice for the call).
func (f *Fs) fastOpenWrite(name, cwd string, flag int, perm os.FileMode) (afero.File, error, bool) {
	if flag&(unix.O_PATH|unix.O_TMPFILE) != 0 {
		return nil, nil, false
	}
	h, dir, p, ok := f.fastName(name, cwd)
	if !ok {
		return nil, nil, false
	}
	defer h.release()
	if !f.pureAllows(&pathReq{op: policy.OpWrite, path: p, cwd: cwd}) {
		return nil, nil, false
	}
	silent := f.scope.Silent()
	rp := rel(dir, p)
	ev := func() *audit.Event {
		return &audit.Event{Op: policy.OpWrite, Target: name, Resolved: p, Detail: flagString(flag)}
	}
	for range 3 {
		fd, err := openat2(h.fd, rp, flag&^(os.O_CREATE|os.O_TRUNC|os.O_EXCL)|unix.O_CLOEXEC, 0)
		switch {
		case err == nil:
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				unix.Close(fd)
				return nil, nil, false
			}
			req := pathReq{op: policy.OpWrite, path: p, cwd: cwd}
			if st.Mode&unix.S_IFMT == unix.S_IFREG && !f.opts.multiLinkWrites {
				req.nlink = uint64(st.Nlink)
			}
			// A silent scope already has its answer for this path from the
			// pure decision above, unless the link count now matters.
			if !silent || req.nlink > 1 {
				if err := f.allow(ev, &req); err != nil {
					unix.Close(fd)
					return nil, pathErr("open", name, err), true
				}
			}
			if flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL {
				unix.Close(fd)
				return nil, pathErr("open", name, unix.EEXIST), true
			}
			if flag&os.O_TRUNC != 0 && st.Mode&unix.S_IFMT == unix.S_IFREG {
				if err := ignoringEINTR(func() error { return unix.Ftruncate(fd, 0) }); err != nil {
					unix.Close(fd)
					return nil, pathErr("open", name, err), true
				}
			}
			return os.NewFile(uintptr(fd), name), nil, true
		case err == unix.ENOENT && flag&os.O_CREATE != 0:
			if !silent {
				if err := f.allow(ev, &pathReq{op: policy.OpWrite, path: p, cwd: cwd}); err != nil {
					return nil, pathErr("open", name, err), true
				}
			}
			fd, err = openat2(h.fd, rp, flag|os.O_EXCL|unix.O_CLOEXEC, syscallMode(perm))
			if err == unix.EEXIST && flag&os.O_EXCL == 0 {
				continue
			}
			if err != nil {
				return nil, pathErr("open", name, err), true
			}
			return os.NewFile(uintptr(fd), name), nil, true
		case err == unix.ENOSYS:
			fastOff.Store(true)
		}
		return nil, nil, false
	}
	return nil, pathErr("open", name, unix.EEXIST), true
}

func openat2(dirfd int, name string, flag int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flag), Mode: uint64(mode), Resolve: beneath}
	for {
		fd, err := unix.Openat2(dirfd, name, &how)
		if err != unix.EINTR && err != unix.EAGAIN {
			return fd, err
		}
	}
}

// fastRemove is Remove on the fast path; it removes the entry itself, as
// os.Remove does (unlink, then rmdir).
func (f *Fs) fastRemove(name, cwd string) (error, bool) {
	h, dir, p, ok := f.fastName(name, cwd)
	if !ok {
		return nil, false
	}
	defer h.release()
	pd, ok := openParent(h, dir, p)
	if !ok {
		return nil, false
	}
	defer pd.close()
	req := pathReq{op: policy.OpDelete, path: p, cwd: cwd}
	if err := f.allow(func() *audit.Event {
		return &audit.Event{Op: policy.OpDelete, Target: name, Resolved: p}
	}, &req); err != nil {
		return pathErr("remove", name, err), true
	}
	err := ignoringEINTR(func() error { return unix.Unlinkat(pd.fd, pd.base, 0) })
	if err == nil {
		return nil, true
	}
	err1 := ignoringEINTR(func() error { return unix.Unlinkat(pd.fd, pd.base, unix.AT_REMOVEDIR) })
	if err1 == nil {
		return nil, true
	}
	if err1 != unix.ENOTDIR {
		err = err1
	}
	return pathErr("remove", name, err), true
}

// fastMkdir is Mkdir on the fast path.
func (f *Fs) fastMkdir(name, cwd string, perm os.FileMode) (error, bool) {
	h, dir, p, ok := f.fastName(name, cwd)
	if !ok {
		return nil, false
	}
	defer h.release()
	pd, ok := openParent(h, dir, p)
	if !ok {
		return nil, false
	}
	defer pd.close()
	req := pathReq{op: policy.OpCreate, path: p, cwd: cwd}
	if err := f.allow(func() *audit.Event {
		return &audit.Event{Op: policy.OpCreate, Target: name, Resolved: p}
	}, &req); err != nil {
		return pathErr("mkdir", name, err), true
	}
	err := ignoringEINTR(func() error { return unix.Mkdirat(pd.fd, pd.base, syscallMode(perm)) })
	if err != nil {
		return pathErr("mkdir", name, err), true
	}
	return nil, true
}

// fastRename is Rename on the fast path, for entries that are not
// directories (a directory's tree must be checked on the slow path).
func (f *Fs) fastRename(oldname, newname, cwd string) (error, bool) {
	ho, do, po, ok := f.fastName(oldname, cwd)
	if !ok {
		return nil, false
	}
	defer ho.release()
	// The new name's handle is acquired only when it is another one: read
	// locks must not nest (a waiting Close would deadlock them).
	pn := absAt(newname, cwd)
	hn, dn := ho, do
	if !lexicallyClean(pn) {
		return nil, false
	}
	if d := f.rootFor(pn); d != do {
		var ok bool
		if hn, dn, pn, ok = f.fastName(newname, cwd); !ok {
			return nil, false
		}
		defer hn.release()
	} else if pn == do {
		return nil, false
	}
	pdo, ok := openParent(ho, do, po)
	if !ok {
		return nil, false
	}
	defer pdo.close()
	pdn := pdo
	pdn.owned = false
	if ho != hn || parentOf(po) != parentOf(pn) {
		if pdn, ok = openParent(hn, dn, pn); !ok {
			return nil, false
		}
		defer pdn.close()
	} else {
		pdn.base = baseName(pn)
	}
	if info, ok := lookAt(pdo); !ok || info.missing || info.mode == unix.S_IFDIR {
		return nil, false
	}
	req := pairReq{a: pathReq{op: policy.OpMove, path: po, cwd: cwd}, b: pathReq{op: policy.OpMove, path: pn, cwd: cwd}}
	if err := f.allow(func() *audit.Event {
		return &audit.Event{Op: policy.OpMove, Target: oldname, Target2: newname, Resolved: po, Resolved2: pn}
	}, &req); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}, true
	}
	err := ignoringEINTR(func() error { return unix.Renameat(pdo.fd, pdo.base, pdn.fd, pdn.base) })
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}, true
	}
	return nil, true
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// syscallMode converts a FileMode to open(2)/mkdir(2) mode bits, as the os
// package does.
func syscallMode(m os.FileMode) uint32 {
	o := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		o |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		o |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		o |= unix.S_ISVTX
	}
	return o
}

// fastResolve proves, with one openat2 call, that the lexically clean
// absolute path p holds no symbolic link on the way (and none as its last
// component when follow is set), so that p is its own resolution. A
// missing component ends the walk as policy.Resolve does: what exists was
// walked without links, the rest is appended as written. ok is false when
// the kernel cannot prove it (a link on the way, a file used as a
// directory, anything else): the caller then resolves component by
// component.
func fastResolve(p string, follow bool) (string, bool) {
	if fastOff.Load() || !lexicallyClean(p) {
		return "", false
	}
	target, flags := p, unix.O_PATH|unix.O_CLOEXEC
	if !follow {
		target, flags = parentOf(p), flags|unix.O_DIRECTORY
	}
	how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, target, &how)
		switch {
		case err == nil:
			unix.Close(fd)
			return p, true
		case err == unix.ENOENT:
			return p, true
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err == unix.ENOSYS:
			fastOff.Store(true)
		}
		return "", false
	}
}

// noLinks proves an absolute name from "/": no symbolic link anywhere on
// the way, magic links included.
const noLinks = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// fastReadPath returns the absolute path of name when a read may take the
// fast path: the OS base, openat2 on, a lexically clean name, and a pure
// decision that allows the read of that path. A path the pure policies
// deny goes to the slow path, which resolves it (it may not be where the
// name lands), so nothing a policy denies is ever opened.
func (f *Fs) fastReadPath(name, cwd string) (string, bool) {
	if !f.isOS || fastOff.Load() || f.scope == nil {
		return "", false
	}
	p := absAt(name, cwd)
	if !lexicallyClean(p) || !f.pureAllows(&pathReq{op: policy.OpRead, path: p, cwd: cwd}) {
		return "", false
	}
	return p, true
}

// fastOpenRead is a read-only OpenFile on the fast path: the file itself is
// opened with openat2(RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS) from "/",
// so success proves the lexical path is where the name lands, and that
// same descriptor is handed back (no second open). A missing component
// (ENOENT) proves it too: the walk up to it met no link. The decision is
// made on the proven path (a silent scope already has it from
// fastReadPath); anything else (a link on the way, O_NOFOLLOW on a link, a
// file used as a directory, an unreadable directory) goes to the slow path.
//
// In a scope with callbacks the file is open while they decide (a denial
// closes it): opening a FIFO or a device that a callback then refuses has
// the effect of opening it.
func (f *Fs) fastOpenRead(name, cwd string, flag int) (afero.File, error, bool) {
	if flag&(unix.O_PATH|unix.O_TMPFILE) != 0 {
		return nil, nil, false
	}
	p, ok := f.fastReadPath(name, cwd)
	if !ok {
		return nil, nil, false
	}
	fd, err := openat2How(unix.AT_FDCWD, p, flag|unix.O_CLOEXEC, 0, noLinks)
	switch err {
	case nil, unix.ENOENT:
	case unix.ENOSYS:
		fastOff.Store(true)
		return nil, nil, false
	default:
		return nil, nil, false
	}
	if derr := f.allowRead(name, p, cwd, flagString(flag)); derr != nil {
		if err == nil {
			unix.Close(fd)
		}
		return nil, pathErr("open", name, derr), true
	}
	if err != nil {
		return nil, pathErr("open", name, err), true
	}
	return os.NewFile(uintptr(fd), name), nil, true
}

// allowRead runs the decision for a read of the proven path p: nothing
// more for a silent scope (fastReadPath made it), the pipeline otherwise.
func (f *Fs) allowRead(name, p, cwd, detail string) error {
	if f.scope.Silent() && f.scope.Mode(audit.FS) != audit.Off {
		return nil
	}
	return f.check(&audit.Event{Op: policy.OpRead, Target: name, Resolved: p, Detail: detail}, &pathReq{op: policy.OpRead, path: p, cwd: cwd})
}

// fastStat is Stat (follow) or Lstat on the fast path. The parent is
// pinned without following any link: through the write root that holds
// it (no call at all for an entry of the root itself), else with openat2
// from "/"; the entry is then looked at with fstatat(AT_SYMLINK_NOFOLLOW)
// on that descriptor. A symbolic link there, when Stat would follow it,
// goes to the slow path.
func (f *Fs) fastStat(opName, name, cwd string, follow bool) (fs.FileInfo, error, bool) {
	p, ok := f.fastReadPath(name, cwd)
	if !ok {
		return nil, nil, false
	}
	pd, done, err := f.pinParent(p)
	if err != nil && err != unix.ENOENT {
		return nil, nil, false
	}
	defer done()
	info := &statInfo{name: pd.base}
	if err == nil {
		err = ignoringEINTR(func() error {
			return unix.Fstatat(pd.fd, pd.base, (*unix.Stat_t)(unsafe.Pointer(&info.st)), unix.AT_SYMLINK_NOFOLLOW)
		})
		switch {
		case err == unix.ENOENT:
		case err != nil:
			return nil, nil, false
		case follow && info.st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return nil, nil, false
		}
	}
	if derr := f.allowRead(name, p, cwd, ""); derr != nil {
		return nil, pathErr(opName, name, derr), true
	}
	if err != nil {
		return nil, pathErr(opName, name, err), true
	}
	return info, nil, true
}

// pinParent pins the directory holding the lexically clean path p (see
// fastStat). done releases what was taken; it is to be called whatever the
// error. ENOENT means a component is missing, found without meeting a
// link.
func (f *Fs) pinParent(p string) (pd parent, done func(), err error) {
	done = func() {}
	if dir := f.rootFor(p); dir != "" && dir != p {
		if h, herr := f.roots.get(dir); herr == nil && h.acquire() {
			if pd, ok := openParent(h, dir, p); ok {
				return pd, func() { pd.close(); h.release() }, nil
			}
			h.release()
		}
	}
	fd, err := openat2How(unix.AT_FDCWD, parentOf(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0, noLinks)
	if err != nil {
		if err == unix.ENOSYS {
			fastOff.Store(true)
		}
		return parent{}, done, err
	}
	pd = parent{fd: fd, base: baseName(p), owned: true}
	return pd, pd.close, nil
}

func openat2How(dirfd int, name string, flag int, mode uint32, resolve uint64) (int, error) {
	how := unix.OpenHow{Flags: uint64(flag), Mode: uint64(mode), Resolve: resolve}
	for {
		fd, err := unix.Openat2(dirfd, name, &how)
		if err != unix.EINTR && err != unix.EAGAIN {
			return fd, err
		}
	}
}

// openNoLinks opens the resolved path p (clean, absolute; a trailing "/"
// kept) with no link followed, and hands the descriptor back as a file
// named as the caller named it.
func openNoLinks(p, name string, flag int) (afero.File, error) {
	fd, err := openat2How(unix.AT_FDCWD, p, flag|unix.O_CLOEXEC, 0, noLinks)
	if err != nil {
		if err == unix.ENOSYS {
			fastOff.Store(true)
		}
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// statNoLinks looks at the resolved path p (clean, absolute, not "/")
// itself, with no link followed: its parent pinned from "/" with openat2,
// then fstatat(AT_SYMLINK_NOFOLLOW). The information is named name, as
// os.Stat names it (the last element of the name as called).
func statNoLinks(p, name string) (fs.FileInfo, error) {
	fd, err := openat2How(unix.AT_FDCWD, parentOf(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0, noLinks)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	info := &statInfo{name: name}
	err = ignoringEINTR(func() error {
		return unix.Fstatat(fd, baseName(p), (*unix.Stat_t)(unsafe.Pointer(&info.st)), unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}
