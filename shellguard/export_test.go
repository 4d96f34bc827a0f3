package shellguard

// SetShareSandbox turns the programs' shared sandbox on or off and returns
// the previous setting (benchmarks compare both).
func SetShareSandbox(on bool) bool {
	old := shareSandbox
	shareSandbox = on
	return old
}
