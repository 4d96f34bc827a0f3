//go:build unix && !linux

package procguard

import (
	"context"
	"sync"
	"syscall"
	"time"
)

// supervisor outside Linux: there is no waitid WNOWAIT here, so the leader
// is reaped first and its group killed afterwards (the group id stays
// reserved while members are alive).
type supervisor struct {
	pid      int
	cg       *cgroup
	done     chan struct{}
	finished chan struct{}
	once     sync.Once

	mu     sync.Mutex
	reason error
}

func supervise(ctx context.Context, pid int, cg *cgroup, timeout time.Duration) *supervisor {
	s := &supervisor{pid: pid, cg: cg, done: make(chan struct{}), finished: make(chan struct{})}
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

func (s *supervisor) killAll() { _ = syscall.Kill(-s.pid, syscall.SIGKILL) }

func (s *supervisor) beforeReap() {}

func (s *supervisor) afterReap() {
	s.once.Do(func() { close(s.done) })
	<-s.finished
	s.killAll()
}
