//go:build amd64 || arm64

package seccomp

import (
	"bytes"
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
)

// request is one trapped call, read once from the task and resolved to
// the objects it acts on. Everything the act needs is here: nothing is
// read from the task's memory again.
type request struct {
	s       *sysc
	args    [6]uint64
	call    *Call
	targets []target // one per Call.Paths entry, same order
	flags   uint64   // open flags (the open family), else the AT_*/RENAME_* flags
	resolve uint64   // openat2's resolve flags
	mode    uint64   // open_how.mode or the mode argument
	names   []string // each name as the task passed it, one per Call.Paths entry
	sock    []byte   // connect's address, as read
	sockFd  int      // connect: this process's copy of the task's socket, or -1
	id      uint64   // the notification's id
	w       walker
}

func (r *request) close() {
	for i := range r.targets {
		r.targets[i].close()
	}
	if r.sockFd >= 0 {
		unix.Close(r.sockFd)
		r.sockFd = -1
	}
	r.w.close()
}

// decode reads a notification's arguments from the task and resolves its
// names to held objects. A non-zero errno is the answer without asking
// decide (the call cannot be named, or fails as the kernel would fail it).
func (t *task) decode(n *notif, r *request) unix.Errno {
	*r = request{args: n.data.args, sockFd: -1, w: walker{t: t, tid: int(n.pid), root: -1}}
	s := callsByNr[uint32(n.data.nr)]
	if n.data.arch != auditArch || s == nil || s.trap == trapRefuse {
		// The filter sends neither; refuse rather than guess.
		return unix.EPERM
	}
	r.s = s
	a := &r.args
	c := &Call{Pid: int(n.pid), Nr: int(n.data.nr), Name: s.name, Op: s.op}
	r.call = c
	if s.flags != noFlags {
		c.Flags = a[s.flags]
	}
	pathFlags := c.Flags // what following the last component is derived from
	sc := scope{}
	switch s.kind {
	case kindOpen:
		// The kernel reads open flags as an int.
		c.Flags = uint64(uint32(c.Flags))
		pathFlags = c.Flags
		c.Op = openOp(c.Flags)
		r.mode = a[s.flags+1]
	case kindOpenat2:
		// struct open_how {u64 flags, mode, resolve}; a smaller size is
		// EINVAL in the kernel too.
		if a[3] < unix.SizeofOpenHow {
			return unix.EINVAL
		}
		b, e := t.bytes(a[2], unix.SizeofOpenHow)
		if e != 0 {
			return e
		}
		c.Flags = binary.NativeEndian.Uint64(b[0:])
		r.mode = binary.NativeEndian.Uint64(b[8:])
		r.resolve = binary.NativeEndian.Uint64(b[16:])
		pathFlags = c.Flags
		sc = scopeOf(r.resolve)
		c.Op = openOp(c.Flags)
	case kindCreat:
		c.Flags = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
		pathFlags = c.Flags
		r.mode = a[1]
	case kindSymlink:
		target, e := t.str(a[0])
		if e != 0 {
			return e
		}
		c.Target = target
	case kindConnect:
		return t.connect(r)
	}
	r.flags = c.Flags
	for _, p := range s.paths {
		tg, e := t.target(r, p, pathFlags, sc)
		if e != 0 {
			return e
		}
		r.targets = append(r.targets, tg)
		c.Paths = append(c.Paths, Path{Name: tg.path, Mode: tg.mode, Dev: tg.dev, Ino: tg.ino})
	}
	if s.kind == kindExec {
		return t.exec(r, r.names[0])
	}
	return 0
}

// target reads one name of a call and resolves it.
func (t *task) target(r *request, p pathArg, flags uint64, sc scope) (target, unix.Errno) {
	a := &r.args
	dirfd := int32(unix.AT_FDCWD)
	if p.dir != cwd {
		dirfd = int32(uint32(a[p.dir]))
	}
	fail := target{dir: -1, obj: -1}
	var name string
	defer func() { r.names = append(r.names, name) }()
	switch ptr := a[p.name]; {
	case ptr == 0 && p.nullFd && dirfd != unix.AT_FDCWD:
		return r.w.withID(r.w.self(dirfd))
	case ptr == 0:
		return fail, unix.EFAULT
	default:
		var e unix.Errno
		if name, e = t.str(ptr); e != 0 {
			return fail, e
		}
		if name == "" {
			if !p.empty || flags&unix.AT_EMPTY_PATH == 0 {
				return fail, unix.ENOENT
			}
			return r.w.withID(r.w.self(dirfd))
		}
	}
	return r.w.resolve(dirfd, name, p.follow.final(flags), sc)
}

// connect reads a connect(2)'s address and takes a copy of the socket. A
// pathname unix address is resolved to the socket file it names, which
// decide judges (OpConnect); any other address goes to the act unjudged.
// The kernel itself fails bad lengths (EINVAL).
func (t *task) connect(r *request) unix.Errno {
	a := &r.args
	c := r.call
	n := int(int32(uint32(a[2])))
	if n < 0 || n > 128 { // sizeof(struct sockaddr_storage)
		return unix.EINVAL
	}
	b, e := t.bytes(a[1], n)
	if e != 0 {
		return e
	}
	r.sock = bytes.Clone(b)
	fd, errno := r.w.socket(int32(uint32(a[0])))
	if errno != 0 {
		return errno
	}
	r.sockFd = fd
	if n <= offsetofSunPath || n > sizeofSockaddrUn || binary.NativeEndian.Uint16(b) != unix.AF_UNIX || b[offsetofSunPath] == 0 {
		return 0 // not a pathname unix address: nothing to judge
	}
	sun := b[offsetofSunPath:]
	if i := bytes.IndexByte(sun, 0); i >= 0 {
		sun = sun[:i]
	}
	tg, e := r.w.resolve(unix.AT_FDCWD, string(sun), true, scope{})
	if e != 0 {
		return e
	}
	r.targets = append(r.targets, tg)
	c.Op = policy.OpConnect
	c.Paths = []Path{{Name: tg.path, Mode: tg.mode, Dev: tg.dev, Ino: tg.ino}}
	return 0
}
