//go:build amd64 || arm64

package seccomp

import (
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
