package procguard

import (
	"syscall"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// rlimitsOf has nothing to list on Windows: there are no rlimits, and the
// sandbox that sets them runs on Linux alone.
func rlimitsOf(policy.ExecLimits) []sandbox.Rlimit { return nil }

// groupAttr starts a child in a new process group (the nearest Windows
// has to a Unix process group; a kill still reaches only the leader, see
// supervise_windows.go).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}
