//go:build amd64 || arm64

package seccomp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPreparedThread: a serving thread made before its filter exists
// serves the filter's calls as ServeHandler's does; it serves once, and a
// second Serve fails and closes its listener.
func TestPreparedThread(t *testing.T) {
	dir := realTempDir(t)
	th := Prepare()
	<-th.ready // made before the filter, as the sandbox's init makes it
	var rec recorder
	stop := newStopper()
	listener, done := filtered(t, Filter{}, func() {
		_ = create(dir + "/a.txt")
		_ = create(dir + "/.bashrc")
	})
	errc := th.Start(listener, stop.ch, Handler{Decide: rec.decide})
	waitDone(t, done, stop)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(bound):
		stop.stop()
		t.Fatalf("Serve did not return within %v", bound)
	}
	if n := rec.count(); n != 2 {
		t.Errorf("judged %d calls, want 2", n)
	}
	if _, err := os.Stat(dir + "/a.txt"); err != nil {
		t.Errorf("the allowed create did not happen: %v", err)
	}
	if _, err := os.Stat(dir + "/.bashrc"); err == nil {
		t.Error("the denied create happened")
	}

	fd := pipeEnd(t)
	if err := th.Serve(fd, stop.ch, Handler{Decide: rec.decide}); err == nil {
		t.Error("a second Serve on a thread that served succeeded")
	}
	checkClosed(t, fd)
	th.Close() // after Serve: nothing
}

// TestPreparedThreadClosed: a thread closed unused ends (the runtime ends
// a locked thread with its goroutine), and Serve on it fails and closes
// its listener.
func TestPreparedThreadClosed(t *testing.T) {
	const n = 4
	var ths [n]*Thread
	for i := range ths {
		ths[i] = Prepare()
		<-ths[i].ready
	}
	for _, th := range ths {
		th.Close()
		th.Close() // twice: nothing more
	}
	for _, th := range ths {
		task := fmt.Sprintf("/proc/self/task/%d", th.tid)
		for deadline := time.Now().Add(bound); ; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(task); errors.Is(err, fs.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the closed thread %d still runs after %v", th.tid, bound)
			}
		}
	}
	fd := pipeEnd(t)
	if err := ths[0].Serve(fd, nil, Handler{}); err == nil {
		t.Error("Serve on a closed thread succeeded")
	}
	checkClosed(t, fd)
}

// pipeEnd returns the read end of a new pipe, for a Serve that must close
// it; the write end is closed at the test's end.
func pipeEnd(t *testing.T) int {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[1]) })
	return p[0]
}

// checkClosed fails the test if fd is open: Serve closes its listener
// whatever happens. Called right after Serve, before anything else opens
// a file that could take the number.
func checkClosed(t *testing.T, fd int) {
	t.Helper()
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
		t.Errorf("the listener given to a failing Serve is still open (fcntl: %v)", err)
		unix.Close(fd)
	}
}
