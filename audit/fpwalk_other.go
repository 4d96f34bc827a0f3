//go:build !amd64

package audit

// haveFPWalk says fpCallers walks frame pointers on this architecture:
// here it does not, and the caller walk uses runtime.Callers.
const haveFPWalk = false

func fpCallers([]uintptr) (int, bool) { return 0, false }

func fpWalkFrom(uintptr, []uintptr) (int, bool) { return 0, false }
