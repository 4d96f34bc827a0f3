//go:build unix

package fsguard

import (
	"io/fs"
	"syscall"
)

// oNoFollow is open(2)'s O_NOFOLLOW.
const oNoFollow = syscall.O_NOFOLLOW

// linkCount is the hard-link count of fi, 0 when the system does not say.
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}
