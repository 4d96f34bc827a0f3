//go:build unix

package netguard

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used, and
// whether the platform reports it.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
