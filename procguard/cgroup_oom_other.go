//go:build !linux

package procguard

// oomKills: no cgroups outside Linux.
func (g *cgroup) oomKills() int64 { return 0 }
