//go:build !unix

package shellguard

import (
	"io/fs"
	"os"

	"mvdan.cc/sh/v3/interp"
)

// access approximates access(2) with the file's permission bits, where
// the system has no access(2).
func access(path string, mode interp.AccessMode) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	m := info.Mode().Perm()
	if (mode&interp.AccessRead != 0 && m&0o444 == 0) ||
		(mode&interp.AccessWrite != 0 && m&0o222 == 0) ||
		(mode&interp.AccessExec != 0 && m&0o111 == 0) {
		return &fs.PathError{Op: "access", Path: path, Err: fs.ErrPermission}
	}
	return nil
}
