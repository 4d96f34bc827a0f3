package audit

// haveFPWalk says fpCallers walks frame pointers on this architecture.
const haveFPWalk = true

// fpCallers fills pcs with the return addresses of the calling function's
// callers, innermost first, by following the frame-pointer chain, and
// returns how many it wrote: runtime.Callers(2, pcs) at a fraction of the
// cost, except that each pc stands for one stack frame (the calls inlined
// into it are not listed; framesAt expands them) and wrapper frames are
// not left out. Go on amd64 always keeps frame pointers. complete is false
// when the walk stopped at a frame pointer that cannot be the next frame
// of the goroutine's stack (fpWalkFrom says which); the caller then walks
// with runtime.Callers instead.
//
//go:noescape
func fpCallers(pcs []uintptr) (n int, complete bool)

// fpWalkFrom is fpCallers' walk from frame pointer fp: it follows the
// chain while each next frame pointer is zero (the end) or above the
// current one by at most 1 MiB and aligned, and stops otherwise with
// complete false. fp must be a frame of a stack that does not move
// meanwhile (tests pass a chain built in a heap array).
//
//go:noescape
func fpWalkFrom(fp uintptr, pcs []uintptr) (n int, complete bool)
