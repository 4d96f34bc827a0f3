//go:build amd64 || arm64

package seccomp

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// task reads what one notification needs from the calling task: its
// memory through /proc/<tid>/mem and its cwd, root and fds through the
// /proc links. Methods return the errno the call fails with when they
// cannot answer (0 when they can). Nothing a task yields is trusted before
// the notification id is checked valid again afterwards.
type task struct {
	proc string // "/proc/<tid>/"
	mem  int    // /proc/<tid>/mem, or -1 until first needed
	root string // readlink of /proc/<tid>/root, "" until first needed
	buf  []byte // scratch of pathMax bytes for memory
	lbuf []byte // scratch of pathMax bytes for links
}

func (t *task) reset(tid uint32) {
	t.proc = "/proc/" + strconv.FormatUint(uint64(tid), 10) + "/"
	t.mem = -1
	t.root = ""
	if t.buf == nil {
		t.buf = make([]byte, pathMax)
		t.lbuf = make([]byte, pathMax)
	}
}

func (t *task) close() {
	if t.mem >= 0 {
		unix.Close(t.mem)
		t.mem = -1
	}
}

func (t *task) openMem() unix.Errno {
	if t.mem >= 0 {
		return 0
	}
	fd, err := unix.Open(t.proc+"mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		// Gone (then nobody reads the reply), or no ptrace access.
		return unix.EACCES
	}
	t.mem = fd
	return 0
}

// str reads the NUL-terminated string at addr, as the kernel's getname
// would: at most pathMax bytes with the NUL, else ENAMETOOLONG. Reads stop
// at page ends, so a name that ends just before an unmapped page reads
// fine; an unreadable byte before the NUL is EFAULT.
func (t *task) str(addr uint64) (string, unix.Errno) {
	if e := t.openMem(); e != 0 {
		return "", e
	}
	page := uint64(os.Getpagesize())
	got := 0
	for got < pathMax {
		n := min(int(page-addr%page), pathMax-got)
		// An address past MaxInt64 turns negative: pread refuses it.
		r, err := unix.Pread(t.mem, t.buf[got:got+n], int64(addr))
		if err != nil || r <= 0 {
			return "", unix.EFAULT
		}
		if i := bytes.IndexByte(t.buf[got:got+r], 0); i >= 0 {
			return string(t.buf[:got+i]), 0
		}
		got += r
		addr += uint64(r)
	}
	return "", unix.ENAMETOOLONG
}

// bytes reads exactly n (at most pathMax) bytes at addr.
func (t *task) bytes(addr uint64, n int) ([]byte, unix.Errno) {
	if e := t.openMem(); e != 0 {
		return nil, e
	}
	r, err := unix.Pread(t.mem, t.buf[:n], int64(addr))
	if err != nil || r != n {
		return nil, unix.EFAULT
	}
	return t.buf[:n], 0
}

// link reads the /proc/<tid>/ link rel ("cwd", "root", "fd/3"): an
// absolute path in the supervisor's view. Anything else (an anonymous
// inode, a pipe, a socket, a deleted file or directory) is EACCES: there
// is no name to judge.
func (t *task) link(rel string) (string, unix.Errno) {
	b := t.lbuf
	n, err := unix.Readlink(t.proc+rel, b)
	switch {
	case err == unix.ENOENT && strings.HasPrefix(rel, "fd/"):
		return "", unix.EBADF
	case err != nil:
		return "", unix.EACCES
	case n >= len(b):
		return "", unix.ENAMETOOLONG
	}
	s := string(b[:n])
	if !strings.HasPrefix(s, "/") || strings.HasSuffix(s, " (deleted)") {
		return "", unix.EACCES
	}
	return s, 0
}

// object is the path of what dirfd itself refers to: the cwd for
// AT_FDCWD, else the fd's file, whatever its type.
func (t *task) object(dirfd int32) (string, unix.Errno) {
	switch {
	case dirfd == unix.AT_FDCWD:
		return t.link("cwd")
	case dirfd < 0:
		return "", unix.EBADF
	}
	return t.link("fd/" + strconv.Itoa(int(dirfd)))
}

// dir is the path of the directory a relative name starts from.
func (t *task) dir(dirfd int32) (string, unix.Errno) {
	p, e := t.object(dirfd)
	if e != 0 || dirfd == unix.AT_FDCWD {
		return p, e
	}
	var st unix.Stat_t
	if err := unix.Stat(t.proc+"fd/"+strconv.Itoa(int(dirfd)), &st); err != nil {
		return "", unix.EACCES
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", unix.ENOTDIR
	}
	return p, 0
}

// absolute puts an absolute name in the supervisor's view: under the
// task's root when it was chrooted.
func (t *task) absolute(name string) (string, unix.Errno) {
	if t.root == "" {
		r, e := t.link("root")
		if e != 0 {
			return "", e
		}
		t.root = r
	}
	if t.root == "/" {
		return name, 0
	}
	return t.root + name, 0
}

// join appends a relative name to a directory path, adding nothing but
// the separator.
func join(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// resolve makes name (relative to dirfd when not absolute) a Name.
func (t *task) resolve(dirfd int32, name string) (string, unix.Errno) {
	if strings.HasPrefix(name, "/") {
		return t.absolute(name)
	}
	d, e := t.dir(dirfd)
	if e != 0 {
		return "", e
	}
	return join(d, name), 0
}
