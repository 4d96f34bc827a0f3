package procguard

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// supervisor watches one child group. Wait learns when the leader exited
// without reaping it (waitid WNOWAIT, so the pid, which names the group,
// cannot be reused) and kills what is left; a watcher goroutine kills the
// group and cgroup on timeout or cancellation.
type supervisor struct {
	pid  int
	cg   *cgroup
	done chan struct{}
	// finished is closed when the watcher goroutine has returned: after
	// that no kill can hit a reaped pid or a reused cgroup.
	finished chan struct{}
	once     sync.Once

	mu     sync.Mutex
	reason error
}

func supervise(ctx context.Context, pid int, cg *cgroup, timeout time.Duration) *supervisor {
	s := &supervisor{pid: pid, cg: cg, done: make(chan struct{}), finished: make(chan struct{})}
	if ctx.Done() == nil && timeout <= 0 {
		close(s.finished) // nothing to watch
		return s
	}
	go func() {
		defer close(s.finished)
		var timer <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-s.done:
		case <-ctx.Done():
			s.kill(ctx.Err())
		case <-timer:
			s.kill(ErrTimeout)
		}
	}()
	return s
}

// kill kills the group and cgroup; the reason is kept unless the leader
// had already exited on its own.
func (s *supervisor) kill(reason error) {
	if !s.leaderExited() {
		s.mu.Lock()
		if s.reason == nil {
			s.reason = reason
		}
		s.mu.Unlock()
	}
	s.killAll()
}

// leaderExited reports, without reaping, whether the leader has exited.
func (s *supervisor) leaderExited() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, s.pid, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
	return err == nil && info.Signo == int32(unix.SIGCHLD)
}

func (s *supervisor) cause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

func (s *supervisor) stop() { s.once.Do(func() { close(s.done) }) }

// killAll kills the process group (the leader is not reaped yet, so its
// pid still names the group) and the cgroup, which also holds children
// that left the group with setsid.
func (s *supervisor) killAll() {
	_ = unix.Kill(-s.pid, unix.SIGKILL)
	s.cg.kill()
}

// beforeReap waits for the leader's exit (not reaping it), then kills what
// is left of its group and cgroup while the group id is still reserved.
func (s *supervisor) beforeReap() {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, s.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	s.stop()
	<-s.finished
	_ = unix.Kill(-s.pid, unix.SIGKILL)
	s.cg.killIfPopulated()
}

func (s *supervisor) afterReap() {}
