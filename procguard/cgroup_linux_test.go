package procguard

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests make real cgroups and run real children in them. Each child
// has a 10 s context, each poll loop a deadline, and each test kills what
// it started (by pid) and removes what it made in its cleanups. A host
// without a controller skips, naming it.

// cgTestSystem is this host's cgroup layout, or a skip.
func cgTestSystem(t *testing.T) *cgSystem {
	t.Helper()
	cgOnce.Do(findCgroupParent)
	if cgParent == "" {
		t.Skipf("no usable cgroups: %s", cgWhy)
	}
	return cgSys
}

// cgLayouts runs a test on the host's layout as found, again as if it had
// no v2 (pure v1: freezer-based kill, v1 directories for everything), and
// as if it had no freezer either (kill by signals only).
var cgLayouts = []struct {
	name string
	use  func(t *testing.T) *cgSystem
}{
	{"as found", cgTestSystem},
	{"v1 only", func(t *testing.T) *cgSystem { return cgWithout(t, false) }},
	{"v1 without freezer", func(t *testing.T) *cgSystem { return cgWithout(t, true) }},
}

// cgWithout makes newCgroup see the host's layout without v2 (and without
// the v1 freezer) until the test ends.
func cgWithout(t *testing.T, freezer bool) *cgSystem {
	s := cgTestSystem(t)
	v := *s
	off := cgAvail{CgroupDisabled, "turned off by the test"}
	v.v2, v.v2Why, v.v2Pids, v.v2Memory, v.v2Swap = "", off, off, off, false
	if freezer {
		v.v1[ctlFreezer], v.v1Why[ctlFreezer] = "", off
	}
	parent := v.v1[ctlFreezer]
	if parent == "" {
		parent = v.v1[ctlPids]
	}
	if parent == "" {
		t.Skipf("no v1 freezer or pids controller: %s; %s", s.v1Why[ctlFreezer].note, s.v1Why[ctlPids].note)
	}
	oldSys, oldParent := cgSys, cgParent
	cgSys, cgParent = &v, parent
	t.Cleanup(func() { cgSys, cgParent = oldSys, oldParent })
	return &v
}

// newTestCgroup makes a cgroup whose directories the test's cleanup
// removes, whatever happens, and leaves no pooled cgroup behind.
func newTestCgroup(t *testing.T, l cgroupLimits) (*cgroup, CgroupStatus) {
	t.Helper()
	g, st := newCgroup(l)
	t.Logf("status: %v; dirs %v; note: %s", st, st.Dirs, st.Note)
	t.Cleanup(func() {
		if g != nil {
			g.kill()
			g.destroy()
		}
		emptyCgroupPool()
		for _, d := range st.Dirs {
			if cgExists(d) {
				t.Errorf("%s left behind", d)
			}
		}
	})
	return g, st
}

func emptyCgroupPool() { cgPool.drain() }

// TestCgroupPoolDrainsWhenIdle: the cgroups a command gave back to the
// pool are removed once no other came back for the pool's idle time, so a
// host that stops running commands leaves no cgroup behind.
func TestCgroupPoolDrainsWhenIdle(t *testing.T) {
	cgTestSystem(t)
	emptyCgroupPool()
	cgPool.Lock()
	old := cgPool.idleAfter
	cgPool.idleAfter = 200 * time.Millisecond
	if cgPool.idle != nil {
		cgPool.idle.Reset(cgPool.idleAfter)
	}
	cgPool.Unlock()
	t.Cleanup(func() {
		cgPool.Lock()
		cgPool.idleAfter = old
		cgPool.Unlock()
	})
	// Not newTestCgroup: once pooled, g belongs to the pool's timer, and
	// the cleanup must not touch it; it removes what is left by name.
	g, st := newCgroup(cgroupLimits{Pids: 10})
	t.Cleanup(func() {
		emptyCgroupPool()
		for _, d := range st.Dirs {
			if cgExists(d) {
				rmCgroupTree(d)
				t.Errorf("%s left behind", d)
			}
		}
	})
	if g == nil {
		t.Skipf("no cgroup here: %v (%s)", st, st.Note)
	}
	g.remove() // empty, never killed: pooled
	if cgPool.get(g.shape) != g {
		t.Fatal("the empty cgroup was not pooled")
	}
	g.remove() // back again: the idle clock starts now
	for _, d := range st.Dirs {
		if !cgExists(d) {
			t.Fatalf("%s removed while pooled", d)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, d := range st.Dirs {
		for cgExists(d) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if cgExists(d) {
			t.Fatalf("%s still there %v after the pool went idle", d, 10*time.Second)
		}
	}
	cgPool.Lock()
	n := cgPool.n
	cgPool.Unlock()
	if n != 0 {
		t.Fatalf("%d cgroups still pooled", n)
	}
}

// lockedBuffer is a bytes.Buffer a child writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

type cgChild struct {
	cmd         *exec.Cmd
	stdout, err lockedBuffer
	done        chan error
}

// startIn runs script with sh inside g the way a caller must: cloned into
// the v2 directory, started paused (it blocks reading stdin), joined to the
// v1 directories, then let go.
func startIn(t *testing.T, g *cgroup, script string) *cgChild {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c := &cgChild{done: make(chan error, 1)}
	c.cmd = exec.CommandContext(ctx, "sh", "-c", "read -r _ || exit 97\n"+script)
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g.attach(c.cmd.SysProcAttr)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.err
	c.cmd.WaitDelay = time.Second
	stdin, err := c.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.cmd.Process.Pid
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		_ = unix.Kill(-pid, unix.SIGKILL)
		_ = unix.Kill(pid, unix.SIGKILL)
		c.wait(t)
	})
	if err := g.join(pid); err != nil {
		t.Fatalf("join: %v", err)
	}
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	return c
}

// wait waits for the leader (its context bounds it).
func (c *cgChild) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err // later calls see it too
		return err
	case <-time.After(15 * time.Second):
		t.Fatal("the child outlived its 10 s context")
		return nil
	}
}

// cgTestAlive reports whether pid exists and is not a zombie.
func cgTestAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z' && b[i+2] != 'X'
}

// waitDead polls, bounded, until pid is gone or a zombie.
func waitDead(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for cgTestAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still alive 5 s after the kill", what, pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func killPidOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL) })
}

func TestCgroupPidsLimit(t *testing.T) {
	for _, lay := range cgLayouts {
		t.Run(lay.name, func(t *testing.T) {
			s := lay.use(t)
			g, st := newTestCgroup(t, cgroupLimits{Pids: 10})
			if st.Pids.Max != 10 {
				t.Skipf("no pids limit on this host: %v (%s)", st, st.Note)
			}
			file, via := g.pidsFile(s)
			if via != st.Pids.Via {
				t.Errorf("status says pids via %v, the cgroup has it via %v", st.Pids.Via, via)
			}
			if b := cgRead(file); strings.TrimSpace(b) != "10" {
				t.Fatalf("%s = %q", file, b)
			}
			// dash gives up at the first refused fork, bash goes on and
			// waits: either way the child reports a fork failure.
			c := startIn(t, g, `for i in $(seq 60); do sleep 5 & done; wait`)

			// Count the members until the failure shows, and a little
			// after: never more than 10.
			most := 0
			count := func() {
				pids, err := cgMembers(g.dir)
				if err != nil {
					t.Fatal(err)
				}
				most = max(most, len(pids))
			}
			deadline := time.Now().Add(8 * time.Second)
			for !strings.Contains(strings.ToLower(c.err.String()), "fork") {
				if time.Now().After(deadline) {
					t.Fatalf("no fork failure in 8 s; stderr %q", c.err.String())
				}
				count()
				time.Sleep(time.Millisecond)
			}
			for range 50 {
				count()
				time.Sleep(time.Millisecond)
			}
			if most > 10 {
				t.Errorf("%d processes in the cgroup, limit 10", most)
			}
			dir := filepath.Dir(file)
			if peak := strings.TrimSpace(cgRead(filepath.Join(dir, "pids.peak"))); peak != "" {
				if n, err := strconv.Atoi(peak); err != nil || n > 10 {
					t.Errorf("pids.peak = %q, limit 10", peak)
				}
			}
			events := cgRead(filepath.Join(dir, "pids.events"))
			if !strings.Contains(events, "max ") || strings.Contains(events, "max 0") {
				t.Errorf("pids.events %q: no fork refused", events)
			}
			g.kill()
			c.wait(t)
			g.drain()
			if g.populated() {
				t.Fatal("populated after kill and drain")
			}
			g.remove()
			for _, d := range st.Dirs {
				if cgExists(d) {
					t.Errorf("%s not removed", d)
				}
			}
			t.Logf("at most %d members seen; stderr %d bytes", most, len(c.err.String()))
		})
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	// 200 MB in one string: perl when installed (fast), else sh.
	script := `x=$(head -c 200000000 /dev/zero | tr "\0" a); echo ${#x}`
	if p, err := exec.LookPath("perl"); err == nil {
		script = p + ` -e '$x = "a" x 200_000_000; print length($x), "\n"'`
	}
	for _, lay := range cgLayouts {
		t.Run(lay.name, func(t *testing.T) {
			lay.use(t)
			g, st := newTestCgroup(t, cgroupLimits{MemoryBytes: 32 << 20})
			if st.Memory.Max != 32<<20 {
				t.Skipf("no memory limit on this host: %v (%s)", st, st.Note)
			}
			c := startIn(t, g, script)
			err := c.wait(t)
			if err == nil || strings.Contains(c.stdout.String(), "200000000") {
				t.Fatalf("allocated 200 MB under a 32 MiB limit: err %v, stdout %q", err, c.stdout.String())
			}
			t.Logf("child: %v; stderr %q", err, c.err.String())
			for _, f := range []string{"memory.max_usage_in_bytes", "memory.peak", "memory.events", "memory.oom_control"} {
				for _, d := range st.Dirs {
					if b := cgRead(filepath.Join(d, f)); b != "" {
						t.Logf("%s: %s", filepath.Join(d, f), strings.Join(strings.Fields(b), " "))
					}
				}
			}
			g.killIfPopulated()
			g.drain()
			g.remove()
		})
	}
}

func TestCgroupKillCatchesSetsid(t *testing.T) {
	for _, lay := range cgLayouts {
		t.Run(lay.name, func(t *testing.T) {
			lay.use(t)
			g, st := newTestCgroup(t, cgroupLimits{})
			if g == nil {
				t.Skipf("no cgroup to kill with: %v (%s)", st, st.Note)
			}
			c := startIn(t, g, `setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $!`)
			if err := c.wait(t); err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(c.stdout.String()))
			if err != nil {
				t.Fatalf("escapee pid: %q", c.stdout.String())
			}
			killPidOnCleanup(t, pid)
			// The leader may exit before its child ran setsid.
			deadline := time.Now().Add(5 * time.Second)
			for sid, _ := unix.Getsid(pid); sid != pid || !cgTestAlive(pid); sid, _ = unix.Getsid(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("pid %d: session %d, alive %v: not an escapee", pid, sid, cgTestAlive(pid))
				}
				time.Sleep(time.Millisecond)
			}
			if !g.populated() {
				t.Fatal("the escapee is not seen in the cgroup")
			}
			g.killIfPopulated()
			waitDead(t, pid, "the setsid escapee")
			g.drain()
			if g.populated() {
				t.Fatal("populated after kill and drain")
			}
			g.remove()
			t.Logf("kill=%v caught the escapee", st.Kill)
		})
	}
}

// deadPid is a pid no process has, high enough not to be handed out
// during the test.
func deadPid(t *testing.T) int {
	t.Helper()
	pidMax, err := strconv.Atoi(strings.TrimSpace(cgRead("/proc/sys/kernel/pid_max")))
	if err != nil {
		pidMax = 32768
	}
	for p := pidMax - 1; p > pidMax/2; p-- {
		if unix.Kill(p, 0) == unix.ESRCH {
			return p
		}
	}
	t.Skip("no free pid")
	return 0
}

// selfPidNS is this test's pid namespace as its cgroup names record it,
// or a skip.
func selfPidNS(t *testing.T) uint64 {
	t.Helper()
	ns := cgSelf().pidns
	if ns == 0 {
		t.Skip("/proc does not show this process's pid namespace: cgroup names carry none, and none is judged")
	}
	return ns
}

func staleName(pid int, start, pidns uint64) string {
	return fmt.Sprintf("auditguard-%d-%d-%d-1", pid, start, pidns)
}

func TestCgroupStaleCleanup(t *testing.T) {
	s := cgTestSystem(t)
	name := staleName(deadPid(t), 1, selfPidNS(t))
	var dirs []string
	for _, parent := range []string{s.v2, s.v1[ctlPids], s.v1[ctlMemory], s.v1[ctlFreezer]} {
		if parent == "" {
			continue
		}
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
		t.Cleanup(func() { _ = removeCgroupDir(d, parent == s.v2, "", time.Second) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sleeper := exec.CommandContext(ctx, "sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	killPidOnCleanup(t, sleeper.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- sleeper.Wait() }()
	// A dead host's child, still inside its cgroups.
	for _, d := range dirs {
		if err := cgWrite(filepath.Join(d, "cgroup.procs"), strconv.Itoa(sleeper.Process.Pid)); err != nil {
			t.Fatal(err)
		}
	}

	cleanStale(s)

	select {
	case err := <-done:
		if ws, ok := sleeper.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Errorf("the stale child ended with %v, want SIGKILL", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stale child survived the cleanup")
	}
	for _, d := range dirs {
		if cgExists(d) {
			t.Errorf("stale %s not removed", d)
		}
	}
	t.Logf("removed %v", dirs)
}

func TestCgroupJoinV1(t *testing.T) {
	if err := (*cgroup)(nil).join(1); err != nil {
		t.Errorf("join on no cgroup: %v", err)
	}
	for _, lay := range cgLayouts {
		t.Run(lay.name, func(t *testing.T) {
			lay.use(t)
			g, st := newTestCgroup(t, cgroupLimits{Pids: 64, MemoryBytes: 64 << 20})
			var v1 []string
			for _, d := range g.v1 {
				if d != "" {
					v1 = append(v1, d)
				}
			}
			if len(v1) == 0 {
				t.Skipf("no v1 directories on this host: %v (%s)", st, st.Note)
			}
			c := startIn(t, g, `sleep 30`)
			pid := c.cmd.Process.Pid
			self := cgRead("/proc/" + strconv.Itoa(pid) + "/cgroup")
			for _, d := range v1 {
				procs := strings.Fields(cgRead(filepath.Join(d, "cgroup.procs")))
				if !slices.Contains(procs, strconv.Itoa(pid)) {
					t.Errorf("pid %d not in %s (%v)", pid, d, procs)
				}
				if !strings.Contains(self, "/"+filepath.Base(d)+"\n") {
					t.Errorf("/proc/%d/cgroup does not name %s:\n%s", pid, filepath.Base(d), self)
				}
			}
			if st.Pids.Via == CgroupV1 && !slices.Contains(strings.Fields(cgRead(filepath.Join(g.v1[ctlPids], "cgroup.procs"))), strconv.Itoa(pid)) {
				t.Error("the pids limit's directory does not hold the child")
			}
			g.kill()
			c.wait(t)
			g.drain()
			g.remove()
		})
	}
}

// TestCgroupPoolRewritesLimits: a pooled cgroup handed to a command with
// other limits carries that command's limits.
func TestCgroupPoolRewritesLimits(t *testing.T) {
	s := cgTestSystem(t)
	emptyCgroupPool()
	g1, st1 := newTestCgroup(t, cgroupLimits{Pids: 10, MemoryBytes: 64 << 20})
	if g1 == nil || st1.Pids.Max == 0 || st1.Memory.Max == 0 {
		t.Skipf("no pids and memory limits on this host: %v (%s)", st1, st1.Note)
	}
	g1.remove() // empty, never killed: pooled
	g2, st2 := newTestCgroup(t, cgroupLimits{Pids: 20, MemoryBytes: 32 << 20})
	if g2 != g1 {
		t.Fatal("the empty cgroup was not reused")
	}
	if st2.Pids.Max != 20 || st2.Memory.Max != 32<<20 {
		t.Errorf("status %v", st2)
	}
	file, _ := g2.pidsFile(s)
	if b := strings.TrimSpace(cgRead(file)); b != "20" {
		t.Errorf("%s = %q after reuse, want 20", file, b)
	}
	mem := filepath.Join(g2.v2, "memory.max")
	if g2.v1[ctlMemory] != "" {
		mem = filepath.Join(g2.v1[ctlMemory], "memory.limit_in_bytes")
	}
	if b := strings.TrimSpace(cgRead(mem)); b != strconv.Itoa(32<<20) {
		t.Errorf("%s = %q after reuse, want %d", mem, b, 32<<20)
	}
}

func TestCgroupStatusString(t *testing.T) {
	tests := []struct {
		st   CgroupStatus
		want string
	}{
		{CgroupStatus{Kill: CgroupKillV2, Pids: CgroupLimit{Max: 512, Via: CgroupV1}, Memory: CgroupLimit{Max: 256 << 20, Via: CgroupV1}, SwapBounded: true},
			"pids=512 (v1) memory=256MiB (v1) kill=v2"},
		{CgroupStatus{Kill: CgroupKillV1Freezer, Pids: CgroupLimit{Max: 64, Via: CgroupV1}, Memory: CgroupLimit{Max: 1 << 30, Via: CgroupV1}},
			"pids=64 (v1) memory=1GiB (v1, swap unbounded) kill=v1-freezer"},
		{CgroupStatus{Kill: CgroupKillV2, Pids: CgroupLimit{Why: CgroupNotDelegated}, Memory: CgroupLimit{Why: CgroupNotAsked}},
			"pids=none (controller not delegated) memory=off kill=v2"},
		{missingStatus(cgroupLimits{Pids: 512}, CgroupNoKillFile, ""),
			"pids=none (no cgroup.kill) memory=off kill=none (no cgroup.kill)"},
		{CgroupStatus{Kill: CgroupKillV2, Pids: CgroupLimit{Max: 5, Via: CgroupV2}, Memory: CgroupLimit{Max: 1000, Via: CgroupV2}, SwapBounded: true},
			"pids=5 (v2) memory=1000B (v2) kill=v2"},
	}
	for _, tt := range tests {
		if got := tt.st.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestCgroupOwner(t *testing.T) {
	const ns = 4026531836
	for name, want := range map[string]cgHost{ // zero: not auditguard's
		"auditguard-123-4":     {pid: 123, legacy: true},
		"auditguard-probe-77":  {pid: 77, legacy: true},
		"auditguard-x-1":       {},
		"other-123-4":          {},
		"auditguard-123":       {},
		"auditguard-probe-":    {},
		"auditguard--5":        {},
		"auditguard-0-1":       {},
		"auditguard-4194303-9": {pid: 4194303, legacy: true},

		"auditguard-123-456-4026531836-7":     {pid: 123, start: 456, pidns: ns},
		"auditguard-probe-123-456-4026531836": {pid: 123, start: 456, pidns: ns},
		"auditguard-123-0-4026531836-1":       {pid: 123, start: 0, pidns: ns},
		"auditguard-123-456-0-7":              {}, // no namespace: never judged
		"auditguard-123-456-4026531836":       {},
		"auditguard-probe-123-456":            {},
		"auditguard-probe-123-456-1-2":        {},
		"auditguard-123-456-789-1-2":          {},
		"auditguard-123--4026531836-7":        {},
		"auditguard-123-+4-4026531836-7":      {},
		"auditguard-9999999999-1":             {},
		"auditguard-0-456-4026531836-7":       {},
	} {
		got, ok := cgOwner(name)
		if ok != (want != cgHost{}) || ok && got != want {
			t.Errorf("cgOwner(%q) = %+v, %v; want %+v", name, got, ok, want)
		}
	}
	self := cgSelf()
	for _, name := range []string{self.prefix + "12", self.probeName()} {
		if got, ok := cgOwner(name); self.pidns != 0 && (!ok || got != self.cgHost) {
			t.Errorf("cgOwner(%q) = %+v, %v; want this host %+v", name, got, ok, self.cgHost)
		}
	}
}

func TestCgroupMountPath(t *testing.T) {
	tests := []struct {
		m        cgMount
		rel      string
		want     string
		wantedOK bool
	}{
		{cgMount{dir: "/sys/fs/cgroup/memory", root: "/"}, "/process_api/x", "/sys/fs/cgroup/memory/process_api/x", true},
		{cgMount{dir: "/sys/fs/cgroup/unified", root: "/"}, "/", "/sys/fs/cgroup/unified", true},
		// A container's mount shows only its own subtree.
		{cgMount{dir: "/sys/fs/cgroup", root: "/docker/abc"}, "/docker/abc", "/sys/fs/cgroup", true},
		{cgMount{dir: "/sys/fs/cgroup", root: "/docker/abc"}, "/docker/abc/sub", "/sys/fs/cgroup/sub", true},
		{cgMount{dir: "/sys/fs/cgroup", root: "/docker/abc"}, "/docker/abcd", "", false},
		{cgMount{dir: "/sys/fs/cgroup", root: "/docker/abc"}, "/", "", false},
	}
	for _, tt := range tests {
		got, ok := tt.m.path(tt.rel)
		if got != tt.want || ok != tt.wantedOK {
			t.Errorf("%+v.path(%q) = %q, %v; want %q, %v", tt.m, tt.rel, got, ok, tt.want, tt.wantedOK)
		}
	}
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/tail\04`: `/tail\04`, `/x\134y`: `/x\y`} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCgroupPlan: which directories a command gets, and why a limit is
// missing, on each layout (made up: no cgroup is touched).
func TestCgroupPlan(t *testing.T) {
	ok := cgAvail{}
	noCtl := cgAvail{CgroupNoController, "absent"}
	busy := cgAvail{CgroupNotDelegated, "EBUSY"}
	pureV2 := &cgSystem{v2: "/v2", v2Pids: ok, v2Memory: ok, v2Swap: true, v1Why: [numCtl]cgAvail{noCtl, noCtl, noCtl}}
	hybrid := &cgSystem{v2: "/v2", v2Pids: noCtl, v2Memory: noCtl, v1: [numCtl]string{"/p", "/m", "/f"}}
	pureV1 := &cgSystem{v2Why: cgAvail{CgroupNoHierarchy, "none"}, v2Pids: noCtl, v2Memory: noCtl, v1: [numCtl]string{"/p", "/m", "/f"}}
	undelegated := &cgSystem{v2: "/v2", v2Pids: busy, v2Memory: busy, v1Why: [numCtl]cgAvail{noCtl, noCtl, noCtl}}
	both := cgroupLimits{Pids: 512, MemoryBytes: 1 << 30}
	tests := []struct {
		name    string
		s       *cgSystem
		l       cgroupLimits
		shape   cgShape
		kill    CgroupKill
		pidsWhy CgroupReason // for a limit asked but missing
	}{
		{"pure v2", pureV2, both, shapeV2, CgroupKillV2, CgroupInForce},
		{"pure v2, no limits", pureV2, cgroupLimits{}, shapeV2, CgroupKillV2, CgroupNotAsked},
		{"hybrid", hybrid, both, shapeV2 | shapeV1Pids | shapeV1Memory, CgroupKillV2, CgroupInForce},
		{"hybrid, pids only", hybrid, cgroupLimits{Pids: 10}, shapeV2 | shapeV1Pids, CgroupKillV2, CgroupInForce},
		{"hybrid, no limits", hybrid, cgroupLimits{}, shapeV2, CgroupKillV2, CgroupNotAsked},
		{"pure v1", pureV1, both, shapeV1Pids | shapeV1Memory | shapeV1Freezer, CgroupKillV1Freezer, CgroupInForce},
		{"pure v1, no limits", pureV1, cgroupLimits{}, shapeV1Freezer, CgroupKillV1Freezer, CgroupNotAsked},
		{"v2 controllers not delegated", undelegated, both, shapeV2, CgroupKillV2, CgroupNotDelegated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sh := tt.s.shape(tt.l, tt.s.v2 != "")
			if sh != tt.shape {
				t.Errorf("shape %04b, want %04b", sh, tt.shape)
			}
			g := &cgroup{fd: -1, events: -1, shape: sh}
			if sh&shapeV2 != 0 {
				g.v2 = "/v2/x"
			}
			for c := range numCtl {
				if sh&shapeV1(c) != 0 {
					g.v1[c] = tt.s.v1[c] + "/x"
				}
			}
			st := tt.s.status(g, tt.l, cgFailures{})
			if st.Kill != tt.kill || st.Pids.Why != tt.pidsWhy {
				t.Errorf("kill %v, pids why %v; want %v, %v (note %q)", st.Kill, st.Pids.Why, tt.kill, tt.pidsWhy, st.Note)
			}
		})
	}
}

// TestCgroupLimitFiles: the values written for v2 (pure v2 cannot be had
// on every test host, so the files are plain ones here) and for v1's memsw
// ordering.
func TestCgroupLimitFiles(t *testing.T) {
	parent := t.TempDir()
	g := &cgroup{v2: filepath.Join(parent, "x"), fd: -1, events: -1, shape: shapeV2}
	v1mem := filepath.Join(parent, "m")
	for _, d := range []string{g.v2, v1mem} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"pids.max", "memory.max", "memory.swap.max"} {
		if err := os.WriteFile(filepath.Join(g.v2, f), []byte("max\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &cgSystem{v2: parent, v2Swap: true}
	files := func(dir string, names ...string) string {
		var out []string
		for _, n := range names {
			out = append(out, strings.TrimSpace(cgRead(filepath.Join(dir, n))))
		}
		return strings.Join(out, " ")
	}
	for _, step := range []struct {
		l    cgroupLimits
		want string
		str  string
	}{
		{cgroupLimits{Pids: 100, MemoryBytes: 64 << 20}, "100 67108864 0", "pids=100 (v2) memory=64MiB (v2) kill=v2"},
		{cgroupLimits{Pids: 100, MemoryBytes: 32 << 20}, "100 33554432 0", "pids=100 (v2) memory=32MiB (v2) kill=v2"},
		{cgroupLimits{}, "max max max", "pids=off memory=off kill=v2"},
	} {
		st, err := g.setLimits(s, step.l, cgFailures{})
		if err != nil {
			t.Fatal(err)
		}
		if got := files(g.v2, "pids.max", "memory.max", "memory.swap.max"); got != step.want {
			t.Errorf("%+v: files %q, want %q", step.l, got, step.want)
		}
		if st.String() != step.str || (step.l.MemoryBytes > 0) != st.SwapBounded {
			t.Errorf("%+v: status %v, swap bounded %v", step.l, st, st.SwapBounded)
		}
	}

	// v1: memsw follows the limit, and stays >= it at every step.
	s = &cgSystem{v1: [numCtl]string{"", parent, ""}, memsw: true}
	g = &cgroup{fd: -1, events: -1, shape: shapeV1Memory}
	g.v1[ctlMemory] = v1mem
	for _, f := range []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"} {
		if err := os.WriteFile(filepath.Join(v1mem, f), []byte("9223372036854771712\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int64{64 << 20, 128 << 20, 16 << 20, 0} {
		st, err := g.setLimits(s, cgroupLimits{MemoryBytes: n}, cgFailures{})
		if err != nil {
			t.Fatal(err)
		}
		want := cgLimitValue(n, "-1")
		if got := files(v1mem, "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"); got != want+" "+want {
			t.Errorf("%d: files %q", n, got)
		}
		if st.Memory.Max != n || (n > 0) != st.SwapBounded {
			t.Errorf("%d: status %v", n, st)
		}
	}
}
