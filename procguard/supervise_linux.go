package procguard

import (
	"errors"

	"golang.org/x/sys/unix"
)

// On Linux, Wait learns that the leader exited without reaping it (waitid
// WNOWAIT, so the pid, which names the group, cannot be reused) and kills
// what is left, cgroup included.

// kill kills the group and cgroup; the reason is kept unless the leader
// had already exited on its own.
func (s *supervisor) kill(reason error) {
	if s.launch != nil {
		if s.launch.Kill() {
			s.note(reason)
		}
		s.cg.kill()
		return
	}
	if !s.leaderExited() {
		s.mu.Lock()
		if s.reason == nil {
			s.reason = reason
		}
		s.mu.Unlock()
	}
	s.killAll()
}

// exited reports whether the leader has exited (reaped or not).
func (s *supervisor) exited() bool {
	if s.launch != nil {
		return s.launch.Ended()
	}
	if s.leaderExited() {
		return true
	}
	return unix.Kill(s.pid, 0) == unix.ESRCH
}

// leaderExited reports, without reaping, whether the leader has exited.
func (s *supervisor) leaderExited() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, s.pid, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
	return err == nil && info.Signo == int32(unix.SIGCHLD)
}

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
