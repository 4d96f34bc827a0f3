//go:build linux

package seccomp

import (
	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
)

// auditArch is the seccomp_data.arch of native calls; any other (i386
// through int 0x80) kills the process.
const auditArch = unix.AUDIT_ARCH_X86_64

// x32Bit is __X32_SYSCALL_BIT (<asm/unistd.h>): x32 calls carry
// AUDIT_ARCH_X86_64 but their numbers have this bit set. They are killed,
// as the tables below know only the 64-bit numbers.
const x32Bit = 0x40000000

// The legacy calls without a directory fd, amd64 only: names are relative
// to the cwd.
var (
	sysOpen = sysc{"open", trapWrites, 0, kindOpen, 1, one(cwd, 0, followOpenFlags)}
	// creat is open(O_CREAT|O_WRONLY|O_TRUNC), always a write.
	sysCreat  = sysc{"creat", trapNotify, policy.OpWrite, kindCreat, noFlags, one(cwd, 0, followOpenFlags)}
	sysMkdir  = sysc{"mkdir", trapNotify, policy.OpCreate, kindPlain, noFlags, one(cwd, 0, followNever)}
	sysMknod  = sysc{"mknod", trapNotify, policy.OpWrite, kindPlain, noFlags, one(cwd, 0, followNever)}
	sysUnlink = sysc{"unlink", trapNotify, policy.OpDelete, kindPlain, noFlags, one(cwd, 0, followNever)}
	sysRmdir  = sysc{"rmdir", trapNotify, policy.OpDelete, kindPlain, noFlags, one(cwd, 0, followNever)}
	sysRename = sysc{"rename", trapNotify, policy.OpMove, kindPlain, noFlags, two(cwd, 0, cwd, 1)}
	// link(2) does not follow a symlink old name on Linux.
	sysLink    = sysc{"link", trapNotify, policy.OpLink, kindPlain, noFlags, two(cwd, 0, cwd, 1)}
	sysSymlink = sysc{"symlink", trapNotify, policy.OpLink, kindSymlink, noFlags, one(cwd, 1, followNever)}
	sysChmod   = sysc{"chmod", trapNotify, policy.OpAttr, kindPlain, noFlags, one(cwd, 0, followAlways)}
)

var archCalls = []entry{
	{unix.SYS_OPEN, &sysOpen},
	{unix.SYS_CREAT, &sysCreat},
	{unix.SYS_MKDIR, &sysMkdir},
	{unix.SYS_MKNOD, &sysMknod},
	{unix.SYS_UNLINK, &sysUnlink},
	{unix.SYS_RMDIR, &sysRmdir},
	{unix.SYS_RENAME, &sysRename},
	{unix.SYS_LINK, &sysLink},
	{unix.SYS_SYMLINK, &sysSymlink},
	{unix.SYS_CHMOD, &sysChmod},
}
