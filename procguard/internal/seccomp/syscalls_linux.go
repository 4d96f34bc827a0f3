//go:build amd64 || arm64

package seccomp

import (
	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
)

// sysc describes one trapped system call: what the BPF program does with
// it and where Serve finds its names. The argument layouts are those of
// the system calls (the kernel's, not libc's wrappers): see open(2),
// mkdir(2), mknod(2), unlink(2), rename(2), link(2), symlink(2),
// truncate(2), chmod(2), chown(2), utimensat(2), utime(2), futimesat(2),
// connect(2), io_uring_setup(2), open_by_handle_at(2).
type sysc struct {
	name string
	trap trap
	op   policy.Op // for kindOpen and kindOpenat2, the flags decide
	kind kind
	// flags is the argument holding the open flags (kindOpen) or the
	// AT_*/RENAME_* flags, or -1.
	flags int8
	paths []pathArg
}

// trap is what the BPF program does with a listed call.
type trap uint8

const (
	// trapNotify always asks the supervisor.
	trapNotify trap = iota
	// trapWrites asks the supervisor when the open flags in argument
	// sysc.flags hold a write flag, or always with Filter.Reads; a
	// read-only open runs without a round trip.
	trapWrites
	// trapConnect asks the supervisor with Filter.UnixConnect, else the
	// call is not listed.
	trapConnect
	// trapRefuse fails the call with EPERM in the kernel.
	trapRefuse
	// trapExec asks the supervisor with Filter.Exec, else the call is
	// not listed.
	trapExec
)

// kind says what Serve reads besides the names.
type kind uint8

const (
	kindPlain   kind = iota
	kindOpen         // Op and FollowFinal from the open flags in argument sysc.flags
	kindOpenat2      // the same, from the struct open_how in argument 2 (its size in 3)
	kindCreat        // open with O_CREAT|O_WRONLY|O_TRUNC
	kindSymlink      // argument 0 is the link text
	kindConnect      // argument 1 is a sockaddr, argument 2 its length
	kindExec         // the name's argument + 1 is argv, + 2 envp
)

// pathArg says where one name of a call is.
type pathArg struct {
	dir  int8 // argument holding the directory fd, or cwd
	name int8 // argument holding the name pointer
	// follow says how FollowFinal is derived.
	follow follow
	// empty: with AT_EMPTY_PATH in the flags, an empty name stands for
	// the directory fd itself.
	empty bool
	// nullFd: a NULL name stands for the directory fd itself
	// (utimensat, futimesat).
	nullFd bool
}

// cwd in pathArg.dir marks a name relative to the working directory
// (the calls without a directory fd).
const cwd = -1

// noFlags in sysc.flags: the call has no flags argument.
const noFlags = -1

// follow derives Path.FollowFinal from the call and its flags.
type follow uint8

const (
	followNever     follow = iota
	followAlways           // truncate, chmod, chown, utimes
	followUnlessNo         // unless AT_SYMLINK_NOFOLLOW
	followIfFollow         // only with AT_SYMLINK_FOLLOW (linkat's old name)
	followOpenFlags        // unless O_NOFOLLOW, or O_CREAT with O_EXCL
)

// final reports whether the last component is followed, given the call's
// flags (open flags for followOpenFlags, AT_* flags otherwise).
func (f follow) final(flags uint64) bool {
	switch f {
	case followAlways:
		return true
	case followUnlessNo:
		return flags&unix.AT_SYMLINK_NOFOLLOW == 0
	case followIfFollow:
		return flags&unix.AT_SYMLINK_FOLLOW != 0
	case followOpenFlags:
		excl := flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL
		return flags&unix.O_NOFOLLOW == 0 && !excl
	}
	return false
}

// openWriteFlags are the open flags that make an open a write (OpWrite),
// and that the BPF program tests for trapWrites. O_TMPFILE needs O_WRONLY
// or O_RDWR, so it is covered.
const openWriteFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC | unix.O_APPEND

// openOp is the Op of an open with flags. O_PATH opens nothing for reading
// or writing and the kernel drops the other flags, so it is a read.
func openOp(flags uint64) policy.Op {
	if flags&unix.O_PATH == 0 && flags&openWriteFlags != 0 {
		return policy.OpWrite
	}
	return policy.OpRead
}

// one and two build the usual path lists.
func one(dir, name int8, f follow) []pathArg { return []pathArg{{dir: dir, name: name, follow: f}} }

func two(dir1, name1, dir2, name2 int8) []pathArg {
	return []pathArg{{dir: dir1, name: name1}, {dir: dir2, name: name2}}
}

// The calls both architectures have. Legacy calls without a directory fd
// are amd64's only (filter_amd64.go).
var (
	sysOpenat   = sysc{"openat", trapWrites, 0, kindOpen, 2, one(0, 1, followOpenFlags)}
	sysOpenat2  = sysc{"openat2", trapNotify, 0, kindOpenat2, noFlags, one(0, 1, followOpenFlags)}
	sysMkdirat  = sysc{"mkdirat", trapNotify, policy.OpCreate, kindPlain, noFlags, one(0, 1, followNever)}
	sysMknodat  = sysc{"mknodat", trapNotify, policy.OpWrite, kindPlain, noFlags, one(0, 1, followNever)}
	sysUnlinkat = sysc{"unlinkat", trapNotify, policy.OpDelete, kindPlain, 2, one(0, 1, followNever)}
	sysRenameat = sysc{"renameat", trapNotify, policy.OpMove, kindPlain, noFlags, two(0, 1, 2, 3)}
	// renameat2's flags are RENAME_*; RENAME_EXCHANGE moves both names,
	// which OpMove on both already says.
	sysRenameat2 = sysc{"renameat2", trapNotify, policy.OpMove, kindPlain, 4, two(0, 1, 2, 3)}
	sysLinkat    = sysc{"linkat", trapNotify, policy.OpLink, kindPlain, 4, []pathArg{
		{dir: 0, name: 1, follow: followIfFollow, empty: true},
		{dir: 2, name: 3},
	}}
	sysSymlinkat = sysc{"symlinkat", trapNotify, policy.OpLink, kindSymlink, noFlags, one(1, 2, followNever)}
	sysTruncate  = sysc{"truncate", trapNotify, policy.OpWrite, kindPlain, noFlags, one(cwd, 0, followAlways)}
	// The fchmodat system call has no flags argument (glibc emulates
	// AT_SYMLINK_NOFOLLOW); fchmodat2 (Linux 6.6) has one.
	sysFchmodat  = sysc{"fchmodat", trapNotify, policy.OpAttr, kindPlain, noFlags, one(0, 1, followAlways)}
	sysFchmodat2 = sysc{"fchmodat2", trapNotify, policy.OpAttr, kindPlain, 3, []pathArg{
		{dir: 0, name: 1, follow: followUnlessNo, empty: true},
	}}
	sysConnect = sysc{"connect", trapConnect, policy.OpConnect, kindConnect, noFlags, nil}
	// execve follows every link; execveat's AT_SYMLINK_NOFOLLOW makes a
	// link in the last component fail (ELOOP), AT_EMPTY_PATH runs the
	// descriptor itself.
	sysExecve   = sysc{"execve", trapExec, policy.OpExec, kindExec, noFlags, one(cwd, 0, followAlways)}
	sysExecveat = sysc{"execveat", trapExec, policy.OpExec, kindExec, 4, []pathArg{
		{dir: 0, name: 1, follow: followUnlessNo, empty: true},
	}}

	sysIoUringSetup   = sysc{name: "io_uring_setup", trap: trapRefuse}
	sysNameToHandleAt = sysc{name: "name_to_handle_at", trap: trapRefuse}
	sysOpenByHandleAt = sysc{name: "open_by_handle_at", trap: trapRefuse}
)

// entry binds a call to its number on the running architecture.
type entry struct {
	nr   uint32
	call *sysc
}

// commonCalls are the trapped calls with the same name on every supported
// architecture; archCalls (filter_$GOARCH.go) adds the legacy ones.
var commonCalls = []entry{
	{unix.SYS_OPENAT, &sysOpenat},
	{unix.SYS_OPENAT2, &sysOpenat2},
	{unix.SYS_MKDIRAT, &sysMkdirat},
	{unix.SYS_MKNODAT, &sysMknodat},
	{unix.SYS_UNLINKAT, &sysUnlinkat},
	{unix.SYS_RENAMEAT, &sysRenameat},
	{unix.SYS_RENAMEAT2, &sysRenameat2},
	{unix.SYS_LINKAT, &sysLinkat},
	{unix.SYS_SYMLINKAT, &sysSymlinkat},
	{unix.SYS_TRUNCATE, &sysTruncate},
	{unix.SYS_FCHMODAT, &sysFchmodat},
	{unix.SYS_FCHMODAT2, &sysFchmodat2},
	{unix.SYS_CONNECT, &sysConnect},
	{unix.SYS_EXECVE, &sysExecve},
	{unix.SYS_EXECVEAT, &sysExecveat},
	{unix.SYS_IO_URING_SETUP, &sysIoUringSetup},
	{unix.SYS_NAME_TO_HANDLE_AT, &sysNameToHandleAt},
	{unix.SYS_OPEN_BY_HANDLE_AT, &sysOpenByHandleAt},
}

// callsByNr maps a trapped call's number to its description.
var callsByNr = func() map[uint32]*sysc {
	m := make(map[uint32]*sysc, len(commonCalls)+len(archCalls))
	for _, list := range [][]entry{commonCalls, archCalls} {
		for _, e := range list {
			m[e.nr] = e.call
		}
	}
	return m
}()
