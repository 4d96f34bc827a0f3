//go:build amd64 || arm64

package seccomp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOpensUnderSignals creates and writes files from a filtered thread
// while every thread of the process, the serving one included, is
// signalled over and over (SIGURG, the Go runtime's preemption signal):
// each open must hand back a descriptor the write goes to. A signal in
// the serving thread's wait for the descriptor to be installed must not
// leave the open answered with nothing installed (an open that returns 0,
// then a write that fails with EBADF), whether the descriptor is added
// and the call completed in one ioctl or in two (older kernels).
func TestOpensUnderSignals(t *testing.T) {
	for _, two := range []bool{false, true} {
		t.Run(map[bool]string{false: "one step", true: "two steps"}[two], func(t *testing.T) {
			defer addFdTwoSteps.Store(addFdTwoSteps.Load())
			addFdTwoSteps.Store(two)
			opensUnderSignals(t)
		})
	}
}

func opensUnderSignals(t *testing.T) {
	dir := realTempDir(t)
	const files = 1500
	var stopSignals atomic.Bool
	signalled := make(chan int)
	go func() {
		n := 0
		for !stopSignals.Load() {
			ents, _ := os.ReadDir("/proc/self/task")
			for _, e := range ents {
				if tid, err := strconv.Atoi(e.Name()); err == nil {
					_ = unix.Tgkill(os.Getpid(), tid, unix.SIGURG)
					n++
				}
			}
			time.Sleep(20 * time.Microsecond)
		}
		signalled <- n
	}()
	var failures []string
	var wrote int
	rec := &recorder{}
	stop := newStopper()
	listener, done := filtered(t, Filter{}, func() {
		for i := range files {
			name := dir + "/f" + strconv.Itoa(i)
			fd, err := unix.Open(name, unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
			if err != nil {
				failures = append(failures, name+": open: "+err.Error())
				continue
			}
			if _, err := unix.Write(fd, []byte("x")); err != nil {
				failures = append(failures, name+": write to fd "+strconv.Itoa(fd)+": "+err.Error())
			} else {
				wrote++
			}
			unix.Close(fd)
		}
	})
	wait := serve(t, listener, stop, rec.decide)
	waitDone(t, done, stop)
	stopSignals.Store(true)
	n := <-signalled
	if err := wait(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if len(failures) > 0 {
		t.Fatalf("%d of %d opens failed under %d signals, first: %s", len(failures), files, n, failures[0])
	}
	if wrote != files || rec.count() != files {
		t.Fatalf("wrote %d, judged %d, want %d each", wrote, rec.count(), files)
	}
	t.Logf("%d files written through the supervisor under %d signals", wrote, n)
}

// TestServingThreadBlocksSignals reads the serving thread's signal mask
// from the kernel while it judges a call: the signals another thread or
// process could send it are blocked (so none interrupts an add of a
// descriptor), the faults it may raise itself are not.
func TestServingThreadBlocksSignals(t *testing.T) {
	var blocked uint64
	var readErr error
	rec := &recorder{hook: func(c *Call) unix.Errno {
		b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/status")
		if err != nil {
			readErr = err
			return 0
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "SigBlk:"); ok {
				blocked, readErr = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			}
		}
		return 0
	}}
	dir := realTempDir(t)
	stop := newStopper()
	listener, done := filtered(t, Filter{}, func() { _ = create(dir + "/f") })
	wait := serve(t, listener, stop, rec.decide)
	waitDone(t, done, stop)
	if err := wait(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if rec.count() != 1 || readErr != nil {
		t.Fatalf("judged %d calls (want 1), reading the mask: %v", rec.count(), readErr)
	}
	for sig, want := range map[unix.Signal]bool{
		unix.SIGURG: true, unix.SIGPROF: true, unix.SIGCHLD: true, unix.SIGTERM: true, unix.SIGINT: true,
		unix.SIGQUIT: true, unix.SIGUSR1: true, unix.SIGALRM: true, unix.SIGPIPE: true, unix.SIGWINCH: true,
		unix.SIGSEGV: false, unix.SIGBUS: false, unix.SIGFPE: false, unix.SIGABRT: false, 33: false,
	} {
		if got := blocked&(1<<(sig-1)) != 0; got != want {
			t.Errorf("%v (%d) blocked: %v, want %v (SigBlk %016x)", sig, sig, got, want, blocked)
		}
	}
}

// TestCreateBeyondDescriptorLimit runs a child that lowers its own
// descriptor limit and creates files until an open fails: the failing
// open says EMFILE, as the kernel's would, and leaves no file behind (the
// supervisor created it before the task had no room for it), while every
// earlier open handed back a descriptor of its own file.
func TestCreateBeyondDescriptorLimit(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	const script = `
import errno, os, resource, sys
d = sys.argv[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (12, 12))
fds, err = [], 0
for i in range(64):
    try:
        fds.append(os.open("%s/f%d" % (d, i), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except OSError as e:
        err = e.errno
        break
for i, fd in enumerate(fds):
    os.write(fd, b"f%d" % i)
print(err, len(fds))
`
	for _, two := range []bool{false, true} {
		t.Run(map[bool]string{false: "one step", true: "two steps"}[two], func(t *testing.T) {
			defer addFdTwoSteps.Store(addFdTwoSteps.Load())
			addFdTwoSteps.Store(two)
			dir := realTempDir(t)
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			cmd := exec.CommandContext(ctx, python, "-I", "-B", "-c", script, dir)
			var out, errOut strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errOut
			rec := &recorder{}
			if err := runChild(t, Filter{}, cmd, rec); err != nil {
				t.Fatalf("python: %v\n%s", err, errOut.String())
			}
			var code, n int
			if _, err := fmt.Sscan(out.String(), &code, &n); err != nil {
				t.Fatalf("output %q: %v\n%s", out.String(), err, errOut.String())
			}
			if unix.Errno(code) != unix.EMFILE || n < 3 {
				t.Fatalf("the child opened %d files, then errno %d (%v), want EMFILE after a few", n, code, unix.Errno(code))
			}
			if rec.count() < n+1 {
				t.Fatalf("only %d calls judged for %d opens", rec.count(), n+1)
			}
			for i := range n {
				name := dir + "/f" + strconv.Itoa(i)
				if b, err := os.ReadFile(name); err != nil || string(b) != "f"+strconv.Itoa(i) {
					t.Errorf("%s: %q, %v: the descriptor was not its own", name, b, err)
				}
			}
			if _, err := os.Lstat(dir + "/f" + strconv.Itoa(n)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the open that failed left f%d behind: %v", n, err)
			}
		})
	}
}

// TestCreateOfKilledTask kills a child after the supervisor made its
// exclusive create and before it hands over the descriptor: the child's
// call never returns, so, as with the kernel, no file may be left behind.
func TestCreateOfKilledTask(t *testing.T) {
	for _, two := range []bool{false, true} {
		t.Run(map[bool]string{false: "one step", true: "two steps"}[two], func(t *testing.T) {
			defer addFdTwoSteps.Store(addFdTwoSteps.Load())
			addFdTwoSteps.Store(two)
			dir := realTempDir(t)
			victim := dir + "/victim"
			const script = `
import os, sys
d = sys.argv[1]
open(d + "/before", "w").close()
os.open(d + "/victim", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
open(d + "/after", "w").close()
`
			python, err := exec.LookPath("python3")
			if err != nil {
				t.Skip("python3 is not installed")
			}
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			cmd := exec.CommandContext(ctx, python, "-I", "-B", "-c", script, dir)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			var killed error
			made := false
			testHookAfterAct = func(c *Call) {
				if len(c.Paths) == 0 || c.Paths[0].Name != victim {
					return
				}
				_, err := os.Lstat(victim)
				made = err == nil
				// Kill the child (the caller: python has one thread here)
				// and wait until it is a zombie: its call is withdrawn by
				// then.
				if killed = unix.Kill(c.Pid, unix.SIGKILL); killed != nil {
					return
				}
				deadline := time.Now().Add(bound)
				for time.Now().Before(deadline) {
					b, err := os.ReadFile("/proc/" + strconv.Itoa(c.Pid) + "/stat")
					if i := strings.LastIndexByte(string(b), ')'); err != nil || i > 0 && len(b) > i+2 && (b[i+2] == 'Z' || b[i+2] == 'X') {
						return
					}
					time.Sleep(time.Millisecond)
				}
				killed = errors.New("the child did not die")
			}
			defer func() { testHookAfterAct = nil }()
			err = runChild(t, Filter{}, cmd, &recorder{})
			if killed != nil {
				t.Fatalf("killing the child: %v", killed)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != unix.SIGKILL {
				t.Fatalf("the child ended with %v, want SIGKILL\n%s", err, stderr.String())
			}
			if _, err := os.Stat(dir + "/before"); err != nil || !made {
				t.Fatalf("the child did not run, or its create was not made (%v)\n%s", err, stderr.String())
			}
			if _, err := os.Lstat(victim); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the killed child's create left the file behind: %v", err)
			}
			if _, err := os.Lstat(dir + "/after"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the child went on after its kill: %v", err)
			}
		})
	}
}

// TestServeLeavesNoDescriptors runs every kind of act (creates, reads
// through /proc aliases, renames, links, symlinks, unlinks, connects,
// refusals) through Serve and checks that, once Serve returned, this
// process holds exactly the descriptors it held before: the supervisor
// closes every directory, object, socket copy and listener copy it took.
func TestServeLeavesNoDescriptors(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		t.Run(map[bool]string{false: "task root", true: "fixed root"}[fixed], func(t *testing.T) {
			serveLeavesNoDescriptors(t, fixed)
		})
	}
}

func serveLeavesNoDescriptors(t *testing.T, fixedRoot bool) {
	dir := realTempDir(t)
	ln, err := net.Listen("unix", dir+"/s.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := count()
	rec := &recorder{}
	stop := newStopper()
	listener, done := filtered(t, Filter{Reads: true, UnixConnect: true}, func() {
		for i := range 50 {
			n := strconv.Itoa(i)
			_ = create(dir + "/f" + n)
			_ = openClose(unix.AT_FDCWD, "/proc/self/cwd/../"+n, unix.O_RDONLY)
			_ = openClose(unix.AT_FDCWD, dir+"/f"+n, unix.O_RDONLY)
			_ = unix.Rename(dir+"/f"+n, dir+"/g"+n)
			_ = unix.Link(dir+"/g"+n, dir+"/h"+n)
			_ = unix.Symlink("g"+n, dir+"/l"+n)
			_ = unix.Unlink(dir + "/h" + n)
			_ = create(dir + "/.bashrc") // refused
			if fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err == nil {
				_ = unix.Connect(fd, &unix.SockaddrUnix{Name: dir + "/s.sock"})
				unix.Close(fd)
			}
		}
	})
	wait := serveWith(t, listener, stop, Handler{Decide: rec.decide, FixedRoot: fixedRoot})
	waitDone(t, done, stop)
	if err := wait(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if rec.count() < 50*8 {
		t.Fatalf("only %d calls judged", rec.count())
	}
	// Connects answer from threads of their own, which may still be
	// closing their copies.
	deadline := time.Now().Add(bound)
	for count() != before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := count(); after != before {
		t.Fatalf("descriptors: %d before, %d after Serve", before, after)
	}
}
