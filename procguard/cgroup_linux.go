package procguard

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A command gets cgroups so that a kill reaches every process it started,
// setsid escapees included, and so that its whole tree shares one
// process-count and one memory limit. Hosts come in three layouts:
//
//   - pure v2: one directory has cgroup.kill, pids.max and memory.max;
//   - hybrid: a v2 hierarchy without controllers (cgroup.kill only) beside
//     one v1 hierarchy per controller (/sys/fs/cgroup/pids, .../memory);
//   - pure v1, or none at all.
//
// So a command gets a v2 directory when v2 is usable (the child is cloned
// straight into it and killed through it), plus a directory in the v1 pids
// and memory hierarchies for each limit asked that v2 cannot enforce, plus
// a v1 freezer directory when there is no v2 to kill with. v1 has no
// clone-into: the caller starts the child paused and calls join before
// letting it run.
//
// Every directory is named auditguard-<pid>-<start>-<pidns>-<seq>: the
// host's pid, its start time (field 22 of /proc/PID/stat, clock ticks
// since boot), the inode of its pid namespace, and a sequence number (a
// probe is auditguard-probe-<pid>-<start>-<pidns>). cgroupfs holds no
// files of one's own, so the name is where a later host reads whose
// directory it is and whether that host is gone (cleanStale).

// cgCtl is a v1 controller procguard uses.
type cgCtl uint8

const (
	ctlPids cgCtl = iota
	ctlMemory
	ctlFreezer
	numCtl
)

var (
	ctlNames = [numCtl]string{"pids", "memory", "freezer"}
	// ctlFile is a file every directory of the controller has: seeing it
	// in a probe directory proves the controller is there.
	ctlFile = [numCtl]string{"pids.max", "memory.limit_in_bytes", "freezer.state"}
)

// cgAvail says whether something is usable, and if not, why.
type cgAvail struct {
	why  CgroupReason
	note string
}

func (a cgAvail) ok() bool { return a.why == CgroupInForce }

// cgSystem is what this host offers; it is found once per process.
type cgSystem struct {
	v2       string  // where per-command v2 cgroups are made; "" when unusable
	v2Why    cgAvail // why v2 is unusable
	v2Pids   cgAvail // whether v2 children have pids.max
	v2Memory cgAvail // whether v2 children have memory.max
	v2Swap   bool    // v2 children have memory.swap.max

	v1    [numCtl]string  // where per-command v1 cgroups are made, per controller
	v1Why [numCtl]cgAvail // why a controller is unusable
	memsw bool            // v1 memory directories have memory.memsw.limit_in_bytes
}

var (
	cgOnce sync.Once
	cgSys  *cgSystem
	// cgParent is where the first per-command cgroups are made (the v2
	// parent, else a v1 one); "" turns cgroups off, with cgWhy (and
	// cgOffWhy, when discovery found nothing) saying why.
	cgParent string
	cgWhy    string
	cgOffWhy CgroupReason
	cgSeq    atomic.Uint64
	// cgFound: findCgroupParent has run (cgSys is set).
	cgFound atomic.Bool
)

// findCgroupParent discovers the cgroup layout, then removes what dead
// hosts left behind.
func findCgroupParent() {
	s := discoverCgroups()
	cgSys = s
	if s.v2 != "" {
		cgParent = s.v2
	} else {
		for _, c := range []cgCtl{ctlFreezer, ctlPids, ctlMemory} {
			if s.v1[c] != "" {
				cgParent = s.v1[c]
				break
			}
		}
	}
	if cgParent == "" {
		cgOffWhy = s.v2Why.why
		cgWhy = "v2: " + s.v2Why.note
		for c := range numCtl {
			cgWhy += "; v1 " + ctlNames[c] + ": " + s.v1Why[c].note
		}
	}
	cleanStale(s)
	cgFound.Store(true)
}

// cgMount is one mounted cgroup hierarchy.
type cgMount struct {
	dir, root string   // mount point, and the hierarchy's path mounted there
	v2        bool     // cgroup2
	opts      []string // v1: super options, which name its controllers
}

// path is where the hierarchy path rel is under this mount.
func (m cgMount) path(rel string) (string, bool) {
	switch {
	case m.root == "/":
		return filepath.Join(m.dir, rel), true
	case rel == m.root:
		return m.dir, true
	}
	if r, ok := strings.CutPrefix(rel, m.root+"/"); ok {
		return filepath.Join(m.dir, r), true
	}
	return "", false
}

// readCgroupMounts lists the cgroup mounts of /proc/self/mountinfo.
func readCgroupMounts() ([]cgMount, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var ms []cgMount
	for line := range strings.SplitSeq(string(b), "\n") {
		// "id parent major:minor root mountpoint opts [optional...] - fstype source superopts"
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 || (qf[0] != "cgroup" && qf[0] != "cgroup2") {
			continue
		}
		ms = append(ms, cgMount{
			dir:  unescapeMountinfo(pf[4]),
			root: unescapeMountinfo(pf[3]),
			v2:   qf[0] == "cgroup2",
			opts: strings.Split(qf[2], ","),
		})
	}
	return ms, nil
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// procCgroups is /proc/self/cgroup: this process's path in each hierarchy.
type procCgroups struct {
	v2    string            // "" when in no v2 hierarchy
	hasV2 bool              //
	v1    map[string]string // controller name -> path
}

func readProcCgroup() (procCgroups, error) {
	pc := procCgroups{v1: map[string]string{}}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return pc, err
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			pc.v2, pc.hasV2 = f[2], true
			continue
		}
		for c := range strings.SplitSeq(f[1], ",") {
			pc.v1[c] = f[2]
		}
	}
	return pc, nil
}

// discoverCgroups finds where this process may make per-command cgroups,
// in v2 and in each v1 controller procguard uses, by making (and removing)
// a probe directory in each.
func discoverCgroups() *cgSystem {
	s := &cgSystem{}
	ms, err := readCgroupMounts()
	var pc procCgroups
	if err == nil {
		pc, err = readProcCgroup()
	}
	if err != nil {
		a := cgAvail{CgroupNoHierarchy, err.Error()}
		s.v2Why, s.v2Pids, s.v2Memory = a, a, a
		for c := range numCtl {
			s.v1Why[c] = a
		}
		return s
	}
	s.findV2(ms, pc)
	for c := range numCtl {
		s.findV1(c, ms, pc)
	}
	return s
}

// findV2 finds this process's v2 cgroup, hands the pids and memory
// controllers down to its children when it has them but does not yet, and
// checks that a child with cgroup.kill can be made there.
func (s *cgSystem) findV2(ms []cgMount, pc procCgroups) {
	fail := func(why CgroupReason, note string) {
		s.v2Why = cgAvail{why, note}
		s.v2Pids, s.v2Memory = s.v2Why, s.v2Why
	}
	if !pc.hasV2 {
		fail(CgroupNoHierarchy, "this process is in no cgroup v2 hierarchy")
		return
	}
	parent := ""
	for _, m := range ms {
		if p, ok := m.path(pc.v2); ok && m.v2 {
			if _, err := os.Stat(p); err == nil {
				parent = p
				break
			}
		}
	}
	if parent == "" {
		fail(CgroupNoHierarchy, "no cgroup2 mount shows this process's cgroup "+pc.v2)
		return
	}
	have := strings.Fields(cgRead(filepath.Join(parent, "cgroup.controllers")))
	handed := strings.Fields(cgRead(filepath.Join(parent, "cgroup.subtree_control")))
	ctl := func(name string) cgAvail {
		switch {
		case !slices.Contains(have, name):
			return cgAvail{CgroupNoController, "v2 " + parent + " has no " + name + " controller"}
		case slices.Contains(handed, name):
			return cgAvail{}
		}
		// Enabling a controller for the children of a cgroup that holds
		// processes (any but the root) fails with EBUSY: v2 lets only
		// leaves hold processes once controllers are handed down.
		if err := cgWrite(filepath.Join(parent, "cgroup.subtree_control"), "+"+name); err != nil {
			return cgAvail{CgroupNotDelegated, "cannot enable " + name + " for children of v2 " + parent + ": " + cgErrText(err)}
		}
		return cgAvail{}
	}
	s.v2Pids, s.v2Memory = ctl("pids"), ctl("memory")

	probe := filepath.Join(parent, cgSelf().probeName())
	if err := os.Mkdir(probe, 0o755); err != nil {
		fail(CgroupNotWritable, "cannot make a cgroup in v2 "+parent+": "+cgErrText(err))
		return
	}
	defer unix.Rmdir(probe)
	if !cgExists(filepath.Join(probe, "cgroup.kill")) {
		fail(CgroupNoKillFile, "the kernel has no cgroup.kill (5.14+)")
		return
	}
	for _, c := range []struct {
		a    *cgAvail
		file string
	}{{&s.v2Pids, "pids.max"}, {&s.v2Memory, "memory.max"}} {
		if c.a.ok() && !cgExists(filepath.Join(probe, c.file)) {
			*c.a = cgAvail{CgroupNoController, "v2 children of " + parent + " lack " + c.file}
		}
	}
	s.v2Swap = s.v2Memory.ok() && cgExists(filepath.Join(probe, "memory.swap.max"))
	s.v2 = parent
}

// findV1 finds this process's cgroup in controller c's v1 hierarchy and
// checks that a child can be made there.
func (s *cgSystem) findV1(c cgCtl, ms []cgMount, pc procCgroups) {
	name := ctlNames[c]
	rel, ok := pc.v1[name]
	if !ok {
		s.v1Why[c] = cgAvail{CgroupNoController, "no v1 " + name + " hierarchy holds this process"}
		return
	}
	parent := ""
	for _, m := range ms {
		if m.v2 || !slices.Contains(m.opts, name) {
			continue
		}
		if p, ok := m.path(rel); ok && cgExists(p) {
			parent = p
			break
		}
	}
	if parent == "" {
		s.v1Why[c] = cgAvail{CgroupNoController, "no v1 " + name + " mount shows this process's cgroup " + rel}
		return
	}
	probe := filepath.Join(parent, cgSelf().probeName())
	if err := os.Mkdir(probe, 0o755); err != nil {
		s.v1Why[c] = cgAvail{CgroupNotWritable, "cannot make a cgroup in v1 " + parent + ": " + cgErrText(err)}
		return
	}
	defer unix.Rmdir(probe)
	if !cgExists(filepath.Join(probe, ctlFile[c])) {
		s.v1Why[c] = cgAvail{CgroupNoController, "v1 " + parent + " has no " + ctlFile[c]}
		return
	}
	if c == ctlMemory {
		// Absent when the kernel does not account swap (swapaccount=0).
		s.memsw = cgExists(filepath.Join(probe, "memory.memsw.limit_in_bytes"))
	}
	s.v1[c] = parent
}

// v2Ctl is whether v2 children have the controller for limit c.
func (s *cgSystem) v2Ctl(c cgCtl) cgAvail {
	if s.v2 == "" {
		return s.v2Why
	}
	if c == ctlPids {
		return s.v2Pids
	}
	return s.v2Memory
}

// cgShape is which directories a per-command cgroup has; the pool hands a
// cgroup only to a command that needs the same ones.
type cgShape uint8

const (
	shapeV2 cgShape = 1 << iota
	shapeV1Pids
	shapeV1Memory
	shapeV1Freezer
)

func shapeV1(c cgCtl) cgShape { return shapeV1Pids << c }

// shape is the directories a command with limits l needs: v2 when usable;
// a v1 directory for each limit asked that v2 cannot enforce; a v1 freezer
// directory to kill with when there is no v2 (else a pids one, to at least
// find the members).
func (s *cgSystem) shape(l cgroupLimits, v2 bool) cgShape {
	var sh cgShape
	if v2 {
		sh |= shapeV2
	}
	for _, c := range []struct {
		ctl   cgCtl
		asked bool
	}{{ctlPids, l.Pids > 0}, {ctlMemory, l.MemoryBytes > 0}} {
		if c.asked && !(v2 && s.v2Ctl(c.ctl).ok()) && s.v1[c.ctl] != "" {
			sh |= shapeV1(c.ctl)
		}
	}
	if !v2 {
		switch {
		case s.v1[ctlFreezer] != "":
			sh |= shapeV1Freezer
		case sh == 0 && s.v1[ctlPids] != "":
			sh |= shapeV1Pids
		}
	}
	return sh
}

// cgroup is a command's cgroups: a v2 directory, v1 directories, or both.
// A nil *cgroup is valid and does nothing.
type cgroup struct {
	// dir names the cgroup to hosts: the v2 directory, else the first v1
	// one (freezer, pids, memory).
	dir string
	v2  string
	v1  [numCtl]string
	// fd is the v2 directory opened O_PATH for CLONE_INTO_CGROUP, or -1.
	fd int
	// events is an open cgroup.events (re-read with pread), or -1.
	events int
	shape  cgShape
	// lim and swapBounded are what is written in the limit files (zero:
	// the kernel's defaults, no limit).
	lim         cgroupLimits
	swapBounded bool
	// killed: a kill was sent. Such a cgroup is never reused: on some
	// kernels a child cloned into it later (CLONE_INTO_CGROUP) is killed
	// at birth, as the kill sequence number it sees is stale.
	killed atomic.Bool
	// empty: the leader has exited and the cgroup was seen empty; nothing
	// can enter it any more (only its members could fork into it).
	empty bool
}

// cgFailures are the directories a command should have had but whose
// making failed, by controller (numCtl: the v2 one).
type cgFailures [numCtl + 1]cgAvail

// newCgroup makes the cgroups of one command, with limits l, and says what
// they enforce. It never fails: a missing cgroup or limit is a fact of the
// status (the caller decides whether it is fatal), and a nil *cgroup is
// valid.
func newCgroup(l cgroupLimits) (*cgroup, CgroupStatus) {
	cgOnce.Do(findCgroupParent)
	retryLeftovers()
	if cgParent == "" {
		why := cgOffWhy
		if why == CgroupInForce {
			why = CgroupDisabled // discovery found cgroups; they were turned off
		}
		return nil, missingStatus(l, why, cgWhy)
	}
	s := cgSys
	var fails cgFailures
	v2 := s.v2 != ""
	for {
		sh := s.shape(l, v2)
		if sh == 0 {
			return nil, s.status(nil, l, fails)
		}
		if g := cgPool.get(sh); g != nil {
			if st, err := g.setLimits(s, l, fails); err == nil {
				return g, st
			}
			g.destroy() // its old limits cannot be rewritten; make a new one
		}
		g, err := s.makeCgroup(sh, &fails)
		if err != nil && v2 {
			// Without the v2 directory, use what v1 offers.
			fails[numCtl] = cgAvail{CgroupSetupFailed, err.Error()}
			v2 = false
			continue
		}
		if g == nil {
			return nil, s.status(nil, l, fails)
		}
		st, _ := g.setLimits(s, l, fails)
		return g, st
	}
}

// makeCgroup makes the directories of shape sh. An error is a failure of
// the v2 directory; a failed v1 directory is recorded in fails and left
// out. It returns nil when no directory could be made.
func (s *cgSystem) makeCgroup(sh cgShape, fails *cgFailures) (*cgroup, error) {
	name := cgSelf().prefix + strconv.FormatUint(cgSeq.Add(1), 10)
	g := &cgroup{fd: -1, events: -1}
	if sh&shapeV2 != 0 {
		dir := filepath.Join(s.v2, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("cannot make a v2 cgroup: %w", err)
		}
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Rmdir(dir)
			return nil, fmt.Errorf("cannot open the v2 cgroup %s: %w", dir, err)
		}
		g.v2, g.fd, g.shape = dir, fd, shapeV2
		g.events, err = unix.Open(filepath.Join(dir, "cgroup.events"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			g.events = -1
		}
	}
	for c := range numCtl {
		if sh&shapeV1(c) == 0 {
			continue
		}
		dir := filepath.Join(s.v1[c], name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			fails[c] = cgAvail{CgroupSetupFailed, "cannot make a v1 " + ctlNames[c] + " cgroup: " + cgErrText(err)}
			continue
		}
		g.v1[c] = dir
		g.shape |= shapeV1(c)
	}
	g.dir = g.v2
	for _, c := range []cgCtl{ctlFreezer, ctlPids, ctlMemory} {
		if g.dir == "" {
			g.dir = g.v1[c]
		}
	}
	if g.dir == "" {
		return nil, nil
	}
	return g, nil
}

// setLimits writes limits l (only those that differ from what is written)
// and returns the status. An error means a write failed; the status then
// records the limit as missing.
func (g *cgroup) setLimits(s *cgSystem, l cgroupLimits, fails cgFailures) (CgroupStatus, error) {
	st := s.status(g, l, fails)
	var notes []string
	if st.Note != "" {
		notes = append(notes, st.Note)
	}
	var errs []error
	fail := func(lim *CgroupLimit, what string, err error) {
		*lim = CgroupLimit{Why: CgroupSetupFailed}
		notes = append(notes, what+": "+cgErrText(err))
		errs = append(errs, err)
	}

	if file, via := g.pidsFile(s); file != "" {
		if l.Pids != g.lim.Pids {
			if err := cgWrite(file, cgLimitValue(l.Pids, "max")); err != nil {
				fail(&st.Pids, "pids", err)
			} else {
				g.lim.Pids = l.Pids
			}
		}
		if l.Pids > 0 && st.Pids.Why == CgroupInForce {
			st.Pids = CgroupLimit{Max: l.Pids, Via: via}
		}
	}

	switch {
	case g.v2 != "" && s.v2Memory.ok():
		if l.MemoryBytes != g.lim.MemoryBytes {
			if err := cgWrite(filepath.Join(g.v2, "memory.max"), cgLimitValue(l.MemoryBytes, "max")); err != nil {
				fail(&st.Memory, "memory", err)
				break
			}
			g.lim.MemoryBytes = l.MemoryBytes
		}
		// memory.max bounds memory only; swap.max = 0 makes it bound
		// memory plus swap, as v1's memsw does.
		if bound := l.MemoryBytes > 0; s.v2Swap && bound != g.swapBounded {
			v := "max"
			if bound {
				v = "0"
			}
			if err := cgWrite(filepath.Join(g.v2, "memory.swap.max"), v); err != nil {
				notes = append(notes, "swap is not bounded: "+cgErrText(err))
			} else {
				g.swapBounded = bound
			}
		} else if !s.v2Swap && l.MemoryBytes > 0 {
			notes = append(notes, "swap is not bounded: v2 has no memory.swap.max")
		}
		if l.MemoryBytes > 0 {
			st.Memory = CgroupLimit{Max: l.MemoryBytes, Via: CgroupV2}
			st.SwapBounded = g.swapBounded
		}
	case g.v1[ctlMemory] != "":
		if err := g.setV1Memory(s, l.MemoryBytes); err != nil {
			fail(&st.Memory, "memory", err)
			break
		}
		if l.MemoryBytes > 0 {
			st.Memory = CgroupLimit{Max: l.MemoryBytes, Via: CgroupV1}
			st.SwapBounded = g.swapBounded
			if !g.swapBounded {
				notes = append(notes, "swap is not bounded: no writable memory.memsw.limit_in_bytes")
			}
		}
	}
	st.Note = strings.Join(notes, "; ")
	return st, errors.Join(errs...)
}

// pidsFile is the pids.max of the command's cgroup, and who enforces it.
func (g *cgroup) pidsFile(s *cgSystem) (string, CgroupVia) {
	switch {
	case g.v2 != "" && s.v2Pids.ok():
		return filepath.Join(g.v2, "pids.max"), CgroupV2
	case g.v1[ctlPids] != "":
		return filepath.Join(g.v1[ctlPids], "pids.max"), CgroupV1
	}
	return "", CgroupViaNone
}

// setV1Memory writes memory.limit_in_bytes and, when the kernel accounts
// swap, memory.memsw.limit_in_bytes (memory plus swap) to n.
func (g *cgroup) setV1Memory(s *cgSystem, n int64) error {
	if n == g.lim.MemoryBytes && (n == 0 || g.swapBounded || !s.memsw) {
		return nil
	}
	dir := g.v1[ctlMemory]
	v := cgLimitValue(n, "-1")
	mem := func() error { return cgWrite(filepath.Join(dir, "memory.limit_in_bytes"), v) }
	swap := func() {
		if !s.memsw {
			return
		}
		// A failed memsw write leaves swap unbounded but the memory limit
		// stands: recorded, not fatal.
		g.swapBounded = cgWrite(filepath.Join(dir, "memory.memsw.limit_in_bytes"), v) == nil && n > 0
	}
	// The kernel keeps limit_in_bytes <= memsw.limit_in_bytes at every
	// step: raise memsw first, lower it last.
	if n == 0 || (g.lim.MemoryBytes != 0 && n > g.lim.MemoryBytes) {
		swap()
		if err := mem(); err != nil {
			return err
		}
	} else {
		if err := mem(); err != nil {
			return err
		}
		swap()
	}
	g.lim.MemoryBytes = n
	return nil
}

// cgLimitValue renders a limit for a cgroup file; n <= 0 is none.
func cgLimitValue(n int64, none string) string {
	if n <= 0 {
		return none
	}
	return strconv.FormatInt(n, 10)
}

// status is what g (nil: no cgroup) enforces before the limits are
// written: how it kills, and why a limit asked has nowhere to go.
func (s *cgSystem) status(g *cgroup, l cgroupLimits, fails cgFailures) CgroupStatus {
	var st CgroupStatus
	var notes []string
	switch {
	case g == nil:
		st.KillWhy = s.v2Why.why
		if !fails[numCtl].ok() {
			st.KillWhy = fails[numCtl].why
		}
		if st.KillWhy == CgroupInForce {
			st.KillWhy = CgroupSetupFailed
		}
	case g.v2 != "":
		st.Kill = CgroupKillV2
	case g.v1[ctlFreezer] != "":
		st.Kill = CgroupKillV1Freezer
	default:
		st.Kill = CgroupKillV1Signal
	}
	if st.Kill == CgroupKillNone || (g != nil && g.v2 == "") {
		a := fails[numCtl]
		if a.ok() {
			a = s.v2Why
		}
		if !a.ok() {
			notes = append(notes, "no v2: "+a.note)
		}
	}
	if g != nil {
		for _, d := range []string{g.v2, g.v1[ctlPids], g.v1[ctlMemory], g.v1[ctlFreezer]} {
			if d != "" {
				st.Dirs = append(st.Dirs, d)
			}
		}
	}
	for _, c := range []struct {
		ctl   cgCtl
		asked bool
		lim   *CgroupLimit
	}{{ctlPids, l.Pids > 0, &st.Pids}, {ctlMemory, l.MemoryBytes > 0, &st.Memory}} {
		switch {
		case !c.asked:
			*c.lim = CgroupLimit{Why: CgroupNotAsked}
		case g != nil && ((g.v2 != "" && s.v2Ctl(c.ctl).ok()) || g.v1[c.ctl] != ""):
			// setLimits fills it in.
		default:
			a := s.missing(c.ctl, g != nil && g.v2 != "", fails)
			*c.lim = CgroupLimit{Why: a.why}
			notes = append(notes, ctlNames[c.ctl]+": "+a.note)
		}
	}
	st.Note = strings.Join(notes, "; ")
	return st
}

// missing is why limit c has no cgroup to go in: the most specific of the
// failures, then of v1's and v2's reasons.
func (s *cgSystem) missing(c cgCtl, haveV2 bool, fails cgFailures) cgAvail {
	if !fails[c].ok() {
		return fails[c]
	}
	v1, v2 := s.v1Why[c], s.v2Ctl(c)
	if s.v2 != "" && !haveV2 && !fails[numCtl].ok() {
		v2 = fails[numCtl]
	}
	switch {
	case v1.why != CgroupNoController && !v1.ok():
		return v1
	case v2.why != CgroupNoController && !v2.ok():
		return v2
	}
	return cgAvail{CgroupNoController, v2.note + "; " + v1.note}
}

// attach makes the child start inside the v2 cgroup (clone3
// CLONE_INTO_CGROUP), so it runs nothing outside it.
func (g *cgroup) attach(a *syscall.SysProcAttr) {
	if g == nil || g.fd < 0 {
		return
	}
	a.UseCgroupFD = true
	a.CgroupFD = g.fd
}

// join moves the process pid into each v1 directory. v1 has no
// clone-into, so the caller starts the child paused and calls join before
// letting it run: whatever it forks afterwards is born inside. A cgroup
// without v1 directories has nothing to join.
func (g *cgroup) join(pid int) error {
	if g == nil {
		return nil
	}
	// The freezer first: a kill racing with join then finds the child.
	for _, c := range []cgCtl{ctlFreezer, ctlPids, ctlMemory} {
		if d := g.v1[c]; d != "" {
			if err := cgWrite(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
				return err
			}
		}
	}
	return nil
}

// joinAll moves the process pid into every directory of g, v2 included:
// for a process started outside g (the sandbox's init, which may have
// been started before its command), before it starts anything.
func (g *cgroup) joinAll(pid int) error {
	if g == nil {
		return nil
	}
	if g.v2 != "" {
		if err := cgWrite(filepath.Join(g.v2, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return g.join(pid)
}

// treeJoin splits the join for a sandbox: init joins every directory but
// the v1 pids one (its own threads stay under the host's pids cgroup),
// and tree is that directory's cgroup.procs, open for writing, where init
// puts the target at its first exec, before its first instruction
// (sandbox.Spec.TreeCgroups), so the process limit counts the command's
// tree only. The caller closes tree. nil, nil, nil without a v1 pids directory
// (pure v2 cannot hold a process's controllers apart: init joins as
// before).
func (g *cgroup) treeJoin() (initJoin func(int) error, tree *os.File, err error) {
	if g == nil || g.v1[ctlPids] == "" {
		return nil, nil, nil
	}
	tree, err = os.OpenFile(filepath.Join(g.v1[ctlPids], "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	initJoin = func(pid int) error {
		if g.v2 != "" {
			if err := cgWrite(filepath.Join(g.v2, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
				return err
			}
		}
		for _, c := range []cgCtl{ctlFreezer, ctlMemory} {
			if d := g.v1[c]; d != "" {
				if err := cgWrite(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return initJoin, tree, nil
}

// sessionJoin is the join of a command that runs in a session's sandbox
// (Session): the sandbox's init outlives the command and joins none of
// its cgroups, so the target joins every directory itself, before its
// first instruction (sandbox.Spec.TreeCgroups): the freezer first, so a
// kill racing the join finds it. The caller closes the files.
func (g *cgroup) sessionJoin() ([]*os.File, error) {
	if g == nil {
		return nil, nil
	}
	var files []*os.File
	for _, d := range []string{g.v1[ctlFreezer], g.v2, g.v1[ctlPids], g.v1[ctlMemory]} {
		if d == "" {
			continue
		}
		f, err := os.OpenFile(filepath.Join(d, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func (g *cgroup) closeFD() {
	if g != nil && g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
	if g != nil && g.events >= 0 {
		unix.Close(g.events)
		g.events = -1
	}
}

// kill kills every process in the cgroup, setsid escapees included.
func (g *cgroup) kill() {
	if g == nil {
		return
	}
	g.killed.Store(true)
	if g.v2 != "" {
		// The v1 directories hold the same processes: one write does.
		_ = cgWrite(filepath.Join(g.v2, "cgroup.kill"), "1")
		return
	}
	cgKillMembers(g.dir, g.v1[ctlFreezer], time.Second)
}

// populated reports whether a live process is in the cgroup (zombies are
// not counted); it errs on "yes".
func (g *cgroup) populated() bool {
	if g.v2 == "" {
		pids, err := cgMembers(g.dir)
		return err != nil || len(pids) > 0
	}
	var buf [128]byte
	if g.events >= 0 {
		n, err := unix.Pread(g.events, buf[:], 0)
		if err == nil {
			return !bytes.Contains(buf[:n], []byte("populated 0"))
		}
	}
	b, err := os.ReadFile(filepath.Join(g.v2, "cgroup.events"))
	return err != nil || !bytes.Contains(b, []byte("populated 0"))
}

// killIfPopulated kills the cgroup's processes when there are any; the
// common case (the leader exited alone) costs one read.
func (g *cgroup) killIfPopulated() {
	if g == nil {
		return
	}
	if g.populated() {
		g.kill()
	} else {
		g.empty = true
	}
}

// drain waits, bounded, until no process of the cgroup is alive any more.
func (g *cgroup) drain() {
	if g == nil || g.empty {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for delay := 50 * time.Microsecond; g.populated() && time.Now().Before(deadline); delay = min(2*delay, 10*time.Millisecond) {
		g.kill()
		time.Sleep(delay)
	}
}

// remove returns the empty cgroup to the pool, or deletes all its
// directories (killing what is still inside).
func (g *cgroup) remove() {
	if g == nil {
		return
	}
	if !g.killed.Load() && (g.empty || !g.populated()) {
		g.empty = false
		if cgPool.put(g) {
			return
		}
	}
	g.destroy()
}

// destroy deletes every directory of g. One that will not go (a member
// stuck in the kernel) is retried by later commands, and by the next host
// once this one is gone.
func (g *cgroup) destroy() {
	g.closeFD()
	// v2 first: its cgroup.kill empties the v1 directories too; the
	// freezer last, so the others can still be frozen while emptied.
	for _, d := range []string{g.v2, g.v1[ctlPids], g.v1[ctlMemory], g.v1[ctlFreezer]} {
		if d == "" {
			continue
		}
		if err := removeCgroupDir(d, d == g.v2, g.v1[ctlFreezer], 2*time.Second); err != nil {
			cgLeft.Lock()
			cgLeft.dirs = append(cgLeft.dirs, d)
			cgLeft.Unlock()
		}
	}
}

// cgPool keeps a few empty per-command cgroups (with their open fds) for
// reuse: making and removing a cgroup costs more than starting /bin/true.
// A cgroup is only pooled when no process is left in it and it was never
// killed, and only one command uses it at a time. Cgroups are kept by
// shape, so a command gets one with the directories it needs; setLimits
// rewrites the limits that differ. The pool empties itself once no cgroup
// has come back to it for idleAfter: a burst of commands reuses its
// cgroups, and a host that stops running commands keeps none. A host that
// exits sooner calls Shutdown first, which empties the pool and closes it;
// one that cannot (killed, or exiting without it) leaves at most
// cgPoolMax empty directories, which the next host's first command
// removes (cleanStale).
var cgPool = cgroupPool{free: map[cgShape][]*cgroup{}, idleAfter: 5 * time.Second}

const cgPoolMax = 8

type cgroupPool struct {
	sync.Mutex
	free      map[cgShape][]*cgroup
	n         int
	idleAfter time.Duration
	idle      *time.Timer // runs drain idleAfter after the last put
	closed    bool        // Shutdown was called: nothing is pooled any more
}

func (p *cgroupPool) get(sh cgShape) *cgroup {
	p.Lock()
	defer p.Unlock()
	l := p.free[sh]
	if len(l) == 0 {
		return nil
	}
	g := l[len(l)-1]
	p.free[sh] = l[:len(l)-1]
	p.n--
	return g
}

func (p *cgroupPool) put(g *cgroup) bool {
	p.Lock()
	defer p.Unlock()
	if p.closed || p.n >= cgPoolMax {
		return false
	}
	p.free[g.shape] = append(p.free[g.shape], g)
	p.n++
	if p.idle == nil {
		p.idle = time.AfterFunc(p.idleAfter, p.drain)
	} else {
		p.idle.Reset(p.idleAfter)
	}
	return true
}

// drain removes every pooled cgroup.
func (p *cgroupPool) drain() {
	p.Lock()
	var all []*cgroup
	for sh, l := range p.free {
		all = append(all, l...)
		delete(p.free, sh)
	}
	p.n = 0
	p.Unlock()
	for _, g := range all {
		g.destroy()
	}
}

// close stops pooling: the pooled cgroups are removed now, and every
// cgroup that comes back later is removed at once (remove).
func (p *cgroupPool) close() {
	p.Lock()
	p.closed = true
	if p.idle != nil {
		p.idle.Stop()
	}
	p.Unlock()
	p.drain()
}

// shutdownCgroups is Shutdown's work: close the pool, try once more to
// remove what an earlier removal left, and, when this host made cgroups,
// remove what dead hosts left since (a host that runs for long only
// cleaned up at its first command).
func shutdownCgroups() {
	cgPool.close()
	retryLeftovers()
	if cgFound.Load() {
		cleanStale(cgSys)
	}
}

// cgLeft are directories destroy could not remove.
var cgLeft struct {
	sync.Mutex
	dirs []string
}

// retryLeftovers tries once more to remove what destroy left behind.
func retryLeftovers() {
	cgLeft.Lock()
	defer cgLeft.Unlock()
	if len(cgLeft.dirs) == 0 {
		return
	}
	cgLeft.dirs = slices.DeleteFunc(cgLeft.dirs, func(d string) bool { return rmCgroupTree(d) == nil })
}

// cleanStale removes the per-command cgroups (and probes) of hosts that
// are gone, in v2 and in every v1 controller, by the name each was given
// (cgHost):
//
//   - a directory whose host is proven dead (judgeHost: cgDead) is
//     removed; processes still inside are killed first. Only a host puts
//     processes in its own directories (clone-into or join of the command
//     it starts), and their forks are born inside, so they are that host's
//     commands, left running when it died: what it would have killed on
//     release. Members this pid namespace cannot see (listed as 0, or not
//     at all) are no proof: such a directory is left alone;
//   - a directory named the old way (auditguard-<pid>-<seq>, no start time
//     nor namespace) is removed only when empty and no process has that
//     pid here; what is inside is never killed, as the pid may name a
//     process of another pid namespace;
//   - every other directory is left alone: this host's own, a live
//     host's, one made in another pid namespace, one this host cannot
//     judge, and any name that is not auditguard's.
func cleanStale(s *cgSystem) {
	self := cgSelf()
	freezer := s.v1[ctlFreezer]
	for _, parent := range []string{s.v2, s.v1[ctlPids], s.v1[ctlMemory], freezer} {
		if parent == "" {
			continue
		}
		dirs, _ := filepath.Glob(filepath.Join(parent, "auditguard-*"))
		for _, d := range dirs {
			h, ok := cgOwner(filepath.Base(d))
			if !ok {
				continue
			}
			v := judgeHost(h, self)
			if v == cgKeep {
				continue
			}
			if rmCgroupTree(d) == nil || v != cgDead {
				continue // empty (a pooled cgroup, or a probe) and now gone; or old-style and busy
			}
			if pids, err := cgMembers(d); err != nil || len(pids) == 0 || cgHidden(d) {
				// Busy with processes this pid namespace cannot see:
				// not provably the dead host's.
				continue
			}
			twin := ""
			if freezer != "" {
				if t := filepath.Join(freezer, filepath.Base(d)); cgExists(t) {
					twin = t
				}
			}
			_ = removeCgroupDir(d, parent == s.v2, twin, 2*time.Second)
		}
	}
}

// cgHidden reports whether cgroup dir, or a cgroup inside it, holds a
// process this pid namespace cannot see (cgroup.procs lists it as 0), or
// cannot be read.
func cgHidden(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil || slices.Contains(strings.Fields(string(b)), "0") {
		return true
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() && cgHidden(filepath.Join(dir, e.Name())) {
			return true
		}
	}
	return false
}

// cgHost is the host that made a cgroup directory, as its name records
// it: auditguard-<pid>-<start>-<pidns>-<seq>, or the old
// auditguard-<pid>-<seq> (legacy: start and pidns unknown). A pid alone
// does not name a host: once the host is gone its pid is handed to
// another process, and a pid means something else in another pid
// namespace. pid and start together name one process of the namespace
// pidns for as long as the machine is up (cgroups do not outlive a boot).
type cgHost struct {
	pid    int
	start  uint64 // clock ticks since boot (/proc/PID/stat field 22)
	pidns  uint64 // inode of the pid namespace pid belongs to; 0: unknown
	legacy bool
}

// cgSelfHost is this process as its cgroup names record it, with the
// name prefix of its per-command directories.
type cgSelfHost struct {
	cgHost
	prefix string // "auditguard-<pid>-<start>-<pidns>-"
}

func (h cgSelfHost) probeName() string {
	return "auditguard-probe-" + strings.TrimSuffix(strings.TrimPrefix(h.prefix, "auditguard-"), "-")
}

// cgSelf is this process's identity, read once. When /proc does not show
// this process's own pid namespace (or cannot be read), pidns is 0: its
// directories are then never judged by another host, and it judges none
// (a leak, never a wrong removal).
var cgSelf = sync.OnceValue(func() cgSelfHost {
	h := cgHost{pid: os.Getpid()}
	start, _, err := procStart(h.pid)
	if err == nil && procShowsOwnPidNS() {
		h.start = start
		h.pidns = nsInode("/proc/self/ns/pid")
	}
	return cgSelfHost{h, fmt.Sprintf("auditguard-%d-%d-%d-", h.pid, h.start, h.pidns)}
})

// procShowsOwnPidNS reports whether /proc is the proc of this process's
// pid namespace, so that the pids it shows are the pids this process and
// its peers use: /proc/self/status then lists one NSpid.
func procShowsOwnPidNS() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f, ok := strings.CutPrefix(line, "NSpid:"); ok {
			ids := strings.Fields(f)
			return len(ids) == 1 && ids[0] == strconv.Itoa(os.Getpid())
		}
	}
	// Kernels before 4.1 have no NSpid: trust /proc/self.
	l, err := os.Readlink("/proc/self")
	return err == nil && l == strconv.Itoa(os.Getpid())
}

// nsInode is the inode of a namespace file (/proc/PID/ns/...), 0 if it
// cannot be read.
func nsInode(path string) uint64 {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return 0
	}
	return st.Ino
}

// procStart reads pid's start time (field 22 of /proc/PID/stat, clock
// ticks since boot as this process's time namespace sees it) and whether
// pid has exited (a zombie, or dead, runs nothing any more). The error
// wraps fs.ErrNotExist when no process has that pid.
func procStart(pid int) (start uint64, exited bool, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false, err
	}
	// "pid (comm) state ppid ...": comm may hold anything, ')' included.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, false, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(f))
	}
	start, err = strconv.ParseUint(f[19], 10, 64) // field 22; f[0] is field 3
	if err != nil {
		return 0, false, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return start, f[0] == "Z" || f[0] == "X", nil
}

// cgVerdict is what cleanStale may do with a directory of host h.
type cgVerdict uint8

const (
	cgKeep       cgVerdict = iota // a live host's, this host's, or not judged: left alone
	cgGoneLegacy                  // old-style name, no process has its pid: removed if empty
	cgDead                        // the host is proven gone: its commands killed, then removed
)

// judgeHost says whether host h (not self) is gone:
//
//   - h was in another pid namespace than self (or either is unknown):
//     its pid means nothing here, cgKeep;
//   - no process has h.pid, or it has exited (a zombie cannot be a
//     running host, and its pid is not reused before it is reaped): cgDead;
//   - the process with h.pid started at h.start: it is h, cgKeep;
//   - it started at another time: the pid was reused, h is gone, cgDead.
//     Start times read in different time namespaces (with different
//     boottime offsets) do not compare, so this is only concluded when
//     that process shares self's time namespace: if it is h, h recorded its
//     start time in that same namespace; if not, cgKeep.
func judgeHost(h cgHost, self cgSelfHost) cgVerdict {
	if h.legacy {
		if h.pid != self.pid && unix.Kill(h.pid, 0) == unix.ESRCH {
			return cgGoneLegacy
		}
		return cgKeep
	}
	if self.pidns == 0 || h.pidns != self.pidns || h == self.cgHost {
		return cgKeep
	}
	start, exited, err := procStart(h.pid)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH):
		return cgDead
	case err != nil:
		return cgKeep
	case exited:
		return cgDead
	case start == h.start:
		return cgKeep
	}
	pidTime, err1 := os.Readlink("/proc/" + strconv.Itoa(h.pid) + "/ns/time")
	selfTime, err2 := os.Readlink("/proc/self/ns/time")
	if pidTime != selfTime || (err1 == nil) != (err2 == nil) {
		return cgKeep
	}
	return cgDead
}

// cgOwner reads the host from a directory name: auditguard-<pid>-<start>-
// <pidns>-<seq> or auditguard-probe-<pid>-<start>-<pidns>, and the old
// auditguard-<pid>-<seq> or auditguard-probe-<pid> (legacy). Anything else
// is not auditguard's.
func cgOwner(name string) (cgHost, bool) {
	rest, ok := strings.CutPrefix(name, "auditguard-")
	if !ok {
		return cgHost{}, false
	}
	probe := false
	if p, ok := strings.CutPrefix(rest, "probe-"); ok {
		rest, probe = p, true
	}
	f := strings.Split(rest, "-")
	n := make([]uint64, len(f))
	for i, v := range f {
		x, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return cgHost{}, false
		}
		n[i] = x
	}
	if probe {
		n = append(n, 0) // no sequence number
	}
	var h cgHost
	switch len(n) {
	case 2:
		h = cgHost{pid: int(min(n[0], 1<<31)), legacy: true}
	case 4:
		h = cgHost{pid: int(min(n[0], 1<<31)), start: n[1], pidns: n[2]}
		if h.pidns == 0 {
			return cgHost{}, false
		}
	default:
		return cgHost{}, false
	}
	return h, h.pid > 0 && h.pid < 1<<31
}

// removeCgroupDir removes dir and any cgroups made inside it, killing its
// members until it goes or within has passed: through cgroup.kill for a
// v2 directory, else by signals, freezing them first with freezer (a v1
// freezer directory holding the same processes, or "").
func removeCgroupDir(dir string, v2 bool, freezer string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 10*time.Millisecond) {
		err := rmCgroupTree(dir)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		if v2 && cgWrite(filepath.Join(dir, "cgroup.kill"), "1") == nil {
			time.Sleep(delay)
			continue
		}
		cgKillMembers(dir, freezer, time.Until(deadline))
		time.Sleep(delay)
	}
}

// rmCgroupTree removes dir, after the cgroups made inside it. cgroupfs
// refuses rmdir while a process is in the cgroup (EBUSY), but its files
// need no removal.
func rmCgroupTree(dir string) error {
	err := unix.Rmdir(dir)
	if err == nil || err == unix.ENOENT {
		return nil
	}
	ents, rerr := os.ReadDir(dir)
	if rerr != nil {
		return &fs.PathError{Op: "rmdir", Path: dir, Err: err}
	}
	sub := false
	for _, e := range ents {
		if e.IsDir() {
			sub = true
			if err := rmCgroupTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if sub {
		if err = unix.Rmdir(dir); err == nil || err == unix.ENOENT {
			return nil
		}
	}
	return &fs.PathError{Op: "rmdir", Path: dir, Err: err}
}

// cgKillMembers SIGKILLs every process in the v1 cgroup dir (and the cgroups
// inside it) until none is left or within has passed. With a freezer
// directory the members are frozen while they are listed and signalled,
// so none can fork a process the list misses; frozen processes die of
// the SIGKILL when thawed.
func cgKillMembers(dir, freezer string, within time.Duration) {
	deadline := time.Now().Add(within)
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 10*time.Millisecond) {
		if freezer != "" {
			cgFreeze(freezer, deadline)
		}
		pids, _ := cgMembers(dir)
		for _, p := range pids {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		if freezer != "" {
			_ = cgWrite(filepath.Join(freezer, "freezer.state"), "THAWED")
		}
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(delay) // let the killed exit before listing again
	}
}

// cgFreeze freezes a v1 freezer cgroup and waits, bounded, until it is; a
// member stuck in the kernel can keep it FREEZING.
func cgFreeze(dir string, deadline time.Time) {
	state := filepath.Join(dir, "freezer.state")
	if cgWrite(state, "FROZEN") != nil {
		return
	}
	if d := time.Now().Add(100 * time.Millisecond); d.Before(deadline) {
		deadline = d
	}
	for delay := 20 * time.Microsecond; strings.TrimSpace(cgRead(state)) != "FROZEN" && time.Now().Before(deadline); delay = min(2*delay, time.Millisecond) {
		time.Sleep(delay)
	}
}

// cgMembers lists the processes in cgroup dir and the cgroups inside it. A
// directory that is gone has none.
func cgMembers(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		if p, err := strconv.Atoi(f); err == nil && p > 0 {
			pids = append(pids, p)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return pids, nil
	}
	for _, e := range ents {
		if e.IsDir() {
			sub, err := cgMembers(filepath.Join(dir, e.Name()))
			if err != nil {
				return pids, err
			}
			pids = append(pids, sub...)
		}
	}
	return pids, nil
}

// cgWrite writes a value to an existing cgroup file, as one write (cgroupfs
// takes each write as one command). It never creates the file: a missing
// one is a missing feature.
func cgWrite(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func cgRead(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func cgExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// cgErrText is an error without its *PathError wrapping when the note
// already names the path.
func cgErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
