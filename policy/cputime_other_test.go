//go:build !unix

package policy

import "testing"

// threadCPU reports 0 where the thread CPU clock is not available: the
// benchmarks' cpu-ns/op metric reads 0 there.
func threadCPU(*testing.B) int64 { return 0 }
