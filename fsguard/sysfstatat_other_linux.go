//go:build linux && !amd64 && !arm64

package fsguard

import "golang.org/x/sys/unix"

// sysFstatat is unix.Fstatat where its system call differs by arch
// (fstatat64, or statx on loong64).
func sysFstatat(dirfd int, name string, st *unix.Stat_t, flags int) error {
	return unix.Fstatat(dirfd, name, st, flags)
}
