package procguard

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests check what a host leaves in the cgroup hierarchies when it
// exits or is killed, and what a later host removes, on the real
// directories. The hosts are this test binary re-executed (cgHostEnv):
// each is bounded in time, and the test kills it by pid in its cleanup.

const cgHostEnv = "AUDITGUARD_CGROUP_HOST"

func init() { cgroupHostMain = runCgroupHost }

// runCgroupHost is the tiny host: it makes cgroups through newCgroup as a
// command would get them, and reports on stdout, one per line:
// "DIR <path>" for each directory made, "CHILD <pid>" for a process left
// running in one, "NONE <why>" when it can make no cgroup, and "READY"
// once it is all there. The mode says what it then does:
//
//   - live: one cgroup pooled (empty), one with a sleep 30 in it; it then
//     waits, at most 30 s, to be killed;
//   - exit: one cgroup pooled after a command ran in it, one still held,
//     and a dead host's directory made by hand; Shutdown, then the held
//     one released and one more made and released after it; returns (exit
//     code 0 when each step did what it should);
//   - noshutdown: one cgroup pooled, and returns without Shutdown.
func runCgroupHost() int {
	mode := os.Getenv(cgHostEnv)
	if mode == "" {
		return -1
	}
	say := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "cgroup host: "+format+"\n", a...)
		return 2
	}
	l := cgroupLimits{Pids: 64}
	make2 := func() (*cgroup, *cgroup, bool) {
		a, st := newCgroup(l)
		if a == nil {
			say("NONE %s", st.Note)
			return nil, nil, false
		}
		b, st2 := newCgroup(l)
		if b == nil {
			say("NONE %s", st2.Note)
			return nil, nil, false
		}
		for _, d := range append(st.Dirs, st2.Dirs...) {
			say("DIR %s", d)
		}
		return a, b, true
	}
	exists := func(g *cgroup) bool {
		for _, d := range []string{g.v2, g.v1[ctlPids], g.v1[ctlMemory], g.v1[ctlFreezer]} {
			if d != "" && !cgExists(d) {
				return false
			}
		}
		return true
	}
	gone := func(g *cgroup) bool {
		for _, d := range []string{g.v2, g.v1[ctlPids], g.v1[ctlMemory], g.v1[ctlFreezer]} {
			if d != "" && cgExists(d) {
				return false
			}
		}
		return true
	}
	runIn := func(g *cgroup, name string, args ...string) (*exec.Cmd, error) {
		c := exec.Command(name, args...)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		g.attach(c.SysProcAttr)
		if err := c.Start(); err != nil {
			return nil, err
		}
		return c, g.join(c.Process.Pid)
	}

	switch mode {
	case "live":
		a, b, ok := make2()
		if !ok {
			return 0
		}
		c, err := runIn(b, "sleep", "30")
		if err != nil {
			return fail("sleep: %v", err)
		}
		say("CHILD %d", c.Process.Pid)
		a.remove()
		if !exists(a) {
			return fail("the empty cgroup was not pooled")
		}
		say("READY")
		time.Sleep(30 * time.Second)
		return 3
	case "exit":
		a, b, ok := make2()
		if !ok {
			return 0
		}
		c, err := runIn(a, "true")
		if err != nil {
			return fail("true: %v", err)
		}
		if err := c.Wait(); err != nil {
			return fail("true: %v", err)
		}
		a.killIfPopulated()
		a.drain()
		a.remove()
		if !exists(a) {
			return fail("the empty cgroup was not pooled")
		}
		// A dead host's directory, left since this host's first command:
		// Shutdown removes it too (when names carry a namespace).
		stale := ""
		if ns := cgSelf().pidns; ns != 0 {
			for p := 1 << 22; p > 1<<16 && stale == ""; p-- {
				if unix.Kill(p, 0) == unix.ESRCH {
					stale = filepath.Join(cgParent, staleName(p, 1, ns))
				}
			}
			if err := os.Mkdir(stale, 0o755); err != nil {
				return fail("%v", err)
			}
			say("DIR %s", stale)
		}
		Shutdown()
		if !gone(a) {
			return fail("the pooled cgroup outlived Shutdown")
		}
		if stale != "" && cgExists(stale) {
			return fail("Shutdown left a dead host's %s", stale)
		}
		b.remove() // released after Shutdown: removed, not pooled
		if !gone(b) {
			return fail("a cgroup released after Shutdown was kept")
		}
		g, st := newCgroup(l)
		for _, d := range st.Dirs {
			say("DIR %s", d)
		}
		if g != nil {
			g.remove()
			if !gone(g) {
				return fail("a cgroup made and released after Shutdown was kept")
			}
		}
		say("READY")
		return 0
	case "noshutdown":
		a, b, ok := make2()
		if !ok {
			return 0
		}
		b.remove()
		a.remove()
		say("READY")
		return 0
	}
	return fail("unknown mode %q", mode)
}

// cgHostRun is a tiny host started by a test.
type cgHostRun struct {
	cmd   *exec.Cmd
	dirs  []string
	child int
	done  chan error
	err   lockedBuffer
}

// startCgroupHost starts a tiny host in mode and reads its report up to
// READY (or its exit). It skips when the host can make no cgroup. Every
// directory the host reports is removed in the test's cleanup if still
// there.
func startCgroupHost(t *testing.T, mode string) *cgHostRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	t.Cleanup(cancel)
	h := &cgHostRun{done: make(chan error, 1)}
	h.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	h.cmd.Env = append(os.Environ(), cgHostEnv+"="+mode)
	h.cmd.Stderr = &h.err
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := h.cmd.Process.Pid
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		h.done <- h.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = unix.Kill(pid, unix.SIGKILL)
		h.wait(t)
	})
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the host ended before READY: %v; stderr %q", h.wait(t), h.err.String())
			}
			word, arg, _ := strings.Cut(line, " ")
			switch word {
			case "DIR":
				h.dirs = append(h.dirs, arg)
				removeOnCleanup(t, cgSys, []string{arg})
			case "CHILD":
				h.child, _ = strconv.Atoi(arg)
				killPidOnCleanup(t, h.child)
			case "NONE":
				t.Skipf("the host can make no cgroup here: %s", arg)
			case "READY":
				go func() {
					for range lines {
					}
				}()
				if len(h.dirs) == 0 {
					t.Fatal("the host reported no cgroup directory")
				}
				return h
			}
		case <-timeout:
			t.Fatalf("no READY from the host in 20 s; stderr %q", h.err.String())
		}
	}
}

// wait waits for the host's exit (its context bounds it).
func (h *cgHostRun) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.done:
		h.done <- err
		return err
	case <-time.After(45 * time.Second):
		t.Fatal("the host outlived its 40 s context")
		return nil
	}
}

func checkDirs(t *testing.T, dirs []string, want bool, when string) {
	t.Helper()
	for _, d := range dirs {
		if cgExists(d) != want {
			t.Errorf("%s: %s exists %v, want %v", when, d, !want, want)
		}
	}
}

// removeOnCleanup removes dirs, by name, if a test leaves them.
func removeOnCleanup(t *testing.T, s *cgSystem, dirs []string) {
	t.Cleanup(func() {
		for _, d := range dirs {
			if cgExists(d) {
				_ = removeCgroupDir(d, s.v2 != "" && strings.HasPrefix(d, s.v2+"/"), "", time.Second)
			}
		}
	})
}

// TestCgroupKilledHost: a host's directories are left alone while it
// lives, even by a host that cleans up; once it is SIGKILLed (it can run
// no code then) they stay on disk, with the command it left running, until
// a later host's cleanup kills that command and removes them.
func TestCgroupKilledHost(t *testing.T) {
	s := cgTestSystem(t)
	selfPidNS(t)
	h := startCgroupHost(t, "live")
	if h.child == 0 {
		t.Fatal("the host reported no child")
	}
	t.Logf("host %d, child %d, dirs %v", h.cmd.Process.Pid, h.child, h.dirs)
	checkDirs(t, h.dirs, true, "the host made them")

	cleanStale(s)
	checkDirs(t, h.dirs, true, "a cleanup while their host lives")
	if !cgTestAlive(h.child) {
		t.Fatal("a cleanup killed a live host's command")
	}

	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	checkDirs(t, h.dirs, true, "the host was killed")
	if !cgTestAlive(h.child) {
		t.Fatal("the host's command died with it: nothing left to clean")
	}

	cleanStale(s)
	waitDead(t, h.child, "the dead host's command")
	checkDirs(t, h.dirs, false, "a later host cleaned up")
}

// TestCgroupHostExit: a host that calls Shutdown before it exits leaves
// no directory, pooled or released after; one that exits without it
// leaves its pooled ones, which a later host removes.
func TestCgroupHostExit(t *testing.T) {
	s := cgTestSystem(t)
	t.Run("Shutdown", func(t *testing.T) {
		h := startCgroupHost(t, "exit")
		if err := h.wait(t); err != nil {
			t.Fatalf("host: %v; stderr %q", err, h.err.String())
		}
		checkDirs(t, h.dirs, false, "the host exited after Shutdown")
		t.Logf("removed %v", h.dirs)
	})
	t.Run("no Shutdown", func(t *testing.T) {
		selfPidNS(t)
		h := startCgroupHost(t, "noshutdown")
		if err := h.wait(t); err != nil {
			t.Fatalf("host: %v; stderr %q", err, h.err.String())
		}
		checkDirs(t, h.dirs, true, "the host exited without Shutdown")
		cleanStale(s)
		checkDirs(t, h.dirs, false, "a later host cleaned up")
	})
}

// TestCgroupStaleRules: which directories a cleanup removes, made by hand
// in every hierarchy in use. The pid of a live process that is no host
// (this test's parent) with a start time that is not its own is a reused
// pid: its directory is a dead host's, and the process inside is killed.
// With its true start time it is a live host's, left alone with what is
// inside. A directory of another pid namespace, of this host, or not
// auditguard's is left alone; an old-style one whose pid is free is
// removed when empty, and left alone (its process alive) when not.
func TestCgroupStaleRules(t *testing.T) {
	s := cgTestSystem(t)
	ns := selfPidNS(t)
	ppid := os.Getppid()
	pstart, exited, err := procStart(ppid)
	if err != nil || exited || ppid <= 1 {
		t.Skipf("no live parent to borrow a pid from: pid %d, %v", ppid, err)
	}
	dead := deadPid(t)
	cases := []struct {
		name    string
		sleeper bool // a process is put inside
		removed bool
	}{
		{staleName(ppid, pstart+1, ns), true, true},                       // reused pid
		{staleName(ppid, pstart, ns), true, false},                        // live host
		{staleName(dead, 1, ns+1), false, false},                          // another pid namespace
		{fmt.Sprintf("auditguard-%d-1", dead), false, true},               // old style, empty
		{fmt.Sprintf("auditguard-%d-2", dead), true, false},               // old style, busy
		{cgSelf().prefix + "999999", false, false},                        // this host's
		{fmt.Sprintf("auditguard-%d-%d-%d-x", dead, 1, ns), false, false}, // not a name of ours
	}
	parents := []string{s.v2, s.v1[ctlPids], s.v1[ctlMemory], s.v1[ctlFreezer]}
	sleepers := map[string]*cgChild{}
	for _, c := range cases {
		var dirs []string
		for _, parent := range parents {
			if parent == "" {
				continue
			}
			d := filepath.Join(parent, c.name)
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, d)
		}
		removeOnCleanup(t, s, dirs)
		if !c.sleeper {
			continue
		}
		ch := startIn(t, &cgroup{fd: -1, events: -1}, `exec sleep 30`)
		for _, d := range dirs {
			if err := cgWrite(filepath.Join(d, "cgroup.procs"), strconv.Itoa(ch.cmd.Process.Pid)); err != nil {
				t.Fatal(err)
			}
		}
		sleepers[c.name] = ch
	}

	cleanStale(s)

	for _, c := range cases {
		var dirs []string
		for _, parent := range parents {
			if parent != "" {
				dirs = append(dirs, filepath.Join(parent, c.name))
			}
		}
		checkDirs(t, dirs, !c.removed, c.name)
		ch := sleepers[c.name]
		if ch == nil {
			continue
		}
		pid := ch.cmd.Process.Pid
		if c.removed {
			select {
			case <-ch.done:
				ch.done <- nil
			case <-time.After(5 * time.Second):
				t.Errorf("%s: the process inside survived the cleanup", c.name)
			}
		} else if !cgTestAlive(pid) {
			t.Errorf("%s: the process inside was killed", c.name)
		} else if procs := strings.Fields(cgRead(filepath.Join(dirs[0], "cgroup.procs"))); !slices.Contains(procs, strconv.Itoa(pid)) {
			t.Errorf("%s: the process inside moved: %v", c.name, procs)
		}
	}
}
