//go:build linux && (amd64 || arm64)

package fsguard

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysFstatat is unix.Fstatat without the allocation of the name's C
// string (see sysOpenat2): the checked Stat's fstatat takes its last
// component from a buffer on the stack. Only the arches whose fstatat
// fills a unix.Stat_t directly (the system call x/sys/unix itself makes
// there) take this path; the others go through unix.Fstatat.
func sysFstatat(dirfd int, name string, st *unix.Stat_t, flags int) error {
	var buf [stackName]byte
	p, ok := cName(&buf, name)
	if !ok {
		return unix.Fstatat(dirfd, name, st, flags)
	}
	_, _, errno := unix.Syscall6(sysFstatatNr, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(st)), uintptr(flags), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
