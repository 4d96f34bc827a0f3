//go:build amd64 || arm64

package seccomp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// bound is how long any wait in these tests may take.
const bound = 10 * time.Second

// onDiscardedThread runs fn on a goroutine locked to a thread that is not
// the main thread, and never unlocks it: the runtime ends the thread when
// the goroutine returns, so a filter fn installs never reaches another
// goroutine. (A locked goroutine exiting on the main thread would wedge
// it instead, keeping the filter alive and the listener from hanging up.)
func onDiscardedThread(fn func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			fn()
			return
		}
		// On the main thread: hold it so the next goroutine gets another.
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			fn()
		}()
		<-locked
		runtime.UnlockOSThread()
	}()
}

// filtered sets no_new_privs and installs f on a discarded thread, sends
// the listener, then runs work there. done is closed when work returned.
func filtered(t testing.TB, f Filter, work func()) (listener int, done <-chan struct{}) {
	t.Helper()
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	d := make(chan struct{})
	onDiscardedThread(func() {
		defer close(d)
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			ch <- result{-1, err}
			return
		}
		fd, err := Install(f)
		ch <- result{fd, err}
		if err == nil {
			work()
		}
	})
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Install: %v", r.err)
		}
		return r.fd, d
	case <-time.After(bound):
		t.Fatal("Install did not return")
	}
	return -1, nil
}

// recorder is a decide func that keeps every Call and denies with EACCES
// the names the test policy protects: a last component ".bashrc" or
// "secret.txt" (reads too), or anything under a ".git/hooks" directory.
type recorder struct {
	mu    sync.Mutex
	calls []*Call
	// hook, when set, runs after recording and its answer is used.
	hook func(*Call) unix.Errno
}

func (r *recorder) decide(c *Call) unix.Errno {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		return hook(c)
	}
	return protect(c)
}

func protect(c *Call) unix.Errno {
	for _, p := range c.Paths {
		base := filepath.Base(p.Name)
		if base == ".bashrc" || base == "secret.txt" || strings.Contains(p.Name, "/.git/hooks/") {
			return unix.EACCES
		}
	}
	return 0
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *recorder) since(i int) []*Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Call(nil), r.calls[i:]...)
}

// stopper is a stop channel that may be closed more than once.
type stopper struct {
	ch   chan struct{}
	once sync.Once
}

func newStopper() *stopper { return &stopper{ch: make(chan struct{})} }

func (s *stopper) stop() { s.once.Do(func() { close(s.ch) }) }

// serve runs Serve on listener in the background; wait returns its error,
// failing the test if it did not return within bound.
func serve(t testing.TB, listener int, stop *stopper, decide func(*Call) unix.Errno) (wait func() error) {
	t.Helper()
	return serveWith(t, listener, stop, Handler{Decide: decide})
}

// serveWith is serve with every hook and option of h (ServeHandler).
func serveWith(t testing.TB, listener int, stop *stopper, h Handler) (wait func() error) {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- ServeHandler(listener, stop.ch, h) }()
	return func() error {
		t.Helper()
		select {
		case err := <-ch:
			return err
		case <-time.After(bound):
			t.Errorf("Serve did not return within %v (no POLLHUP?)", bound)
			stop.stop()
			return <-ch
		}
	}
}

// waitDone waits for work on the filtered thread, or stops the supervisor
// (failing pending calls with ENOSYS) and fails the test.
func waitDone(t testing.TB, done <-chan struct{}, stop *stopper) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(bound):
		stop.stop()
		<-done
		t.Fatalf("filtered work did not finish within %v", bound)
	}
}

// render is a call as the tables want it: "name op path [(follow)] ...
// [-> target]", with dir shown as D and the cwd as CWD.
func render(c *Call, dir, wd string) string {
	var b strings.Builder
	b.WriteString(c.Name + " " + c.Op.String())
	for _, p := range c.Paths {
		name := p.Name
		switch {
		case strings.HasPrefix(name, dir):
			name = "D" + name[len(dir):]
		case strings.HasPrefix(name, wd):
			name = "CWD" + name[len(wd):]
		}
		b.WriteString(" " + name)
	}
	if c.Target != "" {
		b.WriteString(" -> " + c.Target)
	}
	return b.String()
}

// realTempDir is t.TempDir with symlinks resolved, as /proc links show it.
func realTempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// makeTree creates entries under dir: "name" a file, "name/" a directory,
// "name => target" a symlink.
func makeTree(t testing.TB, dir string, entries []string) {
	t.Helper()
	for _, e := range entries {
		var err error
		switch {
		case strings.Contains(e, " => "):
			name, target, _ := strings.Cut(e, " => ")
			err = os.Symlink(target, filepath.Join(dir, name))
		case strings.HasSuffix(e, "/"):
			err = os.MkdirAll(filepath.Join(dir, e), 0o755)
		default:
			if err = os.MkdirAll(filepath.Dir(filepath.Join(dir, e)), 0o755); err == nil {
				err = os.WriteFile(filepath.Join(dir, e), []byte("x"), 0o644)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkTree fails for each of exist missing or absent present (Lstat).
func checkTree(t testing.TB, dir string, exist, absent []string) {
	t.Helper()
	for _, e := range exist {
		if _, err := os.Lstat(filepath.Join(dir, e)); err != nil {
			t.Errorf("%s should exist: %v", e, err)
		}
	}
	for _, e := range absent {
		if _, err := os.Lstat(filepath.Join(dir, e)); err == nil {
			t.Errorf("%s should not exist", e)
		}
	}
}

// shell builds `sh -c script sh args...`, bounded by a 10 s context and a
// WaitDelay, killed in cleanup whatever happened.
func shell(t testing.TB, script string, args ...string) (*exec.Cmd, *strings.Builder, *strings.Builder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t.Cleanup(func() {
		if cmd.Process != nil {
			cmd.Process.Kill() // by its pidfd/pid; ErrProcessDone once reaped
		}
	})
	return cmd, &stdout, &stderr
}

// statuses parses the "key=status" lines a script printed.
func statuses(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

// pollReadable waits until the listener has a notification queued.
func pollReadable(t testing.TB, listener int) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 100)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 && fds[0].Revents&unix.POLLIN != 0 {
			return
		}
	}
	t.Fatalf("no notification within %v", bound)
}
