package netfwd

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Pair makes the control socketpair (unix, SOCK_SEQPACKET, both ends
// close-on-exec): host goes to Host, inside to the child, through
// exec.Cmd.ExtraFiles (which clears close-on-exec on the child's copy only).
// The host closes its copy of inside once the child has started.
func Pair() (host, inside *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("netfwd: %w", os.NewSyscallError("socketpair", err))
	}
	return os.NewFile(uintptr(fds[0]), "netfwd-host"), os.NewFile(uintptr(fds[1]), "netfwd-inside"), nil
}
