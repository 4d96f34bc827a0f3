//go:build amd64 || arm64

package seccomp

import (
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// What happens when the supervisor goes: Serve closes the listener, and
// the kernel fails the call a task is waiting in, and every later trapped
// call, with ENOSYS. Nothing hangs.

// TestStopFailsPendingCall: a thread of this process waits in a trapped
// call nobody has received; Serve starts with stop already closed, so it
// returns at once, and the call fails with ENOSYS, as does the next.
func TestStopFailsPendingCall(t *testing.T) {
	d := realTempDir(t)
	var err1, err2 error
	listener, done := filtered(t, Filter{}, func() {
		err1 = create(d + "/f1")
		err2 = create(d + "/f2")
	})
	pollReadable(t, listener)
	stop := newStopper()
	stop.stop()
	rec := &recorder{}
	if err := serve(t, listener, stop, rec.decide)(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	waitDone(t, done, stop)
	if !errors.Is(err1, unix.ENOSYS) || !errors.Is(err2, unix.ENOSYS) {
		t.Errorf("calls after stop: %v, %v; want ENOSYS", err1, err2)
	}
	if n := rec.count(); n != 0 {
		t.Errorf("decide asked %d times, want 0", n)
	}
	checkTree(t, d, nil, []string{"f1", "f2"})
}

// TestStopChildWaiting: the same with a child blocked in its first
// trapped call when the supervisor stops.
func TestStopChildWaiting(t *testing.T) {
	d := realTempDir(t)
	cmd, stdout, stderr := shell(t, `echo x > "$1/f1"; echo "f1=$?"; echo x > "$1/f2"; echo "f2=$?"`, d)
	var startErr, waitErr error
	listener, done := filtered(t, Filter{}, func() {
		if startErr = cmd.Start(); startErr == nil {
			waitErr = cmd.Wait()
		}
	})
	pollReadable(t, listener)
	stop := newStopper()
	stop.stop()
	rec := &recorder{}
	if err := serve(t, listener, stop, rec.decide)(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	waitDone(t, done, stop)
	if startErr != nil || waitErr != nil {
		t.Fatalf("sh: %v %v\n%s", startErr, waitErr, stderr)
	}
	st := statuses(stdout.String())
	if st["f1"] == "0" || st["f2"] == "0" || !strings.Contains(stderr.String(), "not implemented") {
		t.Errorf("stdout %q, stderr %q: want both writes failed with ENOSYS", stdout, stderr)
	}
	checkTree(t, d, nil, []string{"f1", "f2"})
}

// TestStopBetweenCalls: decide closes stop while deciding the first call.
// That call is still answered; Serve then returns, and the child's next
// call fails with ENOSYS.
func TestStopBetweenCalls(t *testing.T) {
	d := realTempDir(t)
	cmd, stdout, stderr := shell(t, `echo x > "$1/f1"; echo "f1=$?"; echo x > "$1/f2"; echo "f2=$?"`, d)
	stop := newStopper()
	rec := &recorder{hook: func(*Call) unix.Errno {
		stop.stop()
		return 0
	}}
	var startErr, waitErr error
	listener, done := filtered(t, Filter{}, func() {
		if startErr = cmd.Start(); startErr == nil {
			waitErr = cmd.Wait()
		}
	})
	wait := serve(t, listener, stop, rec.decide)
	waitDone(t, done, stop)
	if err := wait(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if startErr != nil || waitErr != nil {
		t.Fatalf("sh: %v %v\n%s", startErr, waitErr, stderr)
	}
	st := statuses(stdout.String())
	if st["f1"] != "0" || st["f2"] == "0" || !strings.Contains(stderr.String(), "not implemented") {
		t.Errorf("stdout %q, stderr %q: want f1 written, f2 failed with ENOSYS", stdout, stderr)
	}
	if n := rec.count(); n != 1 {
		t.Errorf("decide asked %d times, want 1", n)
	}
	checkTree(t, d, []string{"f1"}, []string{"f2"})
}

// TestVanishedTask: a child killed while its call waits unreceived is
// never decided, and Serve still returns when the listener hangs up.
func TestVanishedTask(t *testing.T) {
	d := realTempDir(t)
	cmd, _, _ := shell(t, `echo x > "$1/f1"`, d)
	var startErr, waitErr error
	started := make(chan struct{}) // cmd.Process is set
	listener, done := filtered(t, Filter{}, func() {
		startErr = cmd.Start()
		close(started)
		if startErr == nil {
			waitErr = cmd.Wait()
		}
	})
	<-started // bounded: Start needs no trapped call
	if startErr != nil {
		t.Fatal(startErr)
	}
	pollReadable(t, listener)
	cmd.Process.Kill()
	stop := newStopper()
	waitDone(t, done, stop)
	rec := &recorder{}
	if err := serve(t, listener, stop, rec.decide)(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if waitErr == nil {
		t.Error("the killed child exited cleanly")
	}
	if n := rec.count(); n != 0 {
		t.Errorf("decide asked %d times, want 0", n)
	}
	checkTree(t, d, nil, []string{"f1"})
}

// TestKilledWhileDeciding: decide kills the child and lets the call go on;
// the reply for the dead task is ignored and Serve carries on until the
// listener hangs up.
func TestKilledWhileDeciding(t *testing.T) {
	d := realTempDir(t)
	cmd, _, _ := shell(t, `echo x > "$1/f1"; sleep 5`, d)
	// Kill by the Call's pid: cmd.Process may not be set yet when the
	// child's first call arrives (Start sets it after the fork), and the
	// pid cannot be reused while its task waits in the call.
	rec := &recorder{hook: func(c *Call) unix.Errno {
		unix.Kill(c.Pid, unix.SIGKILL)
		time.Sleep(10 * time.Millisecond) // let the task leave the call first
		return 0
	}}
	start := time.Now()
	err := runChild(t, Filter{}, cmd, rec)
	if err == nil {
		t.Error("the killed child exited cleanly")
	}
	if time.Since(start) > 4*time.Second {
		t.Errorf("took %v: the child was not killed", time.Since(start))
	}
	if n := rec.count(); n != 1 {
		t.Errorf("decide asked %d times, want 1", n)
	}
}
