//go:build amd64 || arm64

package seccomp

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// opCase is one call made from a filtered thread of the test process. Each
// case gets its own directory D, holding tree before the filter goes on.
type opCase struct {
	name string
	tree []string
	op   func(d string) error // runs on the filtered thread
	// err is the error op must return (nil, or a unix.Errno); errAny
	// accepts any.
	err error
	// calls are the Calls decide saw, rendered (see render).
	calls         []string
	exist, absent []string
}

var errAny = errors.New("any error")

// runCases makes each case's call in turn on one filtered thread, with
// Serve answering through the recorder, and checks results, Calls and
// the tree. Serve must return by itself once the thread is gone. prepare,
// if not nil, runs for each case after its tree is made, before the
// filter goes on.
func runCases(t *testing.T, f Filter, cases []opCase, prepare func(name, dir string)) {
	runCasesWith(t, f, Handler{}, cases, prepare)
}

// runCasesWith is runCases with Serve's hooks and options in h; h.Decide
// is the recorder's.
func runCasesWith(t *testing.T, f Filter, h Handler, cases []opCase, prepare func(name, dir string)) {
	root := realTempDir(t)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dirs := make([]string, len(cases))
	for i, c := range cases {
		dirs[i] = filepath.Join(root, string(rune('a'+i/26))+string(rune('a'+i%26)))
		makeTree(t, dirs[i], append([]string{"./"}, c.tree...))
		if prepare != nil {
			prepare(c.name, dirs[i])
		}
	}
	type result struct {
		err   error
		calls []*Call
	}
	results := make([]result, len(cases))
	rec := &recorder{}
	stop := newStopper()
	listener, done := filtered(t, f, func() {
		for i, c := range cases {
			start := rec.count()
			results[i].err = c.op(dirs[i])
			results[i].calls = rec.since(start)
		}
	})
	h.Decide = rec.decide
	wait := serveWith(t, listener, stop, h)
	waitDone(t, done, stop)
	if err := wait(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := results[i]
			if c.err != errAny && !errors.Is(r.err, c.err) && r.err != c.err {
				t.Errorf("error = %v, want %v", r.err, c.err)
			}
			var got []string
			for _, call := range r.calls {
				got = append(got, render(call, dirs[i], wd))
				if call.Pid <= 0 || call.Nr <= 0 {
					t.Errorf("call %v: no pid or number", call)
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.calls, "\n") {
				t.Errorf("calls:\n  got  %q\n  want %q", got, c.calls)
			}
			checkTree(t, dirs[i], c.exist, c.absent)
		})
	}
}

// Helpers for the ops; they run on the filtered thread.

func openClose(dirfd int, name string, flags int) error {
	fd, err := unix.Openat(dirfd, name, flags|unix.O_CLOEXEC, 0o644)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

func create(name string) error {
	return openClose(unix.AT_FDCWD, name, unix.O_CREAT|unix.O_WRONLY)
}

// withFd opens name read-only (not trapped without Filter.Reads) and
// passes the fd to fn.
func withFd(name string, flags int, fn func(fd int) error) error {
	fd, err := unix.Open(name, flags|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return fn(fd)
}

func withDir(name string, fn func(fd int) error) error { return withFd(name, unix.O_DIRECTORY, fn) }

// atFdcwd is AT_FDCWD as a variable, so it converts to uintptr.
var atFdcwd = unix.AT_FDCWD

// rawOpenat calls openat with a name pointer Go did not make.
func rawOpenat(ptr uintptr, flags int) error {
	fd, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(atFdcwd), ptr, uintptr(flags), 0o644, 0, 0)
	if e != 0 {
		return e
	}
	unix.Close(int(fd))
	return nil
}

// edgeName maps two pages, unmaps the second and puts name (NUL
// included unless cut) so that it ends at the end of the first.
func edgeName(t *testing.T, name string, cut bool) uintptr {
	page := uintptr(os.Getpagesize())
	p, err := unix.MmapPtr(-1, 0, nil, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.MunmapPtr(unsafe.Add(p, page), page); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.MunmapPtr(p, page) })
	b := []byte(name)
	if !cut {
		b = append(b, 0)
	}
	at := unsafe.Add(p, page-uintptr(len(b)))
	copy(unsafe.Slice((*byte)(at), len(b)), b)
	return uintptr(at)
}

func TestServeCalls(t *testing.T) {
	// Where the name pointer points into memory the test maps: known
	// only at run time, so the ops find them here.
	var edgeOK, edgeCut uintptr
	long := strings.Repeat("a", pathMax+10)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	tcpPort := tcp.Addr().(*net.TCPAddr).Port
	var unixSock string // D/sock of the connect case, listened to below

	cases := []opCase{
		{name: "create a file", op: func(d string) error { return create(d + "/a.txt") },
			calls: []string{"openat write D/a.txt"}, exist: []string{"a.txt"}},
		{name: "create .bashrc is denied", op: func(d string) error { return create(d + "/.bashrc") },
			err: unix.EACCES, calls: []string{"openat write D/.bashrc"}, absent: []string{".bashrc"}},
		{name: "O_CREAT|O_EXCL does not follow",
			op:    func(d string) error { return openClose(unix.AT_FDCWD, d+"/x", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY) },
			calls: []string{"openat write D/x"}, exist: []string{"x"}},
		{name: "O_NOFOLLOW does not follow", tree: []string{"f"},
			op:    func(d string) error { return openClose(unix.AT_FDCWD, d+"/f", unix.O_WRONLY|unix.O_NOFOLLOW) },
			calls: []string{"openat write D/f"}},
		{name: "O_APPEND alone is a write", tree: []string{"f"},
			op:    func(d string) error { return openClose(unix.AT_FDCWD, d+"/f", unix.O_RDONLY|unix.O_APPEND) },
			calls: []string{"openat write D/f"}},
		{name: "read-only open is not seen", tree: []string{"f", "secret.txt"},
			op: func(d string) error {
				return errors.Join(openClose(unix.AT_FDCWD, d+"/f", unix.O_RDONLY),
					openClose(unix.AT_FDCWD, d+"/secret.txt", unix.O_RDONLY|unix.O_PATH))
			}},
		{name: "relative to a dirfd", tree: []string{"sub/"},
			op: func(d string) error {
				return withDir(d+"/sub", func(fd int) error { return openClose(fd, "f", unix.O_CREAT|unix.O_WRONLY) })
			},
			calls: []string{"openat write D/sub/f"}, exist: []string{"sub/f"}},
		{name: "dotdot is kept, not cleaned", tree: []string{"sub/"},
			op: func(d string) error {
				return withDir(d+"/sub", func(fd int) error { return openClose(fd, "../.bashrc", unix.O_CREAT|unix.O_WRONLY) })
			},
			err: unix.EACCES, calls: []string{"openat write D/.bashrc"}, absent: []string{".bashrc"}},
		{name: "doubled slashes are kept", op: func(d string) error { return create(d + "//y") },
			calls: []string{"openat write D/y"}, exist: []string{"y"}},
		{name: "mkdir", op: func(d string) error { return unix.Mkdir(d+"/newdir", 0o755) },
			calls: []string{"mkdirat create D/newdir"}, exist: []string{"newdir/"}},
		{name: "mkdirat .bashrc is denied",
			op: func(d string) error {
				return withDir(d, func(fd int) error { return unix.Mkdirat(fd, ".bashrc", 0o755) })
			},
			err: unix.EACCES, calls: []string{"mkdirat create D/.bashrc"}, absent: []string{".bashrc"}},
		{name: "mknodat fifo", op: func(d string) error { return unix.Mknodat(unix.AT_FDCWD, d+"/fifo", unix.S_IFIFO|0o644, 0) },
			calls: []string{"mknodat write D/fifo"}, exist: []string{"fifo"}},
		{name: "unlink", tree: []string{"f"}, op: func(d string) error { return unix.Unlinkat(unix.AT_FDCWD, d+"/f", 0) },
			calls: []string{"unlinkat delete D/f"}, absent: []string{"f"}},
		{name: "rmdir", tree: []string{"e/"},
			op:    func(d string) error { return unix.Unlinkat(unix.AT_FDCWD, d+"/e", unix.AT_REMOVEDIR) },
			calls: []string{"unlinkat delete D/e"}, absent: []string{"e"}},
		{name: "unlink a protected name is denied", tree: []string{"h/.git/hooks/pre-commit"},
			op:  func(d string) error { return unix.Unlinkat(unix.AT_FDCWD, d+"/h/.git/hooks/pre-commit", 0) },
			err: unix.EACCES, calls: []string{"unlinkat delete D/h/.git/hooks/pre-commit"}, exist: []string{"h/.git/hooks/pre-commit"}},
		{name: "renameat", tree: []string{"f"},
			op:    func(d string) error { return unix.Renameat(unix.AT_FDCWD, d+"/f", unix.AT_FDCWD, d+"/g") },
			calls: []string{"renameat move D/f D/g"}, exist: []string{"g"}, absent: []string{"f"}},
		{name: "renameat2 onto .bashrc is denied", tree: []string{"g"},
			op: func(d string) error {
				return withDir(d, func(fd int) error { return unix.Renameat2(fd, "g", unix.AT_FDCWD, d+"/.bashrc", 0) })
			},
			err: unix.EACCES, calls: []string{"renameat2 move D/g D/.bashrc"}, exist: []string{"g"}, absent: []string{".bashrc"}},
		{name: "symlink", op: func(d string) error { return unix.Symlinkat("target text", unix.AT_FDCWD, d+"/ln") },
			calls: []string{"symlinkat link D/ln -> target text"}, exist: []string{"ln"}},
		{name: "symlink .bashrc is denied",
			op: func(d string) error {
				return withDir(d, func(fd int) error { return unix.Symlinkat("/etc/passwd", fd, ".bashrc") })
			},
			err: unix.EACCES, calls: []string{"symlinkat link D/.bashrc -> /etc/passwd"}, absent: []string{".bashrc"}},
		{name: "linkat", tree: []string{"f"},
			op:    func(d string) error { return unix.Linkat(unix.AT_FDCWD, d+"/f", unix.AT_FDCWD, d+"/h", 0) },
			calls: []string{"linkat link D/f D/h"}, exist: []string{"h"}},
		{name: "linkat AT_SYMLINK_FOLLOW follows the old name", tree: []string{"f", "l => f"},
			op: func(d string) error {
				return unix.Linkat(unix.AT_FDCWD, d+"/l", unix.AT_FDCWD, d+"/h", unix.AT_SYMLINK_FOLLOW)
			},
			calls: []string{"linkat link D/f D/h"}, exist: []string{"h"}},
		{name: "linkat AT_EMPTY_PATH names the fd's file", tree: []string{"f"},
			op: func(d string) error {
				return withFd(d+"/f", 0, func(fd int) error {
					return unix.Linkat(fd, "", unix.AT_FDCWD, d+"/h", unix.AT_EMPTY_PATH)
				})
			},
			err: errAny, calls: []string{"linkat link D/f D/h"}}, // the kernel may want CAP_DAC_READ_SEARCH
		{name: "truncate follows", tree: []string{"f"}, op: func(d string) error { return unix.Truncate(d+"/f", 0) },
			calls: []string{"truncate write D/f"}},
		{name: "fchmodat follows", tree: []string{"f"},
			op:    func(d string) error { return unix.Fchmodat(unix.AT_FDCWD, d+"/f", 0o600, 0) },
			calls: []string{"fchmodat attr D/f"}},
		// Owners and times are not trapped: outside the write roots the
		// sandbox's read-only root holds them, and inside one they make
		// nothing run.
		{name: "fchownat is not trapped", tree: []string{"f"},
			op: func(d string) error { return unix.Fchownat(unix.AT_FDCWD, d+"/f", -1, -1, unix.AT_SYMLINK_NOFOLLOW) }},
		{name: "utimensat is not trapped", tree: []string{"f"},
			op: func(d string) error { return unix.UtimesNanoAt(unix.AT_FDCWD, d+"/f", nil, 0) }},
		{name: "utimensat with a NULL name is not trapped", tree: []string{"f"},
			op: func(d string) error {
				return withFd(d+"/f", 0, func(fd int) error {
					_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, 0, 0, 0, 0)
					if e != 0 {
						return e
					}
					return nil
				})
			}},
		{name: "openat2 read-only is seen", tree: []string{"f"},
			op: func(d string) error {
				fd, err := unix.Openat2(unix.AT_FDCWD, d+"/f", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC})
				if err == nil {
					unix.Close(fd)
				}
				return err
			},
			calls: []string{"openat2 read D/f"}},
		{name: "openat2 RESOLVE_NO_SYMLINKS does not follow; .bashrc denied",
			op: func(d string) error {
				_, err := unix.Openat2(unix.AT_FDCWD, d+"/.bashrc", &unix.OpenHow{
					Flags: unix.O_CREAT | unix.O_WRONLY | unix.O_CLOEXEC, Mode: 0o644, Resolve: unix.RESOLVE_NO_SYMLINKS})
				return err
			},
			err: unix.EACCES, calls: []string{"openat2 write D/.bashrc"}, absent: []string{".bashrc"}},
		{name: "dirfd on a file is ENOTDIR, unasked", tree: []string{"f"},
			op: func(d string) error {
				return withFd(d+"/f", 0, func(fd int) error { return openClose(fd, "x", unix.O_CREAT|unix.O_WRONLY) })
			},
			err: unix.ENOTDIR},
		{name: "dirfd on a pipe is ENOTDIR, unasked",
			op: func(d string) error {
				var p [2]int
				if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
					return err
				}
				defer unix.Close(p[0])
				defer unix.Close(p[1])
				return openClose(p[0], "x", unix.O_CREAT|unix.O_WRONLY)
			},
			err: unix.ENOTDIR},
		{name: "dirfd on a deleted directory is ENOENT, unasked", tree: []string{"gone/"},
			op: func(d string) error {
				return withDir(d+"/gone", func(fd int) error {
					if err := unix.Rmdir(d + "/gone"); err != nil {
						return err
					}
					return openClose(fd, "x", unix.O_CREAT|unix.O_WRONLY)
				})
			},
			err: unix.ENOENT, calls: []string{"unlinkat delete D/gone"}},
		{name: "closed dirfd is EBADF, unasked",
			op:  func(d string) error { return openClose(1<<20, "x", unix.O_CREAT|unix.O_WRONLY) },
			err: unix.EBADF},
		{name: "unreadable name is EFAULT, unasked",
			op:  func(d string) error { return rawOpenat(8, unix.O_CREAT|unix.O_WRONLY) },
			err: unix.EFAULT},
		{name: "name ending at an unmapped page",
			op:    func(d string) error { return rawOpenat(edgeOK, unix.O_CREAT|unix.O_WRONLY) },
			calls: []string{"openat write D/edge"}, exist: []string{"edge"}},
		{name: "name running into an unmapped page is EFAULT",
			op:  func(d string) error { return rawOpenat(edgeCut, unix.O_CREAT|unix.O_WRONLY) },
			err: unix.EFAULT, absent: []string{"edge"}},
		{name: "name longer than PATH_MAX is ENAMETOOLONG, unasked",
			op:  func(d string) error { return create(d + "/" + long) },
			err: unix.ENAMETOOLONG},
		{name: "empty name is ENOENT, unasked",
			op:  func(d string) error { return create("") },
			err: unix.ENOENT},
		{name: "io_uring_setup is refused in the kernel",
			op: func(d string) error {
				var params [120]byte
				_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
				return e
			},
			err: unix.EPERM},
		{name: "open_by_handle_at is refused in the kernel",
			op: func(d string) error {
				_, _, e := unix.Syscall(unix.SYS_OPEN_BY_HANDLE_AT, uintptr(atFdcwd), 0, 0)
				return e
			},
			err: unix.EPERM},
		{name: "connect to a pathname unix socket",
			op:    func(d string) error { return connectUnix(unixSock) },
			calls: []string{"connect connect D/sock"}},
		{name: "connect to a protected socket name is denied",
			op:  func(d string) error { return connectUnix(d + "/.bashrc") },
			err: unix.EACCES, calls: []string{"connect connect D/.bashrc"}},
		{name: "connect to a relative socket name is joined to the cwd",
			op:    func(d string) error { return connectUnix("no-such.sock") },
			err:   unix.ENOENT,
			calls: []string{"connect connect CWD/no-such.sock"}},
		{name: "connect to an abstract socket is not judged",
			op:  func(d string) error { return connectUnix("@auditguard-seccomp-test-none") },
			err: unix.ECONNREFUSED},
		{name: "connect to inet is not judged",
			op: func(d string) error {
				fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					return err
				}
				defer unix.Close(fd)
				return unix.Connect(fd, &unix.SockaddrInet4{Port: tcpPort, Addr: [4]byte{127, 0, 0, 1}})
			}},
		{name: "connect with an empty address fails as the kernel fails it",
			op: func(d string) error {
				fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					return err
				}
				defer unix.Close(fd)
				if _, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), 0, 0); e != 0 {
					return e
				}
				return nil
			},
			err: unix.EINVAL},
		{name: "connect on a descriptor that is not a socket is ENOTSOCK",
			op: func(d string) error {
				var sa [16]byte
				if _, _, e := unix.Syscall(unix.SYS_CONNECT, 1, uintptr(unsafe.Pointer(&sa[0])), 16); e != 0 {
					return e
				}
				return nil
			},
			err: unix.ENOTSOCK},
	}
	prepare := func(name, d string) {
		switch name {
		case "name ending at an unmapped page":
			edgeOK = edgeName(t, d+"/edge", false)
		case "name running into an unmapped page is EFAULT":
			edgeCut = edgeName(t, d+"/edge", true)
		case "connect to a pathname unix socket":
			unixSock = d + "/sock"
			l, err := net.Listen("unix", unixSock)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
		}
	}
	// The same calls resolve alike when the server holds one root for
	// every task (Handler.FixedRoot): the test's tasks never chroot.
	for _, fixed := range []bool{false, true} {
		t.Run(map[bool]string{false: "task root", true: "fixed root"}[fixed], func(t *testing.T) {
			runCasesWith(t, Filter{UnixConnect: true}, Handler{FixedRoot: fixed}, cases, prepare)
		})
	}
}

func connectUnix(name string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrUnix{Name: name})
}

func TestServeReads(t *testing.T) {
	var sock string
	runCases(t, Filter{Reads: true}, []opCase{
		{name: "read-only open is seen", tree: []string{"f"},
			op:    func(d string) error { return openClose(unix.AT_FDCWD, d+"/f", unix.O_RDONLY) },
			calls: []string{"openat read D/f"}},
		{name: "O_PATH is a read, even with O_CREAT", tree: []string{"f"},
			op: func(d string) error {
				return openClose(unix.AT_FDCWD, d+"/f", unix.O_PATH|unix.O_CREAT|unix.O_NOFOLLOW)
			},
			calls: []string{"openat read D/f"}},
		{name: "a read-denied name", tree: []string{"secret.txt"},
			op:    func(d string) error { return openClose(unix.AT_FDCWD, d+"/secret.txt", unix.O_RDONLY) },
			err:   unix.EACCES,
			calls: []string{"openat read D/secret.txt"}},
		{name: "the dirfd's open is seen too", tree: []string{"f"},
			op: func(d string) error {
				return withDir(d, func(fd int) error { return openClose(fd, "f", unix.O_RDONLY) })
			},
			calls: []string{"openat read D", "openat read D/f"}},
		{name: "writes are still seen", op: func(d string) error { return create(d + "/.bashrc") },
			err: unix.EACCES, calls: []string{"openat write D/.bashrc"}, absent: []string{".bashrc"}},
		{name: "connect is not trapped without UnixConnect",
			op: func(d string) error { return connectUnix(sock) }},
	}, func(name, d string) {
		if name == "connect is not trapped without UnixConnect" {
			sock = d + "/sock"
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
		}
	})
}
