package audit

// haveFPWalk says fpCallers walks frame pointers on this architecture.
const haveFPWalk = true

// fpCallers fills pcs with the return addresses of the calling function's
// callers, innermost first, by following the frame-pointer chain, and
// returns how many it wrote: runtime.Callers(2, pcs) at a fraction of the
// cost, except that each pc stands for one stack frame (the calls inlined
// into it are not listed; framesAt expands them) and wrapper frames are
// not left out. Go on amd64 always keeps frame pointers.
//
//go:noescape
func fpCallers(pcs []uintptr) int
