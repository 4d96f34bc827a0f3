//go:build amd64 || arm64

package seccomp

import "unsafe"

// The kernel's structures that golang.org/x/sys/unix (v0.49.0) does not
// define, from <linux/seccomp.h>. The ioctl numbers, flags, return actions
// and sock_fprog come from x/sys.

// seccompData is struct seccomp_data: what the BPF program and the
// supervisor see of a call.
type seccompData struct {
	nr   int32
	arch uint32
	ip   uint64
	args [6]uint64
}

var _ = [1]struct{}{}[unsafe.Sizeof(seccompData{})-64]

// Offsets into seccomp_data for BPF loads. Both supported architectures
// are little-endian, so an argument's low 32 bits sit at its own offset.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16 // args[i] at offArgs + 8*i
)

// notif is struct seccomp_notif, filled by SECCOMP_IOCTL_NOTIF_RECV.
type notif struct {
	id    uint64
	pid   uint32
	flags uint32
	data  seccompData
}

var _ = [1]struct{}{}[unsafe.Sizeof(notif{})-80]

// notifResp is struct seccomp_notif_resp, sent with
// SECCOMP_IOCTL_NOTIF_SEND.
type notifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

var _ = [1]struct{}{}[unsafe.Sizeof(notifResp{})-24]

// notifAddfd is struct seccomp_notif_addfd, sent with
// SECCOMP_IOCTL_NOTIF_ADDFD (Linux 5.9).
type notifAddfd struct {
	id         uint64
	flags      uint32
	srcfd      uint32
	newfd      uint32
	newfdFlags uint32
}

var _ = [1]struct{}{}[unsafe.Sizeof(notifAddfd{})-24]

// notifSizes is struct seccomp_notif_sizes, filled by
// seccomp(SECCOMP_GET_NOTIF_SIZES): the sizes of the kernel's own
// structures, which may outgrow the ones above.
type notifSizes struct {
	notif, resp, data uint16
}

// ioctlNotifIDValidOld is SECCOMP_IOCTL_NOTIF_ID_VALID as Linux 5.0-5.16
// defined it, _IOR('!', 2, __u64); 5.17 fixed the direction to _IOW (the
// x/sys constant) and still accepts this one. Serve uses it only when the
// kernel refuses the new number.
const ioctlNotifIDValidOld = 0x80082102

// pathMax is PATH_MAX from <linux/limits.h>: the longest name, NUL included.
const pathMax = 4096

// sizeofSockaddrUn is sizeof(struct sockaddr_un) from <linux/un.h>, and
// offsetofSunPath where sun_path starts in it.
const (
	sizeofSockaddrUn = 110
	offsetofSunPath  = 2
)
