//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// spawnerHostEnv makes this test binary a tiny host (TestMain): it fills
// the pool through the spawner, prints "PIDS <spawner> <trampoline>", and
// waits, at most 30 s, to be killed.
const spawnerHostEnv = "AUDITGUARD_SPAWNER_HOST"

func TestMain(m *testing.M) {
	if os.Getenv(spawnerHostEnv) != "" {
		os.Exit(runSpawnerHost())
	}
	os.Exit(m.Run())
}

func runSpawnerHost() int {
	sp := waitSpawner(testTimeout)
	if err := Prewarm(false); err != nil {
		fmt.Println("NONE", err)
		return 0
	}
	pool.Lock()
	t := pool.ready[0]
	pool.Unlock()
	if sp == nil || t == nil || !t.viaSpawner {
		fmt.Fprintln(os.Stderr, "the pool was not filled through the spawner")
		return 2
	}
	fmt.Println("PIDS", sp.proc.Pid, t.proc.Pid)
	time.Sleep(30 * time.Second)
	return 0
}

// waitSpawner starts the spawner and waits until it serves; nil if it
// does not within d.
func waitSpawner(d time.Duration) *spawner {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if sp := theSpawner(); sp != nil {
			return sp
		}
	}
	return nil
}

func mustSpawner(t *testing.T) *spawner {
	t.Helper()
	sp := waitSpawner(testTimeout)
	if sp == nil {
		t.Fatal("the spawner never served")
	}
	return sp
}

// parentOf reads pid's parent from /proc.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// readyTrampoline makes a trampoline as a refill does and waits until its
// init is ready.
func readyTrampoline(t *testing.T) *trampoline {
	t.Helper()
	tr, err := newTrampoline(false)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("no sandbox here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if tr.alive() {
			tr.discard()
		}
	})
	select {
	case <-tr.ready:
	case <-time.After(testTimeout):
		t.Fatal("the trampoline never said ready")
	}
	if tr.notReady != nil {
		t.Fatalf("the trampoline failed: %+v", *tr.notReady)
	}
	return tr
}

// TestSpawner: while the pool is on, trampolines are cloned by the
// spawner, outside any namespace of the sandbox's, and are this
// process's children; a spawner that died is replaced, the trampoline in
// between made by the host itself, as it is when the spawner does not
// answer; after maxSpawnerFailures in a row no spawner is started;
// SetPrewarm(false) ends the spawner.
// TestPool runs a command on a trampoline the spawner made.
func TestSpawner(t *testing.T) {
	freshPool(t)
	SetPrewarm(true)
	defer SetPrewarm(true)
	// The first trampoline does not wait for the spawner to start.
	early := readyTrampoline(t)
	if early.viaSpawner {
		t.Error("the first trampoline waited for the spawner")
	}
	sp := mustSpawner(t)
	first := readyTrampoline(t)
	if !first.viaSpawner {
		t.Fatal("the spawner did not make the trampoline")
	}
	if got := parentOf(t, first.proc.Pid); got != os.Getpid() {
		t.Errorf("the trampoline's parent is %d, not the host %d", got, os.Getpid())
	}
	if got := parentOf(t, sp.proc.Pid); got != os.Getpid() {
		t.Errorf("the spawner's parent is %d, not the host %d", got, os.Getpid())
	}
	for _, ns := range []string{"user", "mnt", "pid", "net"} {
		mine, _ := os.Readlink("/proc/self/ns/" + ns)
		its, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", sp.proc.Pid, ns))
		if err != nil || its != mine {
			t.Errorf("the spawner's %s namespace is %q (%v), the host's %q", ns, its, err, mine)
		}
		initNS, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", first.proc.Pid, ns))
		if initNS == mine {
			t.Errorf("the spawner's trampoline shares the host's %s namespace", ns)
		}
	}

	// A dead spawner: the next trampoline is the host's own, the one
	// after comes from a new spawner.
	killSpawner(t, sp)
	fallback := readyTrampoline(t)
	if fallback.viaSpawner {
		t.Error("a trampoline came from a dead spawner")
	}
	sp2 := mustSpawner(t)
	again := readyTrampoline(t)
	if !again.viaSpawner || sp2.proc.Pid == sp.proc.Pid {
		t.Errorf("no new spawner made the trampoline after the first died (via spawner %v)", again.viaSpawner)
	}

	// A wedged spawner: after spawnerTimeout the host clones the
	// trampoline itself, and the spawner is killed.
	if err := unix.Kill(sp2.proc.Pid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	pidfd, err := unix.PidfdOpen(sp2.proc.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	t0 := time.Now()
	wedged := readyTrampoline(t)
	if wedged.viaSpawner || time.Since(t0) < spawnerTimeout {
		t.Errorf("a stopped spawner made a trampoline (via spawner %v, after %v)", wedged.viaSpawner, time.Since(t0))
	}
	if n, _ := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, int(testTimeout/time.Millisecond)); n != 1 {
		t.Error("the wedged spawner was left running")
	}

	// Spawners that keep failing are given up on: no new one is started.
	sp3 := mustSpawner(t)
	spawners.Lock()
	spawners.failed = maxSpawnerFailures - 1
	spawners.Unlock()
	killSpawner(t, sp3)
	for range 2 {
		tr := readyTrampoline(t)
		if tr.viaSpawner {
			t.Error("a trampoline came from a spawner after they were given up on")
		}
		tr.discard()
	}
	spawners.Lock()
	gaveUp := spawners.broken && spawners.s == nil
	spawners.Unlock()
	if !gaveUp {
		t.Errorf("the host did not give up after %d failed spawners", maxSpawnerFailures)
	}

	early.discard()
	first.discard()
	fallback.discard()
	again.discard()
	wedged.discard()
	SetPrewarm(false)
	if kids := children(t); len(kids) > 0 {
		t.Errorf("SetPrewarm(false) left children: %v", kids)
	}
}

// TestSpawnerAnswerThroughSignals: a host thread waiting for the
// spawner's answer is interrupted by signals (Go's runtime preempts
// threads with SIGURG); the wait goes on, and the trampoline is the
// spawner's. A wait that ended at the first signal used to give up on
// the spawner while it was still cloning: the host then cloned its own
// trampoline on the same control socket, the spawner's took its spec,
// and the command's Wait waited for ever on an init that waited for a
// spec (8 commands started in parallel hung within a few hundred).
func TestSpawnerAnswerThroughSignals(t *testing.T) {
	freshPool(t)
	SetPrewarm(true)
	defer SetPrewarm(true)
	sp := mustSpawner(t)
	// Stopped, the spawner answers only once it is continued: the host
	// waits meanwhile, and its threads are signalled throughout.
	if err := unix.Kill(sp.proc.Pid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	type made struct {
		tr  *trampoline
		err error
	}
	got := make(chan made, 1)
	go func() {
		tr, err := newTrampoline(false)
		got <- made{tr, err}
	}()
	signals := 0
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(200 * time.Microsecond) {
		tids, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range tids {
			if tid, err := strconv.Atoi(d.Name()); err == nil && unix.Tgkill(os.Getpid(), tid, unix.SIGURG) == nil {
				signals++
			}
		}
	}
	// A spawner given up on is dead already (os.ErrProcessDone).
	if err := sp.proc.Signal(unix.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	var m made
	select {
	case m = <-got:
	case <-time.After(testTimeout):
		t.Fatal("no trampoline after the spawner was continued")
	}
	if m.err != nil {
		t.Fatal(m.err)
	}
	defer m.tr.discard()
	if !m.tr.viaSpawner {
		t.Errorf("after %d signals to the host's threads, the trampoline was not the spawner's", signals)
	}
	if theSpawner() != sp {
		t.Error("the spawner was given up on")
	}
}

// TestSpawnerLostAnswer: when the spawner's answer is lost after it
// cloned a trampoline (it died, or was too slow), the host's own
// trampoline does not share that one's control socket: the orphan reads
// EOF and exits without a spec, and a command started on the host's
// trampoline runs there.
func TestSpawnerLostAnswer(t *testing.T) {
	freshPool(t)
	SetPrewarm(true)
	defer SetPrewarm(true)
	mustSpawner(t)
	var orphan *os.Process
	testHookSpawnerReply = func(p *os.Process) error {
		orphan = p
		return errors.New("the answer was lost")
	}
	tr, err := newTrampoline(false)
	testHookSpawnerReply = nil
	if err != nil {
		t.Fatal(err)
	}
	if orphan == nil || tr.viaSpawner {
		t.Fatalf("the spawner's trampoline was not set aside (orphan %v, via spawner %v)", orphan, tr.viaSpawner)
	}
	// The orphan is this process's child: reap it, waiting at most
	// testTimeout for it to end on its own.
	exited := make(chan *os.ProcessState, 1)
	go func() {
		st, _ := orphan.Wait()
		exited <- st
	}()
	select {
	case st := <-exited:
		if st == nil || !st.Exited() {
			t.Errorf("the orphan trampoline ended as %v, not by exiting", st)
		}
	case <-time.After(testTimeout):
		_ = orphan.Kill()
		<-exited
		t.Error("the orphan trampoline did not exit: it still holds the control socket")
	}
	pool.Lock()
	pool.ready[0] = tr
	pool.Unlock()
	var out bytes.Buffer
	l, _, err := run(t, shSpec(t, t.TempDir(), `echo ok`), Stdio{Stdout: &out})
	if err != nil || out.String() != "ok\n" {
		t.Fatalf("err %v, out %q", err, out.String())
	}
	if l.Process.Pid != tr.proc.Pid {
		t.Errorf("the command ran in %d, not in the host's trampoline %d", l.Process.Pid, tr.proc.Pid)
	}
}

// killSpawner kills a spawner and waits until it is dead (not reaped:
// the host reaps it when it drops it).
func killSpawner(t *testing.T, sp *spawner) {
	t.Helper()
	if err := unix.Kill(sp.proc.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(testTimeout); ; time.Sleep(time.Millisecond) {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, sp.proc.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err != nil || info.Signo != 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed spawner did not die")
		}
	}
}

// TestSpawnerDiesWithHost: a host killed with SIGKILL takes its spawner
// and its pooled trampoline with it.
func TestSpawnerDiesWithHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	host := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), spawnerHostEnv+"=1")
	var stderr strings.Builder
	host.Stderr = &stderr
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	hostPid := host.Process.Pid
	t.Cleanup(func() { _ = unix.Kill(hostPid, unix.SIGKILL) })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = host.Wait()
		t.Fatalf("no word from the host: %v; stderr %q", err, stderr.String())
	}
	var spawnerPid, initPid int
	if strings.HasPrefix(line, "NONE") {
		t.Skipf("no sandbox here: %s", line)
	}
	if _, err := fmt.Sscanf(line, "PIDS %d %d", &spawnerPid, &initPid); err != nil {
		t.Fatalf("host said %q: %v", line, err)
	}
	var fds []int
	for _, pid := range []int{spawnerPid, initPid} {
		t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL) })
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatalf("pidfd of %d: %v", pid, err)
		}
		defer unix.Close(fd)
		fds = append(fds, fd)
	}
	if n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fds[0]), Events: unix.POLLIN}}, 0); n != 0 {
		t.Fatal("the spawner had ended while its host lived")
	}
	_ = unix.Kill(hostPid, unix.SIGKILL)
	_ = host.Wait()
	for i, fd := range fds {
		name := [...]string{"spawner", "trampoline"}[i]
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(pfd, int(testTimeout/time.Millisecond)); n != 1 || err != nil {
			t.Errorf("the %s outlived its killed host (poll %d, %v)", name, n, err)
		}
	}
}

// BenchmarkTrampolineHostCPU is what making one trampoline costs the
// host's own CPU (getrusage), cloned by the host itself (pool off) or
// through the spawner (pool on), by a host that holds and writes 0 or
// 200 MiB between trampolines (a busy host's heap): the host's fork
// copies its page tables, and every page it writes afterwards takes a
// copy-on-write fault; the spawner's clone costs the host neither.
func BenchmarkTrampolineHostCPU(b *testing.B) {
	for _, mib := range []int{0, 200} {
		for _, viaSpawner := range []bool{false, true} {
			name := fmt.Sprintf("host-%dMiB/direct", mib)
			if viaSpawner {
				name = fmt.Sprintf("host-%dMiB/spawner", mib)
			}
			b.Run(name, func(b *testing.B) {
				ballast := make([]byte, mib<<20)
				freshPool(b)
				SetPrewarm(viaSpawner)
				defer SetPrewarm(true)
				if viaSpawner && waitSpawner(testTimeout) == nil {
					b.Fatal("the spawner never served")
				}
				var cpu time.Duration
				for b.Loop() {
					for i := 0; i < len(ballast); i += 4096 {
						ballast[i]++
					}
					var r0, r1 unix.Rusage
					_ = unix.Getrusage(unix.RUSAGE_SELF, &r0)
					tr, err := newTrampoline(false)
					if err != nil {
						b.Skip(err)
					}
					for i := 0; i < len(ballast); i += 4096 {
						ballast[i]++
					}
					_ = unix.Getrusage(unix.RUSAGE_SELF, &r1)
					cpu += time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
					<-tr.ready
					if tr.viaSpawner != viaSpawner {
						b.Fatalf("made via the spawner %v, want %v", tr.viaSpawner, viaSpawner)
					}
					tr.discard()
				}
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "host-µs/op")
			})
		}
	}
}
