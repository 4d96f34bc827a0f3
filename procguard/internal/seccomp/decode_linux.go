//go:build amd64 || arm64

package seccomp

import (
	"bytes"
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
)

// decode turns a notification into the Call decide judges. A non-zero
// errno is the answer without asking decide (the call cannot be named);
// a nil Call with errno 0 lets the call go on unasked (connect to
// anything but a pathname unix socket).
func (t *task) decode(n *notif) (*Call, unix.Errno) {
	s := callsByNr[uint32(n.data.nr)]
	if n.data.arch != auditArch || s == nil || s.trap == trapRefuse {
		// The filter sends neither; refuse rather than guess.
		return nil, unix.EPERM
	}
	a := &n.data.args
	c := &Call{Pid: int(n.pid), Nr: int(n.data.nr), Name: s.name, Op: s.op}
	if s.flags != noFlags {
		c.Flags = a[s.flags]
	}
	// pathFlags is what FollowFinal is derived from.
	pathFlags := c.Flags
	switch s.kind {
	case kindOpen:
		// The kernel reads open flags as an int.
		c.Flags = uint64(uint32(c.Flags))
		pathFlags = c.Flags
		c.Op = openOp(c.Flags)
	case kindOpenat2:
		// struct open_how {u64 flags, mode, resolve}; a smaller size is
		// EINVAL in the kernel too.
		if a[3] < unix.SizeofOpenHow {
			return nil, unix.EINVAL
		}
		b, e := t.bytes(a[2], unix.SizeofOpenHow)
		if e != 0 {
			return nil, e
		}
		c.Flags = binary.NativeEndian.Uint64(b[0:])
		resolve := binary.NativeEndian.Uint64(b[16:])
		pathFlags = c.Flags
		if resolve&unix.RESOLVE_NO_SYMLINKS != 0 {
			pathFlags |= unix.O_NOFOLLOW
		}
		c.Op = openOp(c.Flags)
	case kindCreat:
		c.Flags = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
		pathFlags = c.Flags
	case kindSymlink:
		target, e := t.str(a[0])
		if e != 0 {
			return nil, e
		}
		c.Target = target
	case kindConnect:
		return t.connect(c, a)
	}
	for _, p := range s.paths {
		path, e := t.path(p, a, pathFlags)
		if e != 0 {
			return nil, e
		}
		c.Paths = append(c.Paths, path)
	}
	return c, 0
}

// path names one argument of a call.
func (t *task) path(p pathArg, a *[6]uint64, flags uint64) (Path, unix.Errno) {
	dirfd := int32(unix.AT_FDCWD)
	if p.dir != cwd {
		dirfd = int32(uint32(a[p.dir]))
	}
	self := false
	var name string
	switch ptr := a[p.name]; {
	case ptr == 0 && p.nullFd && dirfd != unix.AT_FDCWD:
		self = true
	case ptr == 0:
		return Path{}, unix.EFAULT
	default:
		var e unix.Errno
		if name, e = t.str(ptr); e != 0 {
			return Path{}, e
		}
		if name == "" {
			if !p.empty || flags&unix.AT_EMPTY_PATH == 0 {
				return Path{}, unix.ENOENT
			}
			self = true
		}
	}
	if self {
		// The fd's own path: what the call acts on, already resolved.
		obj, e := t.object(dirfd)
		return Path{Name: obj}, e
	}
	full, e := t.resolve(dirfd, name)
	return Path{Name: full, FollowFinal: p.follow.final(flags)}, e
}

// connect names the socket of a connect(2) to a pathname unix address.
// The kernel itself fails bad lengths (EINVAL), so those go on unasked.
func (t *task) connect(c *Call, a *[6]uint64) (*Call, unix.Errno) {
	n := int(int32(uint32(a[2])))
	if n <= offsetofSunPath || n > sizeofSockaddrUn {
		return nil, 0
	}
	b, e := t.bytes(a[1], n)
	if e != 0 {
		return nil, e
	}
	if binary.NativeEndian.Uint16(b) != unix.AF_UNIX || b[offsetofSunPath] == 0 {
		return nil, 0 // not unix, or abstract
	}
	sun := b[offsetofSunPath:]
	if i := bytes.IndexByte(sun, 0); i >= 0 {
		sun = sun[:i]
	}
	name, e := t.resolve(unix.AT_FDCWD, string(sun))
	if e != 0 {
		return nil, e
	}
	c.Op = policy.OpConnect
	c.Paths = []Path{{Name: name, FollowFinal: true}}
	return c, 0
}
