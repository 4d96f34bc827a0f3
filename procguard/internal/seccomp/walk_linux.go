//go:build amd64 || arm64

package seccomp

import (
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The supervisor resolves every name a trapped call passes itself, in the
// calling task's context, on descriptors it holds: it never hands a name
// back to the kernel to resolve again. A walk starts from the task's
// root, cwd or directory fd (opened once through /proc/<tid>/), and ends
// at an O_PATH descriptor of the directory holding the last component
// (the object acted on is then that target of that directory), or, for a
// magic link or a call naming a descriptor itself, at an O_PATH descriptor
// of the object.

// maxLinks is the kernel's MAXSYMLINKS: more symbolic links in one walk
// is ELOOP.
const maxLinks = 40

// scope is how a walk treats absolute names and "..": the task's view, or
// openat2's RESOLVE_IN_ROOT and RESOLVE_BENEATH relative to the start.
type scope struct {
	inRoot, beneath   bool
	noSymlinks, noMag bool
	noXdev            bool
}

func scopeOf(resolve uint64) scope {
	return scope{
		inRoot:     resolve&unix.RESOLVE_IN_ROOT != 0,
		beneath:    resolve&unix.RESOLVE_BENEATH != 0,
		noSymlinks: resolve&unix.RESOLVE_NO_SYMLINKS != 0,
		noMag:      resolve&(unix.RESOLVE_NO_MAGICLINKS|unix.RESOLVE_NO_SYMLINKS) != 0,
		noXdev:     resolve&unix.RESOLVE_NO_XDEV != 0,
	}
}

// target is what a name resolves to.
type target struct {
	dir  int    // O_PATH fd of the directory holding the target, or -1 (obj set)
	name string // the target's name in dir: one component, "." or ".." included
	obj  int    // O_PATH fd of the object itself, or -1 (dir set)
	// path is the absolute name the policy judges: the directory's path
	// (as the kernel names the held descriptor) joined to name and
	// cleaned, or the object's own path. Empty for an object that has no
	// path (a pipe, a socket, an anonymous inode behind /proc/<pid>/fd/N).
	path     string
	mode     uint32 // S_IFMT of what the target names now (not followed), 0 if absent
	dev, ino uint64 // its device and inode, when it exists
	rdev     uint64 // the device it is, for a device file
	known    bool   // mode, dev, ino and rdev are filled in
}

func (e *target) close() {
	if e.dir >= 0 {
		unix.Close(e.dir)
		e.dir = -1
	}
	if e.obj >= 0 {
		unix.Close(e.obj)
		e.obj = -1
	}
}

// at is the (dirfd, name) pair that names the target in *at calls:
// the held directory and the name, or the object with an empty name
// (which needs AT_EMPTY_PATH).
func (e *target) at() (int, string) {
	if e.obj >= 0 {
		return e.obj, ""
	}
	return e.dir, e.name
}

// procPath is a name that reaches the target through this process's own
// descriptor table, for calls with no *at form that takes AT_EMPTY_PATH:
// the kernel follows /proc/self/fd/N to the held object.
func (e *target) procPath() (string, unix.Errno) {
	if e.obj >= 0 {
		return "/proc/self/fd/" + strconv.Itoa(e.obj), 0
	}
	fd, err := unix.Openat(e.dir, e.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", errnoOf(err)
	}
	e.obj = fd
	return "/proc/self/fd/" + strconv.Itoa(fd), 0
}

func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EACCES
}

// walker resolves names for one notification.
type walker struct {
	t     *task
	tid   int
	tgid  int // read from /proc/<tid>/status when a name passes /proc/self
	root  int // the task's root directory, opened lazily; -1 until then
	pidfd int // the task's pidfd, opened lazily; 0 until then
	links int
	// tookStart: the last lookup's target holds the directory it started
	// from (fast), which resolve then leaves open.
	tookStart bool
}

func (w *walker) close() {
	if w.root >= 0 {
		unix.Close(w.root)
		w.root = -1
	}
	if w.pidfd > 0 {
		unix.Close(w.pidfd)
		w.pidfd = 0
	}
}

// withID fills in what the target names now: its type, device and inode
// (the entry itself, not followed), when it exists.
func (w *walker) withID(t target, e unix.Errno) (target, unix.Errno) {
	if e != 0 || t.known {
		return t, e
	}
	var st unix.Stat_t
	var err error
	if t.obj >= 0 {
		err = unix.Fstat(t.obj, &st)
	} else {
		err = unix.Fstatat(t.dir, t.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err == nil {
		t.mode, t.dev, t.ino, t.rdev = st.Mode&unix.S_IFMT, st.Dev, st.Ino, st.Rdev
	} else {
		t.mode, t.dev, t.ino, t.rdev = 0, 0, 0, 0
	}
	return t, 0
}

// pidfdThread is PIDFD_THREAD (Linux 6.9, <linux/pidfd.h>): a pidfd of one
// thread rather than of a thread group leader.
const pidfdThread = unix.O_EXCL

// socket takes a copy of the task's descriptor fd (pidfd_getfd(2)): the
// same open file description, so what is done on it is done on the task's.
func (w *walker) socket(fd int32) (int, unix.Errno) {
	if fd < 0 {
		return -1, unix.EBADF
	}
	if w.pidfd == 0 {
		p, err := unix.PidfdOpen(w.tid, pidfdThread)
		if err == unix.EINVAL { // before 6.9: the thread group's leader
			if _, e := w.selfName("self"); e != 0 {
				return -1, e
			}
			p, err = unix.PidfdOpen(w.tgid, 0)
		}
		if err != nil {
			return -1, unix.EACCES
		}
		w.pidfd = p
	}
	w.t.caps.set(true)
	got, err := unix.PidfdGetfd(w.pidfd, int(fd), 0)
	switch {
	case err == unix.EBADF:
		return -1, unix.EBADF
	case err != nil:
		return -1, unix.EACCES
	}
	var st unix.Stat_t
	if unix.Fstat(got, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(got)
		return -1, unix.ENOTSOCK
	}
	return got, 0
}

// taskRoot is an O_PATH fd of the task's root directory (owned by w).
func (w *walker) taskRoot() (int, unix.Errno) {
	if w.root >= 0 {
		return w.root, 0
	}
	if w.t.fixedRoot {
		// Held by the server: not w.root, which close closes.
		return w.t.sharedRoot()
	}
	fd, err := w.t.openProc("root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return -1, unix.EACCES
	}
	w.root = fd
	return fd, 0
}

// start opens the directory a relative name starts from: the task's cwd
// for AT_FDCWD, else its descriptor dirfd, which must be a directory.
func (w *walker) start(dirfd int32) (int, unix.Errno) {
	rel := "cwd"
	if dirfd != unix.AT_FDCWD {
		if dirfd < 0 {
			return -1, unix.EBADF
		}
		rel = "fd/" + strconv.Itoa(int(dirfd))
	}
	fd, err := w.t.openProc(rel, unix.O_PATH|unix.O_CLOEXEC)
	switch {
	case err == unix.ENOENT && dirfd != unix.AT_FDCWD:
		return -1, unix.EBADF
	case err != nil:
		return -1, unix.EACCES
	}
	// Not checked to be a directory here: the walk's first step fails
	// with ENOTDIR on anything else, as the kernel's would.
	return fd, 0
}

// self opens what dirfd itself refers to (AT_EMPTY_PATH, a NULL name):
// the cwd for AT_FDCWD, else the descriptor's file, whatever it is.
func (w *walker) self(dirfd int32) (target, unix.Errno) {
	rel := "cwd"
	if dirfd != unix.AT_FDCWD {
		if dirfd < 0 {
			return target{dir: -1, obj: -1}, unix.EBADF
		}
		rel = "fd/" + strconv.Itoa(int(dirfd))
	}
	fd, err := w.t.openProc(rel, unix.O_PATH|unix.O_CLOEXEC)
	if err != nil {
		if err == unix.ENOENT {
			return target{dir: -1, obj: -1}, unix.EBADF
		}
		return target{dir: -1, obj: -1}, unix.EACCES
	}
	return w.object(fd)
}

// object makes an target of an O_PATH fd it takes over.
func (w *walker) object(fd int) (target, unix.Errno) {
	e := target{dir: -1, obj: fd}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		e.close()
		return e, unix.EACCES
	}
	e.mode = st.Mode & unix.S_IFMT
	p, ok := w.fdPath(fd)
	if ok {
		e.path = p
	}
	return e, 0
}

// fdPath is the kernel's name for one of this process's descriptors: an
// absolute path, or ok false when it has none (a pipe, a socket, an
// anonymous inode, a deleted file).
func (w *walker) fdPath(fd int) (string, bool) {
	if w.t.lbuf == nil {
		w.t.lbuf = make([]byte, pathMax)
	}
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), w.t.lbuf)
	if err != nil || n >= len(w.t.lbuf) {
		return "", false
	}
	s := string(w.t.lbuf[:n])
	if !strings.HasPrefix(s, "/") || strings.HasSuffix(s, " (deleted)") {
		return "", false
	}
	return s, true
}

// resolve resolves a name the task passed, as the kernel would for it:
// a relative name (or any name in a scope that starts there) from dirfd,
// AT_FDCWD being the task's cwd, an absolute one from the task's root.
// It returns the target with what it names now (withID), whose
// descriptors the caller closes.
func (w *walker) resolve(dirfd int32, name string, follow bool, sc scope) (target, unix.Errno) {
	if name == "" {
		return target{dir: -1, obj: -1}, unix.ENOENT
	}
	start := -1
	if name[0] != '/' || sc.inRoot || sc.beneath {
		var e unix.Errno
		if start, e = w.start(dirfd); e != 0 {
			return target{dir: -1, obj: -1}, e
		}
	}
	w.tookStart = false
	tg, e := w.lookup(start, name, follow, sc)
	if start >= 0 && !w.tookStart {
		unix.Close(start)
	}
	return w.withID(tg, e)
}

// lookup resolves name from start (a directory fd it borrows, unless
// fast takes it over: tookStart) as the kernel would for the task, with
// sc's rules, following a symbolic link in the last component when
// follow is set. It returns the target, whose descriptors the caller
// closes.
func (w *walker) lookup(start int, name string, follow bool, sc scope) (target, unix.Errno) {
	if name == "" {
		return target{dir: -1, obj: -1}, unix.ENOENT
	}
	if e, ok := w.fast(start, name, follow, sc); ok {
		return w.finish(e)
	}
	e, errno := w.slow(start, name, follow, sc)
	if errno != 0 {
		return e, errno
	}
	return w.finish(e)
}

// finish names the target for the policy.
func (w *walker) finish(e target) (target, unix.Errno) {
	if e.obj >= 0 {
		return e, 0
	}
	dir, ok := w.fdPath(e.dir)
	if !ok {
		e.close()
		return e, unix.ENOENT // a deleted directory
	}
	if strings.HasPrefix(dir, "/proc/") {
		if errno := w.guardProc(e.dir); errno != 0 {
			e.close()
			return e, errno
		}
	}
	e.path = path.Join(dir, e.name)
	return e, 0
}

// supervisorPid is this process, as its own pid namespace names it (1
// for a sandbox's init).
var supervisorPid = os.Getpid()

// guardProc refuses a walk that reaches the supervisor's own process
// through a proc file system (/proc/1/fd/N, /proc/1/root, /proc/1/mem
// from a sandboxed task): the supervisor may open what its own process
// holds, which the task could not (Landlock keeps a task from tracing or
// reading a process outside its domain), so it must not do so for the
// task. A task of the supervisor's own process (the tests) may.
func (w *walker) guardProc(dir int) unix.Errno {
	var sfs unix.Statfs_t
	if unix.Fstatfs(dir, &sfs) != nil || sfs.Type != unix.PROC_SUPER_MAGIC {
		return 0
	}
	p, ok := w.fdPath(dir)
	if !ok {
		return unix.EACCES
	}
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return 0
	}
	first, _, _ := strings.Cut(rest, "/")
	n, err := strconv.Atoi(first)
	if err != nil {
		return 0 // /proc/sys, /proc/net...: not a process
	}
	tgid := n
	if n != supervisorPid {
		id, e := statusField("/proc/"+first+"/", "Tgid", 10)
		if e != 0 {
			return e
		}
		tgid = int(id)
	}
	if tgid != supervisorPid {
		return 0
	}
	if _, e := w.selfName("self"); e != 0 || w.tgid != supervisorPid {
		return unix.EACCES
	}
	return 0
}

// split cuts a name into its directory part and last component; a name
// ending in "/" (or "/." forms) keeps its last real component, and the
// caller must treat it as a directory.
func split(name string) (dir, last string, trailing bool) {
	trailing = strings.HasSuffix(name, "/")
	trimmed := strings.TrimRight(name, "/")
	if trimmed == "" { // "/" or "///"
		return "/", ".", true
	}
	i := strings.LastIndexByte(trimmed, '/')
	switch {
	case i < 0:
		return "", trimmed, trailing
	case i == 0:
		return "/", trimmed[1:], trailing
	}
	return trimmed[:i], trimmed[i+1:], trailing
}

// fast resolves with one openat2 of the directory part, in which the
// kernel follows ordinary symbolic links (absolute ones from the task's
// root, as the task would: RESOLVE_IN_ROOT on that root) and no magic
// link. It gives up (ok false, nothing held) on a magic link, on a last
// component that is a symbolic link and must be followed, and on a
// directory in a proc file system. A walk through procfs that ends
// outside it must pass a magic link (cwd, root, exe, fd/N, map_files/N:
// procfs's other links stay inside it), so /proc/self, which the kernel
// would read as the supervisor, can only lead back into procfs, where the
// walk is left to slow; a walk that leaves /proc through "..", as in
// /proc/self/../etc, reaches the same directory for every task.
func (w *walker) fast(start int, name string, follow bool, sc scope) (target, bool) {
	dirPart, last, trailing := split(name)
	if trailing {
		follow = true
	}
	from := start
	resolve := uint64(unix.RESOLVE_NO_MAGICLINKS)
	if sc.noSymlinks {
		resolve = unix.RESOLVE_NO_SYMLINKS
	}
	if sc.beneath {
		resolve |= unix.RESOLVE_BENEATH
	}
	if sc.noXdev {
		resolve |= unix.RESOLVE_NO_XDEV
	}
	if strings.HasPrefix(name, "/") {
		if sc.beneath {
			return target{}, false // EXDEV, said by slow
		}
		if !sc.inRoot {
			r, e := w.taskRoot()
			if e != 0 {
				return target{}, false
			}
			from = r
		}
		resolve |= unix.RESOLVE_IN_ROOT
	} else if sc.inRoot {
		resolve |= unix.RESOLVE_IN_ROOT
	}
	// A name of one component is looked up in the start itself, which
	// the target then holds (resolve does not close it): no second open of
	// the same directory. Whether the start is a directory the kernel
	// says at the lookup (ENOTDIR), and slow reports it.
	borrowed := dirPart == "" && start >= 0 && last != "." && last != ".."
	dir := start
	if !borrowed {
		if dirPart == "" {
			dirPart = "."
		}
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolve}
		d, err := unix.Openat2(from, dirPart, &how)
		if err != nil {
			return target{}, false
		}
		dir = d
	}
	drop := func() {
		if !borrowed {
			unix.Close(dir)
		}
	}
	var sfs unix.Statfs_t
	if unix.Fstatfs(dir, &sfs) != nil || sfs.Type == unix.PROC_SUPER_MAGIC {
		drop()
		return target{}, false
	}
	e := target{dir: dir, name: last, obj: -1}
	if last == "." || last == ".." {
		return e, true
	}
	var st unix.Stat_t
	switch err := unix.Fstatat(dir, last, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		e.mode, e.dev, e.ino, e.rdev = st.Mode&unix.S_IFMT, st.Dev, st.Ino, st.Rdev
		if e.mode == unix.S_IFLNK && follow {
			drop()
			return target{}, false
		}
	case borrowed && err != unix.ENOENT:
		// Not a directory, not searchable...: slow says what the
		// kernel would.
		return target{}, false
	}
	e.known = true
	if borrowed {
		w.tookStart = true
	}
	return e, true
}

// slow walks one component at a time, reading each symbolic link itself:
// /proc/self and /proc/thread-self stand for the task, magic links
// (/proc/<pid>/cwd, root, fd/N...) are opened to what they refer to for
// that task, absolute links restart at the task's root (or the scope's).
func (w *walker) slow(start int, name string, follow bool, sc scope) (target, unix.Errno) {
	fail := target{dir: -1, obj: -1}
	root := start // IN_ROOT and BENEATH: the start is the root
	if !sc.inRoot && !sc.beneath {
		r, e := w.taskRoot()
		if e != 0 {
			return fail, e
		}
		root = r
	}
	rootID, errno := fileID(root)
	if errno != 0 {
		return fail, errno
	}
	// The walk may go through /proc: it is checked with the task's
	// rights from here (openProc raises the capability again).
	w.t.caps.set(false)
	// stack holds the directories walked, each an owned fd, the start
	// (or the root after an absolute name) first; ".." pops.
	var stack []int
	defer func() {
		for _, fd := range stack {
			unix.Close(fd)
		}
	}()
	from := func(fd int) unix.Errno {
		for _, o := range stack {
			unix.Close(o)
		}
		stack = stack[:0]
		d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return errnoOf(err)
		}
		stack = append(stack, d)
		return 0
	}
	cur := func() int { return stack[len(stack)-1] }
	if strings.HasPrefix(name, "/") {
		if sc.beneath {
			return fail, unix.EXDEV
		}
		errno = from(root)
	} else {
		errno = from(start)
	}
	if errno != 0 {
		return fail, errno
	}
	trailing := strings.HasSuffix(name, "/")
	if trailing {
		follow = true
	}
	comps := strings.Split(name, "/")
	for {
		for len(comps) > 0 && (comps[0] == "" || comps[0] == "." && !allEmpty(comps[1:])) {
			comps = comps[1:]
		}
		if len(comps) == 0 {
			return w.dup(cur(), ".")
		}
		c := comps[0]
		comps = comps[1:]
		isLast := allEmpty(comps)
		switch {
		case c == ".":
			return w.dup(cur(), ".")
		case c == "..":
			id, e := fileID(cur())
			if e != 0 {
				return fail, e
			}
			switch {
			case id == rootID && sc.beneath:
				return fail, unix.EXDEV
			case id == rootID:
				// ".." of the root is the root.
			case len(stack) > 1:
				unix.Close(cur())
				stack = stack[:len(stack)-1]
			case sc.beneath:
				return fail, unix.EXDEV
			default:
				up, err := unix.Openat(cur(), "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				if err != nil {
					return fail, errnoOf(err)
				}
				unix.Close(stack[0])
				stack[0] = up
			}
			if isLast {
				return w.dup(cur(), ".")
			}
			continue
		case (c == "self" || c == "thread-self") && procRoot(cur()):
			rest, e := w.selfName(c)
			if e != 0 {
				return fail, e
			}
			comps = append(strings.Split(rest, "/"), comps...)
			continue
		}
		var st unix.Stat_t
		err := unix.Fstatat(cur(), c, &st, unix.AT_SYMLINK_NOFOLLOW)
		typ := st.Mode & unix.S_IFMT
		if isLast && (err == unix.ENOENT || err == nil && (typ != unix.S_IFLNK || !follow)) {
			// The target itself: absent, not a link, or a link not followed.
			if err == nil && trailing && typ != unix.S_IFDIR {
				return fail, unix.ENOTDIR
			}
			e, errno := w.dup(cur(), c)
			if err == nil {
				e.mode = typ
			}
			return e, errno
		}
		if err != nil {
			return fail, errnoOf(err)
		}
		switch typ {
		case unix.S_IFDIR:
			fd, err := unix.Openat(cur(), c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return fail, errnoOf(err)
			}
			if sc.noXdev && !sameDev(fd, cur()) {
				unix.Close(fd)
				return fail, unix.EXDEV
			}
			stack = append(stack, fd)
		case unix.S_IFLNK:
			if sc.noSymlinks {
				return fail, unix.ELOOP
			}
			if w.links++; w.links > maxLinks {
				return fail, unix.ELOOP
			}
			text, e := w.readlink(cur(), c)
			if e != 0 {
				return fail, e
			}
			if magic(cur(), text) {
				if sc.noMag {
					return fail, unix.ELOOP
				}
				if e := w.guardProc(cur()); e != 0 {
					return fail, e
				}
				fd, err := unix.Openat(cur(), c, unix.O_PATH|unix.O_CLOEXEC, 0)
				if err != nil {
					return fail, errnoOf(err)
				}
				if isLast {
					return w.object(fd)
				}
				var ost unix.Stat_t
				if unix.Fstat(fd, &ost) != nil || ost.Mode&unix.S_IFMT != unix.S_IFDIR {
					unix.Close(fd)
					return fail, unix.ENOTDIR
				}
				stack = append(stack, fd)
				continue
			}
			if strings.HasPrefix(text, "/") {
				if sc.beneath {
					return fail, unix.EXDEV
				}
				if e := from(root); e != 0 {
					return fail, e
				}
			}
			more := strings.Split(text, "/")
			if isLast && trailing {
				more = append(more, "")
			}
			comps = append(more, comps...)
		default:
			return fail, unix.ENOTDIR
		}
	}
}

func allEmpty(s []string) bool {
	for _, c := range s {
		if c != "" {
			return false
		}
	}
	return true
}

// dup makes an target naming name in dir, holding its own copy of dir.
func (w *walker) dup(dir int, name string) (target, unix.Errno) {
	fd, err := unix.FcntlInt(uintptr(dir), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return target{dir: -1, obj: -1}, errnoOf(err)
	}
	e := target{dir: fd, name: name, obj: -1}
	if name == "." {
		e.mode = unix.S_IFDIR
	}
	return e, 0
}

func (w *walker) readlink(dir int, name string) (string, unix.Errno) {
	if w.t.lbuf == nil {
		w.t.lbuf = make([]byte, pathMax)
	}
	n, err := unix.Readlinkat(dir, name, w.t.lbuf)
	if err != nil {
		return "", errnoOf(err)
	}
	if n >= len(w.t.lbuf) {
		return "", unix.ENAMETOOLONG
	}
	return string(w.t.lbuf[:n]), 0
}

// selfName is what /proc/self or /proc/thread-self stand for when the
// task reads them: its thread group's id, or that and its own.
func (w *walker) selfName(c string) (string, unix.Errno) {
	if w.tgid == 0 {
		n, e := statusField(w.t.proc, "Tgid", 10)
		if e != 0 {
			return "", unix.EACCES
		}
		w.tgid = int(n)
	}
	s := strconv.Itoa(w.tgid)
	if c == "thread-self" {
		s += "/task/" + strconv.Itoa(w.tid)
	}
	return s, 0
}

// procRoot reports whether fd is the root of a proc file system.
func procRoot(fd int) bool {
	var sfs unix.Statfs_t
	if unix.Fstatfs(fd, &sfs) != nil || sfs.Type != unix.PROC_SUPER_MAGIC {
		return false
	}
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Ino == 1 // PROC_ROOT_INO
}

// magic reports whether a link in dir is a proc magic link: in a proc
// file system, a link whose text is not a plain relative name
// (/proc/self is "1234", /proc/mounts "self/mounts"; the magic ones read
// as absolute paths or "type:[inode]").
func magic(dir int, text string) bool {
	var sfs unix.Statfs_t
	if unix.Fstatfs(dir, &sfs) != nil || sfs.Type != unix.PROC_SUPER_MAGIC {
		return false
	}
	return strings.HasPrefix(text, "/") || strings.Contains(text, ":")
}

type fileKey struct{ dev, ino uint64 }

func fileID(fd int) (fileKey, unix.Errno) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileKey{}, errnoOf(err)
	}
	return fileKey{st.Dev, st.Ino}, 0
}

func sameDev(a, b int) bool {
	var sa, sb unix.Stat_t
	return unix.Fstat(a, &sa) == nil && unix.Fstat(b, &sb) == nil && sa.Dev == sb.Dev
}

// statusField reads the number of one "Key:\tvalue" line of the status
// file in procDir ("/proc/<pid>/"), in base: ENOENT when the file cannot
// be read (the process is gone), EACCES when the line is not there.
func statusField(procDir, key string, base int) (uint64, unix.Errno) {
	b, err := readSmall(procDir + "status")
	if err != nil {
		return 0, unix.ENOENT
	}
	_, after, ok := strings.Cut(string(b), "\n"+key+":")
	if !ok {
		return 0, unix.EACCES
	}
	line, _, _ := strings.Cut(after, "\n")
	n, err := strconv.ParseUint(strings.TrimSpace(line), base, 32)
	if err != nil {
		return 0, unix.EACCES
	}
	return n, 0
}

// readSmall reads a small proc file.
func readSmall(name string) ([]byte, error) {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := make([]byte, 4096)
	n, err := unix.Read(fd, b)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}
