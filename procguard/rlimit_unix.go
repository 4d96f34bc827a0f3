//go:build unix

package procguard

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// rlimitsOf lists the policy's rlimits for the sandbox to set before exec.
func rlimitsOf(l policy.ExecLimits) []sandbox.Rlimit {
	var out []sandbox.Rlimit
	add := func(res int, name string, v uint64) {
		if v != 0 {
			out = append(out, sandbox.Rlimit{Resource: res, Name: name, Value: v})
		}
	}
	add(unix.RLIMIT_CPU, "cpu", l.CPUSeconds)
	add(unix.RLIMIT_FSIZE, "fsize", l.FileSize)
	add(unix.RLIMIT_AS, "as", l.AddressSpace)
	add(unix.RLIMIT_NOFILE, "nofile", l.OpenFiles)
	return out
}

// groupAttr starts a child as the leader of its own process group, so
// that a kill reaches the whole tree.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
