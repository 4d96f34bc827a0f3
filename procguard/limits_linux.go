package procguard

import (
	"strconv"

	"github.com/auditguard/auditguard/policy"
	"golang.org/x/sys/unix"
)

// applyLimits sets the policy's rlimits on a started child and returns what
// was applied. It runs right after Start, so a child may run briefly
// before its limits apply; children it forks later inherit them.
func applyLimits(pid int, l policy.ExecLimits) []string {
	var out []string
	set := func(res int, v uint64, name, unit string) {
		if v == 0 {
			return
		}
		rl := unix.Rlimit{Cur: v, Max: v}
		if err := unix.Prlimit(pid, res, &rl, nil); err != nil {
			out = append(out, name+" failed: "+err.Error())
			return
		}
		out = append(out, name+"="+strconv.FormatUint(v, 10)+unit)
	}
	set(unix.RLIMIT_CPU, l.CPUSeconds, "cpu", "s")
	set(unix.RLIMIT_FSIZE, l.FileSize, "fsize", "B")
	set(unix.RLIMIT_AS, l.AddressSpace, "as", "B")
	set(unix.RLIMIT_NOFILE, l.OpenFiles, "nofile", "")
	return out
}
