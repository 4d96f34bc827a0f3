//go:build unix

package policy

import (
	"io/fs"
	"syscall"
)

// fileID returns the device and inode of fi, so that a program file
// replaced in place is probed again.
func fileID(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
