//go:build !unix

package netguard

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
