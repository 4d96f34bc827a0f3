package procguard

// DisableCgroupsForTest makes newCgroup report none (benchmarks measure the
// cgroup's share of the cost with it).
func DisableCgroupsForTest() func() {
	cgOnce.Do(findCgroupParent)
	old := cgParent
	cgParent, cgWhy = "", "disabled for a test"
	return func() { cgParent = old }
}
