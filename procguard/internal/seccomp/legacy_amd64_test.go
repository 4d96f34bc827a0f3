//go:build linux

package seccomp

import (
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sys makes a raw system call; string arguments become C strings, and the
// fd an open or creat returns is closed.
func sys(nr uintptr, args ...any) error {
	var a [6]uintptr
	var keep []*byte
	for i, v := range args {
		switch v := v.(type) {
		case string:
			p, err := unix.BytePtrFromString(v)
			if err != nil {
				return err
			}
			keep = append(keep, p)
			a[i] = uintptr(unsafe.Pointer(p))
		case int:
			a[i] = uintptr(v)
		}
	}
	r, _, e := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	runtime.KeepAlive(keep)
	if e != 0 {
		return e
	}
	if nr == unix.SYS_OPEN || nr == unix.SYS_CREAT {
		unix.Close(int(r))
	}
	return nil
}

// TestServeLegacyCalls covers amd64's calls without a directory fd, which
// x/sys/unix never makes (it uses the *at calls).
func TestServeLegacyCalls(t *testing.T) {
	const noID = 0xffffffff // chown's "leave unchanged"
	runCases(t, Filter{}, []opCase{
		{name: "open O_CREAT", op: func(d string) error { return sys(unix.SYS_OPEN, d+"/o", unix.O_CREAT|unix.O_WRONLY, 0o644) },
			calls: []string{"open write D/o"}, exist: []string{"o"}},
		{name: "open read-only is not seen", tree: []string{"f"},
			op: func(d string) error { return sys(unix.SYS_OPEN, d+"/f", unix.O_RDONLY) }},
		{name: "open .bashrc is denied", op: func(d string) error { return sys(unix.SYS_OPEN, d+"/.bashrc", unix.O_CREAT|unix.O_WRONLY, 0o644) },
			err: unix.EACCES, calls: []string{"open write D/.bashrc"}, absent: []string{".bashrc"}},
		{name: "creat", op: func(d string) error { return sys(unix.SYS_CREAT, d+"/c", 0o644) },
			calls: []string{"creat write D/c"}, exist: []string{"c"}},
		{name: "creat .bashrc is denied", op: func(d string) error { return sys(unix.SYS_CREAT, d+"/.bashrc", 0o644) },
			err: unix.EACCES, calls: []string{"creat write D/.bashrc"}, absent: []string{".bashrc"}},
		{name: "mkdir", op: func(d string) error { return sys(unix.SYS_MKDIR, d+"/m", 0o755) },
			calls: []string{"mkdir create D/m"}, exist: []string{"m/"}},
		{name: "mkdir relative to the cwd", op: func(d string) error { return sys(unix.SYS_MKDIR, "no-such-dir/m", 0o755) },
			err: unix.ENOENT},
		{name: "mknod", op: func(d string) error { return sys(unix.SYS_MKNOD, d+"/p", unix.S_IFIFO|0o644, 0) },
			calls: []string{"mknod write D/p"}, exist: []string{"p"}},
		{name: "unlink", tree: []string{"f"}, op: func(d string) error { return sys(unix.SYS_UNLINK, d+"/f") },
			calls: []string{"unlink delete D/f"}, absent: []string{"f"}},
		{name: "rmdir", tree: []string{"e/"}, op: func(d string) error { return sys(unix.SYS_RMDIR, d+"/e") },
			calls: []string{"rmdir delete D/e"}, absent: []string{"e"}},
		{name: "rename", tree: []string{"f"}, op: func(d string) error { return sys(unix.SYS_RENAME, d+"/f", d+"/g") },
			calls: []string{"rename move D/f D/g"}, exist: []string{"g"}},
		{name: "link", tree: []string{"f"}, op: func(d string) error { return sys(unix.SYS_LINK, d+"/f", d+"/h") },
			calls: []string{"link link D/f D/h"}, exist: []string{"h"}},
		{name: "symlink", op: func(d string) error { return sys(unix.SYS_SYMLINK, "tgt", d+"/s") },
			calls: []string{"symlink link D/s -> tgt"}, exist: []string{"s"}},
		{name: "symlink .bashrc is denied", op: func(d string) error { return sys(unix.SYS_SYMLINK, "tgt", d+"/.bashrc") },
			err: unix.EACCES, calls: []string{"symlink link D/.bashrc -> tgt"}, absent: []string{".bashrc"}},
		{name: "chmod", tree: []string{"f"}, op: func(d string) error { return sys(unix.SYS_CHMOD, d+"/f", 0o600) },
			calls: []string{"chmod attr D/f"}},
		{name: "chown", tree: []string{"f"}, op: func(d string) error { return sys(unix.SYS_CHOWN, d+"/f", noID, noID) },
			calls: nil},
		{name: "lchown", tree: []string{"f"}, op: func(d string) error { return sys(unix.SYS_LCHOWN, d+"/f", noID, noID) },
			calls: nil},
		{name: "utime", tree: []string{"f"}, op: func(d string) error { return sys(unix.SYS_UTIME, d+"/f", 0) },
			calls: nil},
		{name: "utimes", tree: []string{"f"}, op: func(d string) error { return sys(unix.SYS_UTIMES, d+"/f", 0) },
			calls: nil},
		{name: "futimesat relative to a dirfd", tree: []string{"f"},
			op: func(d string) error {
				return withDir(d, func(fd int) error { return sys(unix.SYS_FUTIMESAT, fd, "f", 0) })
			},
			calls: nil},
		{name: "futimesat with a NULL name is the fd", tree: []string{"f"},
			op: func(d string) error {
				return withFd(d+"/f", 0, func(fd int) error { return sys(unix.SYS_FUTIMESAT, fd, 0, 0) })
			},
			calls: nil},
	}, nil)
}
