package procguard

import (
	"os"

	"golang.org/x/sys/windows"
)

// On Windows there is no process group to kill and no cgroup: a kill
// reaches the leader alone (children it started outlive it unless they
// exit with it). The sandbox, which holds a command's whole tree, is
// Linux's.

func (s *supervisor) kill(reason error) {
	s.mu.Lock()
	if s.reason == nil {
		s.reason = reason
	}
	s.mu.Unlock()
	s.killAll()
}

func (s *supervisor) killAll() {
	if p, err := os.FindProcess(s.pid); err == nil {
		_ = p.Kill()
		_ = p.Release()
	}
}

func (s *supervisor) beforeReap() {}

// stillActive is the exit code GetExitCodeProcess reports for a process
// that is running (STILL_ACTIVE).
const stillActive = 259

// exited reports whether the leader is gone: it cannot be opened, or it
// has an exit code.
func (s *supervisor) exited() bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(s.pid))
	if err != nil {
		return true
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return true
	}
	return code != stillActive
}

func (s *supervisor) afterReap() {
	s.stop()
	<-s.finished
}
