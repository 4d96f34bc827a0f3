//go:build unix

package policy

import (
	"testing"

	"golang.org/x/sys/unix"
)

// threadCPU is the CPU time of the calling thread, for benchmarks that
// report it beside wall time.
func threadCPU(b *testing.B) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatal(err)
	}
	return ts.Nano()
}
