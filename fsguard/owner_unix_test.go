//go:build unix

package fsguard_test

import (
	"io/fs"
	"syscall"
)

// ownerOf is the owner, group and link count of fi, for tree snapshots.
func ownerOf(fi fs.FileInfo) (uid, gid uint32, nlink uint64) {
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid, uint64(st.Nlink)
}
