package netfwd

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// LoopbackUp brings the lo interface of the calling thread's network
// namespace up (SIOCGIFFLAGS, then SIOCSIFFLAGS with IFF_UP, on an AF_INET
// datagram socket). Call it inside the new namespace, with CAP_NET_ADMIN
// there; it does nothing when lo is already up. The kernel then gives lo
// 127.0.0.1/8 (and ::1 unless IPv6 is disabled) and no other route.
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("netfwd: bring lo up: %w", os.NewSyscallError("socket", err))
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("netfwd: bring lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("netfwd: bring lo up: %w", os.NewSyscallError("ioctl SIOCGIFFLAGS", err))
	}
	flags := ifr.Uint16()
	if flags&unix.IFF_UP != 0 {
		return nil
	}
	ifr.SetUint16(flags | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("netfwd: bring lo up: %w", os.NewSyscallError("ioctl SIOCSIFFLAGS", err))
	}
	return nil
}
