package procguard

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// supervisor watches one child group: it learns when the leader exited
// without reaping it (waitid WNOWAIT, so the pid and its group id cannot be
// reused), and kills the group and cgroup on timeout or cancellation.
type supervisor struct {
	pid    int
	cg     *cgroup
	exited chan struct{}
	done   chan struct{}
	// finished is closed when the watcher goroutine has returned: after
	// that no kill can hit a reaped pid or a reused cgroup.
	finished chan struct{}
	once     sync.Once

	mu     sync.Mutex
	reason error
}

func supervise(ctx context.Context, pid int, cg *cgroup, timeout time.Duration) *supervisor {
	s := &supervisor{pid: pid, cg: cg, exited: make(chan struct{}), done: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		close(s.exited)
	}()
	go func() {
		defer close(s.finished)
		var timer <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-s.exited:
		case <-s.done:
		case <-ctx.Done():
			s.kill(ctx.Err())
		case <-timer:
			s.kill(ErrTimeout)
		}
	}()
	return s
}

func (s *supervisor) kill(reason error) {
	s.mu.Lock()
	if s.reason == nil {
		s.reason = reason
	}
	s.mu.Unlock()
	s.killAll()
}

func (s *supervisor) cause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

func (s *supervisor) stop() { s.once.Do(func() { close(s.done) }) }

// beforeReap waits for the leader's exit (not reaping it), then kills what
// is left of its group and cgroup while the group id is still reserved.
func (s *supervisor) beforeReap() {
	<-s.exited
	s.stop()
	<-s.finished
	_ = unix.Kill(-s.pid, unix.SIGKILL)
	s.cg.killIfPopulated()
}

func (s *supervisor) afterReap() {}

// killAll kills the process group (the leader is not reaped yet, so its
// pid still names the group) and the cgroup, which also holds children
// that left the group with setsid.
func (s *supervisor) killAll() {
	_ = unix.Kill(-s.pid, unix.SIGKILL)
	s.cg.kill()
}
