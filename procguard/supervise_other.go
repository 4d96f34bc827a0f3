//go:build unix && !linux

package procguard

import "syscall"

// Outside Linux there is no waitid WNOWAIT, so the leader is reaped first
// and its group killed afterwards (the group id stays reserved while
// members are alive).

func (s *supervisor) kill(reason error) {
	s.mu.Lock()
	if s.reason == nil {
		s.reason = reason
	}
	s.mu.Unlock()
	s.killAll()
}

func (s *supervisor) killAll() { _ = syscall.Kill(-s.pid, syscall.SIGKILL) }

func (s *supervisor) beforeReap() {}

// exited reports whether the leader is gone (signal 0 cannot reach it).
func (s *supervisor) exited() bool { return syscall.Kill(s.pid, 0) == syscall.ESRCH }

func (s *supervisor) afterReap() {
	s.stop()
	<-s.finished
	s.killAll()
}
