//go:build amd64 || arm64

package seccomp

import (
	"net"
	"os"
	"strconv"
	"sync/atomic"
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
// then a write that fails with EBADF).
func TestOpensUnderSignals(t *testing.T) {
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
