//go:build unix

package shellguard

import (
	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/interp"
)

// access asks the kernel whether this process's user may access path
// in mode (access(2)).
func access(path string, mode interp.AccessMode) error {
	return unix.Access(path, uint32(mode))
}
