//go:build amd64 || arm64

package seccomp

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The supervisor performs every call decide allowed itself, on the
// objects it resolved (request.targets), and hands the result to the
// task: a new descriptor through SECCOMP_IOCTL_NOTIF_ADDFD, a return
// value, or an errno. The kernel is never asked to resolve the task's
// name again, so nothing the task changes after the read (another thread
// rewriting the name, swapping a directory, moving a link in) reaches the
// act. It acts with the task's limits: the serving thread holds no
// capability but CAP_SYS_PTRACE (to read the task), files are created
// with the task's umask, and the mounts (a read-only root outside the
// write roots) bind it as they bind the task.

// result is the answer to one call.
type result struct {
	val     int64      // the call's return value when errno is 0 and fd < 0
	fd      int        // a descriptor of this process to install in the task, or -1
	cloexec bool       // install it close-on-exec
	errno   unix.Errno // the call's error
	async   bool       // the act runs on its own thread, which answers
	cont    bool       // the kernel performs the call itself (an O_PATH open)
	// made is the entry an exclusive create (O_CREAT|O_EXCL) made for fd:
	// removed again when fd cannot be installed in the task, as the
	// kernel, which finds the task a free descriptor first, would never
	// have created it.
	made *target
}

func fail(e unix.Errno) result { return result{fd: -1, errno: e} }

func done(val int64) result { return result{fd: -1, val: val} }

// act performs r's call.
func (s *server) act(r *request) result {
	a := &r.args
	switch r.s.kind {
	case kindOpen, kindOpenat2, kindCreat:
		return s.open(r, &r.targets[0])
	case kindSymlink:
		dir, name := r.targets[0].at()
		return errnoResult(unix.Symlinkat(r.call.Target, dir, name))
	case kindConnect:
		return s.connect(r)
	case kindExec:
		// The kernel reads the name, argv and envp again: the caller's
		// BeforeExec has arranged to see what it really ran (the
		// sandbox stops the task at its exec and compares).
		return result{fd: -1, cont: true}
	}
	switch r.s.name {
	case "mkdir", "mkdirat":
		tg := &r.targets[0]
		mode := uint32(a[r.s.paths[0].name+1])
		return s.withUmask(r, func() error { return unix.Mkdirat(tg.dir, tg.name, mode) })
	case "mknod", "mknodat":
		tg := &r.targets[0]
		i := r.s.paths[0].name
		mode, dev := uint32(a[i+1]), int(a[i+2])
		return s.withUmask(r, func() error { return unix.Mknodat(tg.dir, tg.name, mode, dev) })
	case "unlink":
		return errnoResult(unix.Unlinkat(r.targets[0].dir, r.targets[0].name, 0))
	case "rmdir":
		return errnoResult(unix.Unlinkat(r.targets[0].dir, r.targets[0].name, unix.AT_REMOVEDIR))
	case "unlinkat":
		return errnoResult(unix.Unlinkat(r.targets[0].dir, r.targets[0].name, int(r.flags&unix.AT_REMOVEDIR)))
	case "rename", "renameat", "renameat2":
		from, to := &r.targets[0], &r.targets[1]
		if e := same(from); e != 0 {
			return fail(e)
		}
		flags := uint(0)
		if r.s.name == "renameat2" {
			flags = uint(r.flags)
		}
		return errnoResult(unix.Renameat2(from.dir, from.name, to.dir, to.name, flags))
	case "link", "linkat":
		from, to := &r.targets[0], &r.targets[1]
		if e := same(from); e != 0 {
			return fail(e)
		}
		if from.obj >= 0 {
			// The task's own descriptor (AT_EMPTY_PATH) or a magic
			// link: link the object through this process's copy.
			p, _ := from.procPath()
			return errnoResult(unix.Linkat(unix.AT_FDCWD, p, to.dir, to.name, unix.AT_SYMLINK_FOLLOW))
		}
		return errnoResult(unix.Linkat(from.dir, from.name, to.dir, to.name, 0))
	case "truncate":
		tg := &r.targets[0]
		switch tg.mode {
		case 0:
			return fail(unix.ENOENT)
		case unix.S_IFDIR:
			return fail(unix.EISDIR)
		case unix.S_IFREG:
		default:
			return fail(unix.EINVAL)
		}
		fd, err := s.reopen(tg, unix.O_WRONLY|unix.O_NONBLOCK)
		if err != 0 {
			return fail(err)
		}
		defer unix.Close(fd)
		return errnoResult(unix.Ftruncate(fd, int64(a[1])))
	case "chmod", "fchmodat", "fchmodat2":
		tg := &r.targets[0]
		mode := uint32(a[r.s.paths[0].name+1])
		if tg.mode == unix.S_IFLNK {
			return fail(unix.EOPNOTSUPP) // a link not followed has no mode of its own
		}
		if tg.mode == 0 {
			return fail(unix.ENOENT)
		}
		p, e := tg.procPath()
		if e != 0 {
			return fail(e)
		}
		return errnoResult(unix.Fchmodat(unix.AT_FDCWD, p, mode, 0))
	}
	return fail(unix.ENOSYS)
}

func errnoResult(err error) result {
	if err != nil {
		return fail(errnoOf(err))
	}
	return done(0)
}

// same checks that the entry a move or link acts on is still the file
// decide judged (by device and inode): EAGAIN if another was swapped in.
func same(tg *target) unix.Errno {
	if tg.obj >= 0 || tg.ino == 0 {
		return 0
	}
	var st unix.Stat_t
	if err := unix.Fstatat(tg.dir, tg.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return errnoOf(err)
	}
	if st.Dev != tg.dev || st.Ino != tg.ino {
		return unix.EAGAIN
	}
	return 0
}

// open opens the target with the task's flags and mode. The last
// component is never followed again: the walk already followed it where
// the call would, so a link swapped in since is opened as itself (O_PATH)
// or refused (ELOOP).
func (s *server) open(r *request, tg *target) result {
	flags := int(r.flags)
	if flags&unix.O_PATH != 0 {
		// The kernel installs no O_PATH descriptor for a supervisor
		// (ADDFD takes none), so open and open at, whose flags are in
		// registers the task cannot change, go on in the kernel: an O_PATH
		// descriptor reads and writes nothing, and every call that uses
		// one (as a directory, or reopened through /proc/self/fd) is
		// judged when it is made. openat2's flags are in the task's
		// memory, which another thread could turn into a write before the
		// kernel reads them: refused as unsupported, so programs take
		// their openat path.
		if r.s.kind == kindOpenat2 {
			return fail(unix.ENOSYS)
		}
		return result{fd: -1, cont: true}
	}
	cloexec := flags&unix.O_CLOEXEC != 0
	// O_NOCTTY: a terminal the supervisor opens must never become its
	// controlling terminal.
	flags |= unix.O_CLOEXEC | unix.O_NOCTTY
	if tg.mode == unix.S_IFCHR && tg.rdev == unix.Mkdev(5, 0) {
		// /dev/tty is the opener's controlling terminal: the task's, not
		// the supervisor's (which may be the host's own terminal).
		return s.openTTY(r, flags, cloexec)
	}
	if tg.obj >= 0 {
		// A magic link or the task's own descriptor: open the object
		// again, as the kernel does when a task opens /proc/self/fd/N.
		if tg.mode == unix.S_IFIFO && flags&(unix.O_NONBLOCK|unix.O_PATH) == 0 {
			return s.async(r, func(held []target) result { return s.openObject(&held[0], flags, cloexec) })
		}
		return s.openObject(tg, flags, cloexec)
	}
	flags |= unix.O_NOFOLLOW
	if tg.mode == unix.S_IFIFO && flags&(unix.O_NONBLOCK|unix.O_PATH) == 0 {
		// Opening a FIFO waits for its other end: on a thread of its own.
		return s.async(r, func(held []target) result { return s.openEntry(r, &held[0], flags, cloexec) })
	}
	return s.openEntry(r, tg, flags, cloexec)
}

func (s *server) openEntry(r *request, tg *target, flags int, cloexec bool) result {
	var fd int
	var err error
	// The umask matters only where the open may create: O_TMPFILE, or
	// O_CREAT of a name that does not exist (or O_EXCL, which fails
	// otherwise). Reading it is most of a create's cost here.
	creates := flags&unix.O_TMPFILE == unix.O_TMPFILE ||
		flags&unix.O_CREAT != 0 && (tg.ino == 0 || flags&unix.O_EXCL != 0)
	do := func() error {
		if r.s.kind == kindOpenat2 {
			how := unix.OpenHow{Flags: uint64(flags), Mode: r.mode}
			fd, err = unix.Openat2(tg.dir, tg.name, &how)
		} else {
			fd, err = unix.Openat(tg.dir, tg.name, flags, uint32(r.mode))
		}
		return err
	}
	if creates {
		if res := s.withUmask(r, do); res.errno != 0 {
			return res
		}
	} else if do() != nil {
		return fail(errnoOf(err))
	}
	if tg.ino != 0 {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Dev != tg.dev || st.Ino != tg.ino {
			// Not the file decide judged: another was moved in since.
			if flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL {
				unix.Close(fd)
				return fail(unix.EAGAIN)
			}
		}
	}
	res := result{fd: fd, cloexec: cloexec}
	if flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
		res.made = tg
	}
	return res
}

// unmake removes the entry an exclusive create made for fd, when it is
// still that file.
func unmake(tg *target, fd int) {
	var made, now unix.Stat_t
	if unix.Fstat(fd, &made) != nil || unix.Fstatat(tg.dir, tg.name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	if made.Dev == now.Dev && made.Ino == now.Ino {
		_ = unix.Unlinkat(tg.dir, tg.name, 0)
	}
}

// openTTY opens the task's controlling terminal for /dev/tty: ENXIO when
// it has none (a sandboxed command runs in a session of its own), else
// its pseudo-terminal under /dev/pts, the only kind a sandboxed task can
// take as its terminal.
func (s *server) openTTY(r *request, flags int, cloexec bool) result {
	b, err := readSmall(r.w.t.proc + "stat")
	if err != nil {
		return fail(unix.ENXIO)
	}
	// The fields after the command name (which may hold anything) are
	// state, ppid, pgrp, session, tty_nr.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return fail(unix.ENXIO)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 5 {
		return fail(unix.ENXIO)
	}
	nr, err := strconv.ParseUint(f[4], 10, 32)
	if err != nil || nr == 0 {
		return fail(unix.ENXIO)
	}
	major, minor := unix.Major(nr), unix.Minor(nr)
	if major < 136 || major > 143 { // UNIX98_PTY_SLAVE_MAJOR and its range
		return fail(unix.ENXIO)
	}
	pts := "/dev/pts/" + strconv.FormatUint(uint64((major-136)*256+minor), 10)
	fd, err := unix.Open(pts, flags&^(unix.O_CREAT|unix.O_EXCL|unix.O_TMPFILE|unix.O_NOFOLLOW), 0)
	if err != nil {
		return fail(errnoOf(err))
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Rdev != nr {
		unix.Close(fd)
		return fail(unix.ENXIO)
	}
	return result{fd: fd, cloexec: cloexec}
}

// openObject opens what an O_PATH descriptor refers to, through
// /proc/self/fd/N, with flags that cannot create anything.
func (s *server) openObject(tg *target, flags int, cloexec bool) result {
	flags &^= unix.O_CREAT | unix.O_EXCL | unix.O_TMPFILE
	fd, err := s.reopen(tg, flags)
	if err != 0 {
		return fail(err)
	}
	return result{fd: fd, cloexec: cloexec}
}

// reopen opens the target's file itself with flags.
func (s *server) reopen(tg *target, flags int) (int, unix.Errno) {
	p, e := tg.procPath()
	if e != 0 {
		return -1, e
	}
	fd, err := unix.Open(p, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, errnoOf(err)
	}
	return fd, 0
}

// withUmask runs a call that creates a file with the task's umask in
// force on the serving thread (which has a file-system context of its
// own, so the umask is its alone and nothing else it does depends on it:
// it stays set for the next create, usually with the same mask).
func (s *server) withUmask(r *request, fn func() error) result {
	mask, e := taskUmask(r.w.t)
	if e != 0 {
		return fail(e)
	}
	if mask != s.umask {
		unix.Umask(mask)
		s.umask = mask
	}
	return errnoResult(fn())
}

// taskUmask reads the task's umask from /proc/<tid>/status. The file is
// kept open for the task's next create (an open is two thirds of the
// cost): a descriptor of a task's proc file names the task it was opened
// for, so once that task is gone a read fails (ESRCH), even where its tid
// was given to another task meanwhile, and the file is opened again.
// (A thread that execs takes over its leader's tid, and the descriptor
// then names it: the umask read is the one the exec'd program has.)
func taskUmask(t *task) (int, unix.Errno) {
	for range 2 {
		fd, ok := t.status[t.tid]
		if !ok {
			var err error
			if fd, err = unix.Open(t.proc+"status", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
				return 0, unix.EACCES
			}
			if len(t.status) >= maxStatusFiles {
				t.closeStatus()
			}
			if t.status == nil {
				t.status = map[int]int{}
			}
			t.status[t.tid] = fd
		}
		n, err := unix.Pread(fd, t.sbuf[:], 0)
		if err != nil {
			unix.Close(fd)
			delete(t.status, t.tid)
			if ok {
				continue // another task's, gone: open the task's own
			}
			return 0, unix.EACCES
		}
		_, after, found := bytes.Cut(t.sbuf[:n], []byte("\nUmask:"))
		line, _, _ := bytes.Cut(after, []byte{'\n'})
		mask, perr := strconv.ParseUint(string(bytes.TrimSpace(line)), 8, 32)
		if !found || perr != nil {
			return 0, unix.EACCES
		}
		return int(mask), 0
	}
	return 0, unix.EACCES
}

// maxStatusFiles bounds the status files taskUmask keeps open: past it,
// all are closed and opened again as needed.
const maxStatusFiles = 256

// connect connects the task's socket (this process's copy of it) to the
// address the task passed, or, for a pathname unix socket, to the socket
// file decide judged, named through this process's descriptor of it. A
// connect may wait (a full backlog, a TCP handshake), so it runs on a
// thread of its own.
func (s *server) connect(r *request) result {
	sock := r.sock
	if len(r.targets) > 0 {
		tg := &r.targets[0]
		if tg.mode == 0 {
			return fail(unix.ENOENT)
		}
		p, e := tg.procPath()
		if e != 0 {
			return fail(e)
		}
		sock = make([]byte, offsetofSunPath+len(p)+1)
		binary.NativeEndian.PutUint16(sock, unix.AF_UNIX)
		copy(sock[offsetofSunPath:], p)
	}
	fd := r.sockFd
	r.sockFd = -1 // the act owns it now
	return s.async(r, func([]target) result {
		defer unix.Close(fd)
		var p unsafe.Pointer
		if len(sock) > 0 {
			p = unsafe.Pointer(&sock[0])
		}
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(p), uintptr(len(sock)))
		if e != 0 {
			return fail(e)
		}
		return done(0)
	})
}

// async runs fn on a new thread that holds no capability and answers the
// notification itself, through a copy of the listener. Serve goes on
// with other calls meanwhile. r is closed when act returns, so its
// targets are handed to fn (held) and closed after it.
func (s *server) async(r *request, fn func(held []target) result) result {
	lfd, err := unix.FcntlInt(uintptr(s.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fail(unix.EAGAIN)
	}
	id, pid := r.id, uint32(r.call.Pid)
	confine := s.confine
	// The request's descriptors close when act returns; what fn uses must
	// outlive it, so the targets it reads are handed over.
	held := make([]target, len(r.targets))
	copy(held, r.targets)
	for i := range r.targets {
		r.targets[i] = target{dir: -1, obj: -1}
	}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		defer unix.Close(lfd)
		defer func() {
			for i := range held {
				held[i].close()
			}
		}()
		var res result
		if e := dedicate(); e != nil {
			res = fail(unix.EACCES)
		} else if confine != nil && confine() != nil {
			res = fail(unix.EACCES)
		} else {
			res = fn(held)
		}
		answer := server{fd: lfd, resp: make([]uint64, len(s.resp))}
		_ = answer.send(id, pid, res)
	}()
	return result{async: true}
}
