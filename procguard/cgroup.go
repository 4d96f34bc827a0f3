package procguard

import (
	"strconv"
	"strings"
)

// This file holds what every platform says about a command's cgroup: the
// limits asked for and the facts of what is enforced. How a cgroup is made
// and killed lives in cgroup_linux.go; cgroup_other.go has no cgroups.

// cgroupLimits are the limits a command's whole process tree shares.
type cgroupLimits struct {
	// Pids caps the tasks (processes and threads) alive in the tree at
	// once; a fork or clone past it fails with EAGAIN. 0: no limit.
	Pids int64
	// MemoryBytes caps the memory charged to the tree; past it the kernel
	// reclaims, then kills a member (OOM). 0: no limit.
	MemoryBytes int64
}

// cgroupVia is the cgroup version that enforces a fact.
type cgroupVia uint8

const (
	viaNone cgroupVia = iota
	viaV2             // the per-command cgroup v2 directory
	viaV1             // a per-command directory in a v1 controller's hierarchy
)

func (v cgroupVia) String() string {
	switch v {
	case viaV2:
		return "v2"
	case viaV1:
		return "v1"
	}
	return "none"
}

// cgroupKill is how kill reaches every process of a command, including
// those that left its process group (setsid).
type cgroupKill uint8

const (
	// killNone: only the process group is killed.
	killNone cgroupKill = iota
	// killV2: one write to the v2 cgroup.kill (kernel 5.14+); the kernel
	// kills the whole subtree, forks in flight included.
	killV2
	// killV1Freezer: freeze the v1 freezer directory, SIGKILL every member,
	// thaw; frozen members cannot fork while the list is read.
	killV1Freezer
	// killV1Signal: SIGKILL every member of a v1 directory until none is
	// left (no freezer controller); a tree that forks faster than the loop
	// kills races it until the deadline, which its pids limit bounds.
	killV1Signal
)

func (k cgroupKill) String() string {
	switch k {
	case killV2:
		return "v2"
	case killV1Freezer:
		return "v1-freezer"
	case killV1Signal:
		return "v1-signal"
	}
	return "none"
}

// cgroupWhy is why a cgroup fact is missing.
type cgroupWhy uint8

const (
	whyNone         cgroupWhy = iota // not missing
	whyNotAsked                      // the limit was 0
	whyDisabled                      // turned off (by a test, or the policy's NoCgroup)
	whyLinuxOnly                     // this platform has no cgroups
	whyNoHierarchy                   // no cgroup mount holds this process
	whyNoController                  // neither v2 nor a v1 mount offers the controller
	whyNotDelegated                  // v2 has the controller but cannot enable it for children
	whyNotWritable                   // this process may not make cgroups there
	whyNoCgroupKill                  // the kernel lacks cgroup.kill (older than 5.14)
	whySetupFailed                   // making or writing this command's cgroup failed
)

func (w cgroupWhy) String() string {
	switch w {
	case whyNone:
		return "ok"
	case whyNotAsked:
		return "not asked"
	case whyDisabled:
		return "disabled"
	case whyLinuxOnly:
		return "Linux-only"
	case whyNoHierarchy:
		return "no cgroup hierarchy"
	case whyNoController:
		return "no controller"
	case whyNotDelegated:
		return "controller not delegated"
	case whyNotWritable:
		return "not writable"
	case whyNoCgroupKill:
		return "no cgroup.kill"
	case whySetupFailed:
		return "setup failed"
	}
	return "cgroupWhy(" + strconv.Itoa(int(w)) + ")"
}

// cgroupLimit is one limit as enforced.
type cgroupLimit struct {
	Max int64     // the limit in force; 0: none
	Via cgroupVia // who enforces it (viaNone when Max is 0)
	Why cgroupWhy // why there is none (whyNone when Max > 0)
}

// cgroupStatus is what a command's cgroup enforces. Hosts branch on the
// typed fields; Note is only for people.
type cgroupStatus struct {
	Kill    cgroupKill
	KillWhy cgroupWhy // why Kill is killNone
	Pids    cgroupLimit
	Memory  cgroupLimit
	// SwapBounded: Memory.Max bounds memory plus swap (v1
	// memory.memsw.limit_in_bytes, v2 memory.swap.max = 0). Without it a
	// tree can also fill swap.
	SwapBounded bool
	// Dirs are the cgroup directories made for the command.
	Dirs []string
	// Note gives the details behind the missing facts.
	Note string
}

// String renders the status compactly: "pids=512 (v1) memory=256MiB (v1)
// kill=v2".
func (s cgroupStatus) String() string {
	var b strings.Builder
	b.WriteString("pids=")
	writeLimit(&b, s.Pids, false, true)
	b.WriteString(" memory=")
	writeLimit(&b, s.Memory, true, s.SwapBounded)
	b.WriteString(" kill=")
	b.WriteString(s.Kill.String())
	if s.Kill == killNone && s.KillWhy != whyNone {
		b.WriteString(" (" + s.KillWhy.String() + ")")
	}
	return b.String()
}

func writeLimit(b *strings.Builder, l cgroupLimit, bytes, swapBounded bool) {
	switch {
	case l.Max > 0 && bytes:
		b.WriteString(byteSize(l.Max) + " (" + l.Via.String())
		if !swapBounded {
			b.WriteString(", swap unbounded")
		}
		b.WriteString(")")
	case l.Max > 0:
		b.WriteString(strconv.FormatInt(l.Max, 10) + " (" + l.Via.String() + ")")
	case l.Why == whyNotAsked:
		b.WriteString("off")
	default:
		b.WriteString("none (" + l.Why.String() + ")")
	}
}

// byteSize renders n in the largest binary unit that divides it.
func byteSize(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// missingStatus is the status of a command that gets no cgroup at all.
func missingStatus(l cgroupLimits, why cgroupWhy, note string) cgroupStatus {
	lim := func(v int64) cgroupLimit {
		if v <= 0 {
			return cgroupLimit{Why: whyNotAsked}
		}
		return cgroupLimit{Why: why}
	}
	return cgroupStatus{KillWhy: why, Pids: lim(l.Pids), Memory: lim(l.MemoryBytes), Note: note}
}
