//go:build linux

package seccomp

import "golang.org/x/sys/unix"

// auditArch is the seccomp_data.arch of native calls; any other (AArch32
// compat tasks) kills the process.
const auditArch = unix.AUDIT_ARCH_AARCH64

// x32Bit has no counterpart on arm64.
const x32Bit = 0

// arm64 uses the generic system call table: no open, creat, mkdir, mknod,
// unlink, rmdir, rename, link, symlink, chmod, chown, lchown, utime,
// utimes or futimesat; the *at calls in commonCalls cover them.
var archCalls = []entry{}
