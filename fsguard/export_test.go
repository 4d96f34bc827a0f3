package fsguard

// SetFastPaths turns the openat2 fast paths on or off for a test and
// returns a function that restores the previous state. Tests that use it
// must not run in parallel.
func SetFastPaths(on bool) (restore func()) {
	old := fastOff.Load()
	fastOff.Store(!on)
	return func() { fastOff.Store(old) }
}

// ONoFollow is open(2)'s O_NOFOLLOW, where the system has one (0 otherwise).
const ONoFollow = oNoFollow
