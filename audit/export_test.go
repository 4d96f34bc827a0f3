package audit

// UseFramePointerWalk switches the caller walk between frame pointers (on)
// and runtime.Callers (off), for tests outside the package; it reports
// whether the frame-pointer walk is available at all.
func UseFramePointerWalk(on bool) (available bool) {
	if !haveFPWalk {
		return false
	}
	fpWalkOff.Store(!on)
	return true
}
