package procguard

import (
	"path/filepath"
	"strconv"
	"strings"
)

// oomKills returns how many processes the OOM killer has killed in the
// cgroup's memory controller since it was made: the "oom_kill" line of v2
// memory.events or v1 memory.oom_control (Linux 4.13+). 0 when there is
// no memory controller or no such line.
func (g *cgroup) oomKills() int64 {
	if g == nil {
		return 0
	}
	var n int64
	if g.v2 != "" {
		n += oomLine(cgRead(filepath.Join(g.v2, "memory.events")))
	}
	if d := g.v1[ctlMemory]; d != "" {
		n += oomLine(cgRead(filepath.Join(d, "memory.oom_control")))
	}
	return n
}

func oomLine(s string) int64 {
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
