package procguard

import (
	"strconv"
	"strings"

	"github.com/auditguard/auditguard/policy"
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

// CgroupVia is the cgroup version that enforces a limit.
type CgroupVia uint8

const (
	CgroupViaNone CgroupVia = iota // nothing enforces it
	CgroupV2                       // the per-command cgroup v2 directory
	CgroupV1                       // a per-command directory in a v1 controller's hierarchy
)

func (v CgroupVia) String() string {
	switch v {
	case CgroupV2:
		return "v2"
	case CgroupV1:
		return "v1"
	}
	return "none"
}

// CgroupKill is how a kill (timeout, cancel, scope release) reaches every
// process of a command, including those that left its process group
// (setsid).
type CgroupKill uint8

const (
	// CgroupKillNone: only the process group is killed.
	CgroupKillNone CgroupKill = iota
	// CgroupKillV2: one write to the v2 cgroup.kill (kernel 5.14+); the kernel
	// kills the whole subtree, forks in flight included.
	CgroupKillV2
	// CgroupKillV1Freezer: freeze the v1 freezer directory, SIGKILL every member,
	// thaw; frozen members cannot fork while the list is read.
	CgroupKillV1Freezer
	// CgroupKillV1Signal: SIGKILL every member of a v1 directory until none is
	// left (no freezer controller); a tree that forks faster than the loop
	// kills races it until the deadline, which its pids limit bounds.
	CgroupKillV1Signal
)

func (k CgroupKill) String() string {
	switch k {
	case CgroupKillV2:
		return "v2"
	case CgroupKillV1Freezer:
		return "v1-freezer"
	case CgroupKillV1Signal:
		return "v1-signal"
	}
	return "none"
}

// CgroupReason is why a cgroup fact is missing (CgroupInForce: it is not).
type CgroupReason uint8

const (
	CgroupInForce      CgroupReason = iota // not missing
	CgroupNotAsked                         // the limit was 0
	CgroupDisabled                         // turned off (by a test, or the policy's NoCgroup)
	CgroupLinuxOnly                        // this platform has no cgroups
	CgroupNoHierarchy                      // no cgroup mount holds this process
	CgroupNoController                     // neither v2 nor a v1 mount offers the controller
	CgroupNotDelegated                     // v2 has the controller but cannot enable it for children
	CgroupNotWritable                      // this process may not make cgroups there
	CgroupNoKillFile                       // the kernel lacks cgroup.kill (older than 5.14)
	CgroupSetupFailed                      // making or writing this command's cgroup failed
)

func (w CgroupReason) String() string {
	switch w {
	case CgroupInForce:
		return "ok"
	case CgroupNotAsked:
		return "not asked"
	case CgroupDisabled:
		return "disabled"
	case CgroupLinuxOnly:
		return "Linux-only"
	case CgroupNoHierarchy:
		return "no cgroup hierarchy"
	case CgroupNoController:
		return "no controller"
	case CgroupNotDelegated:
		return "controller not delegated"
	case CgroupNotWritable:
		return "not writable"
	case CgroupNoKillFile:
		return "no cgroup.kill"
	case CgroupSetupFailed:
		return "setup failed"
	}
	return "CgroupReason(" + strconv.Itoa(int(w)) + ")"
}

// CgroupLimit is one limit as enforced.
type CgroupLimit struct {
	Max int64        // the limit in force; 0: none
	Via CgroupVia    // who enforces it (CgroupViaNone when Max is 0)
	Why CgroupReason // why there is none (CgroupInForce when Max > 0)
}

// CgroupStatus is what a command's cgroup enforces (Confinement.Cgroups).
// Hosts branch on the typed fields; String and Note are for people.
type CgroupStatus struct {
	Kill    CgroupKill
	KillWhy CgroupReason // why Kill is CgroupKillNone
	Pids    CgroupLimit
	Memory  CgroupLimit
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
func (s CgroupStatus) String() string {
	var b strings.Builder
	b.WriteString("pids=")
	writeLimit(&b, s.Pids, false, true)
	b.WriteString(" memory=")
	writeLimit(&b, s.Memory, true, s.SwapBounded)
	b.WriteString(" kill=")
	b.WriteString(s.Kill.String())
	if s.Kill == CgroupKillNone && s.KillWhy != CgroupInForce {
		b.WriteString(" (" + s.KillWhy.String() + ")")
	}
	return b.String()
}

func writeLimit(b *strings.Builder, l CgroupLimit, bytes, swapBounded bool) {
	switch {
	case l.Max > 0 && bytes:
		b.WriteString(byteSize(l.Max) + " (" + l.Via.String())
		if !swapBounded {
			b.WriteString(", swap unbounded")
		}
		b.WriteString(")")
	case l.Max > 0:
		b.WriteString(strconv.FormatInt(l.Max, 10) + " (" + l.Via.String() + ")")
	case l.Why == CgroupNotAsked:
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
func missingStatus(l cgroupLimits, why CgroupReason, note string) CgroupStatus {
	lim := func(v int64) CgroupLimit {
		if v <= 0 {
			return CgroupLimit{Why: CgroupNotAsked}
		}
		return CgroupLimit{Why: why}
	}
	return CgroupStatus{KillWhy: why, Pids: lim(l.Pids), Memory: lim(l.MemoryBytes), Note: note}
}

// noCgroupNote is CgroupNote for a command whose policy turned cgroups off.
const noCgroupNote = "disabled by the policy (ExecSpec.NoCgroup)"

// Shutdown removes the cgroup directories procguard keeps for reuse, and
// stops keeping any: a host calls it before it exits, after its commands
// are done, so that it leaves no cgroup behind. It does not end commands
// still running; each one's cgroup is removed when the command is
// released (Wait, or the release of its scope), as no cgroup is pooled
// after Shutdown. Commands may still be started after it; each then
// makes and removes its own cgroup (a start costs the making of one).
// When this host made cgroups, Shutdown also removes what dead hosts left
// since its first command did, by the same rules. Calling it more than
// once is harmless; outside Linux it does nothing.
//
// A host that is killed, or exits without calling Shutdown, or before its
// commands are released, leaves directories behind: the first command
// of a later host removes them (see the package documentation).
func Shutdown() { shutdownCgroups() }

// makeCgroup makes the command's cgroup for limits, unless the policy
// turned cgroups off, and records in c.Confinement what it enforces.
func (c *Cmd) makeCgroup(limits policy.ExecLimits, off bool) *cgroup {
	if off {
		c.Confinement.Cgroups = missingStatus(cgroupLimitsOf(limits), CgroupDisabled, noCgroupNote)
		c.Confinement.CgroupNote = noCgroupNote
		return nil
	}
	cg, st := newCgroup(cgroupLimitsOf(limits))
	c.Confinement.Cgroups, c.Confinement.CgroupNote = st, st.String()
	if cg != nil {
		c.Confinement.Cgroup = cg.dir
	}
	return cg
}
