package fsguard

import (
	"io/fs"
	"os"
	"syscall"
	"unsafe"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// The fast route for the OS base (route.go, step 2). Resolving a name
// component by component costs one lstat per component; for the common
// case, a clean name with no symbolic link on the way, the kernel can
// prove the same thing in one call and pin it for the act:
//
//  1. the name, made absolute, must be lexically clean (no ".", "..",
//     repeated or trailing separators), so that without symbolic links it
//     is its own resolution;
//  2. one openat2 with RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS (and
//     RESOLVE_BENEATH from a write root's descriptor, for the calls that
//     change something) proves it: it opens the entry itself (pinRead,
//     pinWrite), or its parent (pinParent, pinStat; no call at all when
//     the parent is the root itself), and success, or ENOENT for a missing
//     component, means the walk met no link, so the lexical name is where
//     the call lands; the descriptor pins it;
//  3. the last component, when the call would follow it, is looked at
//     without following it (fstat of the opened entry, or fstatat with
//     AT_SYMLINK_NOFOLLOW; the link count feeds the hard-link rule);
//  4. the decision is made on that path (route.go, step 4);
//  5. the call acts from the descriptor: the opened entry itself, or
//     (parent descriptor, last component) with no link followed, so a
//     link swapped in after step 3 makes it fail instead of following.
//
// Anything unusual (a link on the way, an error, a kernel without openat2)
// ends the fast route before the decision, and the name is resolved by
// policy.Resolve and acted on through os.Root.

const fastRoutes = true

// fastStat fills a syscall.Stat_t (what os.Stat's Sys returns) through
// sysFstatat (unix.Fstatat): the two types describe the same kernel struct.
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

func openat2(dirfd int, name string, flag int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flag), Mode: uint64(mode), Resolve: beneath}
	for {
		fd, err := sysOpenat2(dirfd, name, &how)
		if err != unix.EINTR && err != unix.EAGAIN {
			return fd, err
		}
	}
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

// fastResolve proves, with one openat2 call (O_PATH), that the lexically clean
// absolute path p holds no symbolic link on the way (and none as its last
// component when follow is set), so that p is its own resolution. A
// missing component ends the walk as policy.Resolve does: what exists was
// walked without links, the rest is appended as written. It is false when
// the kernel cannot prove it (a link on the way, a file used as a
// directory, anything else): the caller then resolves component by
// component.
func fastResolve(p string, follow bool) bool {
	if fastOff.Load() || !lexicallyClean(p) {
		return false
	}
	target, flags := p, unix.O_PATH|unix.O_CLOEXEC
	if !follow {
		target, flags = parentOf(p), flags|unix.O_DIRECTORY
	}
	how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := sysOpenat2(unix.AT_FDCWD, target, &how)
		switch {
		case err == nil:
			unix.Close(fd)
			return true
		case err == unix.ENOENT:
			return true
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err == unix.ENOSYS:
			fastOff.Store(true)
		}
		return false
	}
}

// noLinks proves an absolute name from "/": no symbolic link anywhere on
// the way, magic links included.
const noLinks = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func openat2How(dirfd int, name string, flag int, mode uint32, resolve uint64) (int, error) {
	how := unix.OpenHow{Flags: uint64(flag), Mode: uint64(mode), Resolve: resolve}
	for {
		fd, err := sysOpenat2(dirfd, name, &how)
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
		return sysFstatat(fd, baseName(p), (*unix.Stat_t)(unsafe.Pointer(&info.st)), unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}

// parent is a pinned parent directory: the descriptor and the last
// component of the path.
type parent struct {
	fd    int
	base  string
	owned bool // fd must be closed
}

func (pd *parent) close() {
	if pd.owned {
		unix.Close(pd.fd)
		pd.owned = false
	}
}

// openParent opens p's parent beneath the root dir (h's directory) without
// following any symbolic link. err is the kernel's answer (ENOENT: a
// component is missing, met without a link).
func openParent(h *rootHandle, dir, p string) (parent, error) {
	pp := parentOf(p)
	pd := parent{fd: h.fd, base: baseName(p)}
	if pp == dir {
		return pd, nil
	}
	fd, err := openat2(h.fd, rel(dir, pp), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOSYS {
			fastOff.Store(true)
		}
		return pd, err
	}
	pd.fd, pd.owned = fd, true
	return pd, nil
}

// pin is what the fast route's proof holds for the act (see the top of
// this file). The zero pin holds nothing.
type pin struct {
	ok      bool        // the proof succeeded; the fields below are what it holds
	h       *rootHandle // read-held (rootHandle.acquire) while the call works from it
	dir     string      // h's directory
	pd      parent      // the entry's parent, when pinned
	fd      int         // the entry itself, when hasFd
	hasFd   bool
	missing bool // the entry does not exist: the walk to it met no link
	hasSt   bool // st holds what fstat or fstatat said of the entry
	st      syscall.Stat_t
}

// release gives back what the pin holds; it may be called more than once,
// and on a nil pin.
func (p *pin) release() {
	if p == nil {
		return
	}
	if p.hasFd {
		unix.Close(p.fd)
		p.hasFd = false
	}
	p.pd.close()
	if p.h != nil {
		p.h.release()
		p.h = nil
	}
}

// nlink is the entry's hard-link count when the pin looked at it (0 for
// anything but a regular file); ok is false when it did not.
func (p *pin) nlink() (uint64, bool) {
	if !p.hasSt {
		return 0, false
	}
	if p.st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, true
	}
	return uint64(p.st.Nlink), true
}

// pinRoot read-holds the handle of the write root holding path (and not
// being it); root is the one the decision named, when it did.
func (f *Fs) pinRoot(p *pin, path, root string) bool {
	dir := f.rootOf(root, path)
	if dir == "" || dir == path {
		return false
	}
	h, err := f.roots.get(dir)
	if err != nil || !h.acquire() {
		return false
	}
	p.h, p.dir = h, dir
	return true
}

// pin proves c.r.path (lexically clean) and pins what kind asks for. It
// reports false, holding nothing, when the kernel cannot prove it.
func (f *Fs) pin(c *call, kind pinKind) bool {
	p := &c.p
	path := c.r.path
	switch kind {
	case pinRead:
		// A dry run proves with O_PATH instead (fastResolve): opening a
		// FIFO or a device is an effect.
		if c.flag&(unix.O_PATH|unix.O_TMPFILE) != 0 || !c.acts() {
			return false
		}
		fd, err := openat2How(unix.AT_FDCWD, path, c.flag|unix.O_CLOEXEC, 0, noLinks)
		switch err {
		case nil:
			p.fd, p.hasFd = fd, true
		case unix.ENOENT:
			p.missing = true
		case unix.ENOSYS:
			fastOff.Store(true)
			return false
		default:
			return false
		}
	case pinWrite:
		if c.flag&(unix.O_PATH|unix.O_TMPFILE) != 0 || !f.pinRoot(p, path, c.d.Root) {
			return false
		}
		// Opening an existing file changes nothing; O_CREATE, O_TRUNC
		// and O_EXCL wait for the decision. A dry run opens nothing.
		flag := c.flag&^(os.O_CREATE|os.O_TRUNC|os.O_EXCL) | unix.O_CLOEXEC
		if !c.acts() {
			flag = unix.O_PATH | unix.O_CLOEXEC
		}
		fd, err := openat2(p.h.fd, rel(p.dir, path), flag, 0)
		switch err {
		case nil:
			if err := unix.Fstat(fd, (*unix.Stat_t)(unsafe.Pointer(&p.st))); err != nil {
				unix.Close(fd)
				p.release()
				return false
			}
			p.fd, p.hasFd, p.hasSt = fd, true, true
		case unix.ENOENT:
			p.missing = true
		default:
			if err == unix.ENOSYS {
				fastOff.Store(true)
			}
			p.release()
			return false
		}
	case pinParent:
		if !f.pinRoot(p, path, c.d.Root) {
			return false
		}
		pd, err := openParent(p.h, p.dir, path)
		if err != nil {
			p.release()
			return false
		}
		p.pd = pd
	case pinStat:
		if err := f.pinParentAnywhere(p, path); err != nil {
			if err != unix.ENOENT {
				p.release()
				return false
			}
			p.missing = true
			break
		}
		err := ignoringEINTR(func() error {
			return sysFstatat(p.pd.fd, p.pd.base, (*unix.Stat_t)(unsafe.Pointer(&p.st)), unix.AT_SYMLINK_NOFOLLOW)
		})
		switch {
		case err == unix.ENOENT:
			p.missing = true
		case err != nil, c.follow && p.st.Mode&unix.S_IFMT == unix.S_IFLNK:
			p.release()
			return false
		default:
			p.hasSt = true
		}
	default:
		return false
	}
	p.ok = true
	return true
}

// pinParentAnywhere pins the directory holding the lexically clean path:
// through the write root that holds it, else with openat2 from "/". ENOENT
// means a component is missing, found without meeting a link.
func (f *Fs) pinParentAnywhere(p *pin, path string) error {
	if f.pinRoot(p, path, "") {
		pd, err := openParent(p.h, p.dir, path)
		if err == nil {
			p.pd = pd
			return nil
		}
		p.release()
	}
	fd, err := openat2How(unix.AT_FDCWD, parentOf(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0, noLinks)
	if err != nil {
		if err == unix.ENOSYS {
			fastOff.Store(true)
		}
		return err
	}
	p.pd = parent{fd: fd, base: baseName(path), owned: true}
	return nil
}

// The acts of the fast route: each works from what the pin holds.

// file hands the pinned entry's descriptor back as a file named name; the
// pin no longer owns it.
func (p *pin) file(name string) afero.File {
	p.hasFd = false
	return os.NewFile(uintptr(p.fd), name)
}

// stat is the pinned entry's information, named as os.Stat names it.
func (p *pin) stat() fs.FileInfo {
	return &statInfo{name: p.pd.base, st: p.st}
}

// openWrite finishes a write open on the pinned entry: an existing file
// is truncated for O_TRUNC (O_EXCL refuses it); a missing one is created
// with O_EXCL under the same resolve flags, so only what was decided as
// new is created. again reports a file that appeared meanwhile (maybe a
// hard link): the call takes its route again and what is there is decided
// afresh.
func (p *pin) openWrite(name, path string, flag int, perm os.FileMode) (fl afero.File, err error, again bool) {
	if p.hasFd {
		if flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL {
			return nil, unix.EEXIST, false
		}
		if flag&os.O_TRUNC != 0 && p.st.Mode&unix.S_IFMT == unix.S_IFREG {
			if err := ignoringEINTR(func() error { return unix.Ftruncate(p.fd, 0) }); err != nil {
				return nil, err, false
			}
		}
		return p.file(name), nil, false
	}
	if flag&os.O_CREATE == 0 {
		return nil, unix.ENOENT, false
	}
	fd, err := openat2(p.h.fd, rel(p.dir, path), flag|os.O_EXCL|unix.O_CLOEXEC, syscallMode(perm))
	if err == unix.EEXIST && flag&os.O_EXCL == 0 {
		return nil, err, true
	}
	if err != nil {
		return nil, err, false
	}
	return os.NewFile(uintptr(fd), name), nil, false
}

// remove removes the pinned entry itself, as os.Remove does (unlink, then
// rmdir).
func (p *pin) remove() error {
	err := ignoringEINTR(func() error { return unix.Unlinkat(p.pd.fd, p.pd.base, 0) })
	if err == nil {
		return nil
	}
	err1 := ignoringEINTR(func() error { return unix.Unlinkat(p.pd.fd, p.pd.base, unix.AT_REMOVEDIR) })
	if err1 == nil {
		return nil
	}
	if err1 != unix.ENOTDIR {
		err = err1
	}
	return err
}

// mkdir makes the pinned entry a directory.
func (p *pin) mkdir(perm os.FileMode) error {
	return ignoringEINTR(func() error { return unix.Mkdirat(p.pd.fd, p.pd.base, syscallMode(perm)) })
}

// pinRename proves and pins both names of a rename on the fast route: both
// lexically clean under write roots (neither a root), the old entry not a
// directory (a directory's tree is checked on the slow route), both
// parents pinned beneath their roots. The new name's root handle is
// acquired only when it is another one: read locks must not nest (a
// waiting Close would deadlock them).
func (f *Fs) pinRename(c *call, po, pn string) bool {
	if !f.pinRoot(&c.p, po, "") {
		return false
	}
	pdo, err := openParent(c.p.h, c.p.dir, po)
	if err != nil {
		c.p.release()
		return false
	}
	c.p.pd = pdo
	c.p2 = new(pin)
	if d := f.rootFor(pn); d != c.p.dir {
		if !f.pinRoot(c.p2, pn, "") {
			c.p.release()
			return false
		}
	} else if pn == d {
		c.p.release()
		return false
	} else {
		c.p2.dir = d
	}
	h2 := c.p2.h
	if h2 == nil {
		h2 = c.p.h
	}
	if h2 != c.p.h || parentOf(po) != parentOf(pn) {
		pdn, err := openParent(h2, c.p2.dir, pn)
		if err != nil {
			c.p.release()
			c.p2.release()
			return false
		}
		c.p2.pd = pdn
	} else {
		c.p2.pd = parent{fd: pdo.fd, base: baseName(pn)}
	}
	var st unix.Stat_t
	err = ignoringEINTR(func() error { return sysFstatat(pdo.fd, pdo.base, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if err != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		c.p.release()
		c.p2.release()
		return false
	}
	c.p.ok, c.p2.ok = true, true
	return true
}

// rename renames the pinned old entry to the pinned new one.
func rename(po, pn *pin) error {
	return ignoringEINTR(func() error { return unix.Renameat(po.pd.fd, po.pd.base, pn.pd.fd, pn.pd.base) })
}
