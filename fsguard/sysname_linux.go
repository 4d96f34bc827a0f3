package fsguard

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The openat2 calls of the fast route take their names without a heap
// allocation: x/sys/unix copies every name into a new NUL-terminated
// slice, one allocation per system call on the path of every guarded
// call. A name that fits is copied into a buffer on the stack instead;
// a longer one (or one holding a NUL, which the kernel cannot take) goes
// through unix.Openat2, which answers as it always does.

// stackName is the longest name, terminator included, kept on the stack.
const stackName = 256

// cName copies s, NUL-terminated, into buf; ok is false when it does not
// fit or holds a NUL.
func cName(buf *[stackName]byte, s string) (p *byte, ok bool) {
	if len(s) >= len(buf) || strings.IndexByte(s, 0) >= 0 {
		return nil, false
	}
	copy(buf[:], s)
	buf[len(s)] = 0
	return &buf[0], true
}

// sysOpenat2 is unix.Openat2 without the allocation.
func sysOpenat2(dirfd int, name string, how *unix.OpenHow) (int, error) {
	var buf [stackName]byte
	p, ok := cName(&buf, name)
	if !ok {
		return unix.Openat2(dirfd, name, how)
	}
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT2, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(how)), unsafe.Sizeof(*how), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
