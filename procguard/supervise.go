package procguard

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// supervisor watches one child group. Wait learns when the leader exited
// and kills what is left of the group (supervise_linux.go,
// supervise_other.go say how each platform does it without hitting a reused
// pid); a watcher goroutine kills the group on timeout or cancellation.
type supervisor struct {
	pid int
	// launch is a command whose sandbox outlives it (a Session's, or a
	// recycled one): it ends with its program, and killing it is killing
	// the sandbox while the command runs, never after.
	launch *sandbox.Launch
	cg     *cgroup
	done   chan struct{}
	// finished is closed when the watcher goroutine has returned: after
	// that no kill can hit a reaped pid or a reused cgroup.
	finished chan struct{}
	once     sync.Once

	mu     sync.Mutex
	reason error

	scope *audit.Scope // whose release kills the group (rk)
	rk    *releaseKill
}

// releaseKill is what the scope's release runs for a child still being
// supervised: kill its group and cgroup, then wait (bounded) until the
// leader has exited, so that when release returns nothing it started runs.
// The leader is left unreaped for Wait.
type releaseKill struct{ s *supervisor }

// releaseExitWait bounds how long release waits for a killed leader to
// exit (SIGKILL cannot be caught; this only covers the kernel's own delay,
// and a process in uninterruptible sleep).
const releaseExitWait = 2 * time.Second

func (r *releaseKill) Close() error {
	r.s.kill(audit.ErrScopeClosed)
	deadline := time.Now().Add(releaseExitWait)
	for !r.s.exited() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return nil
}

// supervise starts watching pid's group. When ctx ends, cancel (if set)
// is called first and the group killed only if it has not exited grace
// later; a timeout or the scope's release kill at once.
func supervise(ctx context.Context, pid int, launch *sandbox.Launch, cg *cgroup, timeout time.Duration, cancel func() error, grace time.Duration) *supervisor {
	s := &supervisor{pid: pid, launch: launch, cg: cg, done: make(chan struct{}), finished: make(chan struct{})}
	scope := audit.From(ctx)
	released := scope.Done() // the scope's release kills what it started
	if scope != nil {
		// Release kills it synchronously too, before it returns.
		rk := &releaseKill{s: s}
		if scope.TrackCleanup(rk) == nil {
			s.scope = scope
			s.rk = rk
		}
	}
	if ctx.Done() == nil && timeout <= 0 && released == nil {
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
			if cancel == nil {
				s.kill(ctx.Err())
				return
			}
			reason := ctx.Err()
			if err := cancel(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				reason = errors.Join(reason, err)
			}
			s.note(reason)
			grace := time.NewTimer(grace)
			defer grace.Stop()
			select {
			case <-s.done:
			case <-grace.C:
				s.kill(reason)
			case <-released:
				s.kill(audit.ErrScopeClosed)
			case <-timer:
				s.kill(ErrTimeout)
			}
		case <-released:
			s.kill(audit.ErrScopeClosed)
		case <-timer:
			s.kill(ErrTimeout)
		}
	}()
	return s
}

// note keeps reason as the cause unless one is kept already.
func (s *supervisor) note(reason error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reason == nil {
		s.reason = reason
	}
}

func (s *supervisor) cause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// ended is Wait's end of a session's command, which ended with its
// program: the watcher stops, and what is left in the cgroup is killed.
func (s *supervisor) ended() {
	s.stop()
	<-s.finished
	s.cg.killIfPopulated()
}

// stop ends the watcher goroutine (it kills nothing more after this).
func (s *supervisor) stop() {
	s.once.Do(func() {
		close(s.done)
		if s.scope != nil {
			s.scope.Untrack(s.rk)
		}
	})
}
