//go:build amd64 || arm64

package seccomp

import (
	"golang.org/x/sys/unix"
)

// dropCapabilities leaves the calling thread (capabilities are a
// thread's own) at most CAP_SYS_PTRACE, which reading a task's memory
// and descriptors may need and which opens no file: the calls the
// supervisor performs for a task are checked against the same
// permission bits, owners and mounts as the task's own would be.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	const keep = 1 << unix.CAP_SYS_PTRACE // in the first word
	for i := range data {
		m := uint32(0)
		if i == 0 {
			m = keep
		}
		data[i].Effective &= m
		data[i].Permitted &= m
		data[i].Inheritable = 0
	}
	return unix.Capset(&hdr, &data[0])
}

// dedicate makes the calling thread the serving thread: locked to the
// goroutine for good (the runtime ends it when the goroutine returns), a
// file-system context of its own (so setting the umask for a task's
// create touches no other thread), and no capability but CAP_SYS_PTRACE.
func dedicate() error {
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return err
	}
	return dropCapabilities()
}
