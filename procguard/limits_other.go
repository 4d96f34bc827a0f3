//go:build !linux

package procguard

import "github.com/auditguard/auditguard/policy"

// applyLimits: prlimit on another process is Linux-only.
func applyLimits(pid int, l policy.ExecLimits) []string {
	if l == (policy.ExecLimits{}) {
		return nil
	}
	return []string{"rlimits not applied: Linux-only"}
}
