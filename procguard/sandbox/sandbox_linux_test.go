//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/internal/proctree"
	"github.com/auditguard/auditguard/policy"
)

// These tests drive the sandbox directly, without procguard's policy
// pipeline: the target is /bin/sh, every start is bounded by a context
// timeout, and every process of a sandbox dies with its init, which each
// test waits for.

const testTimeout = 20 * time.Second

// shSpec runs script with sh inside a sandbox whose only write root is dir.
func shSpec(t *testing.T, dir, script string) *Spec {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	sh, _ = filepath.EvalSymlinks(sh)
	return &Spec{
		Path:  sh,
		Args:  []string{"sh", "-c", script},
		Env:   []string{"GREETING=hello"},
		Dir:   dir,
		Files: []policy.Spec{{WriteRoots: []string{dir}}},
	}
}

// run starts spec and waits for it, failing the test on a set-up error.
func run(t *testing.T, spec *Spec, stdio Stdio) (*Launch, *os.ProcessState, error) {
	t.Helper()
	if stdio.WaitDelay == 0 {
		stdio.WaitDelay = 5 * time.Second
	}
	return startWait(t, func(ctx context.Context) (*Launch, error) { return Start(ctx, spec, stdio, nil, nil) })
}

// startWait starts a command with start and waits for it, both bounded by
// testTimeout (the sandbox is killed by its init's pid past it), failing
// the test on a set-up error and skipping it where there is no sandbox.
func startWait(t *testing.T, start func(context.Context) (*Launch, error)) (*Launch, *os.ProcessState, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	l, err := start(ctx)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("no sandbox here: %v", err)
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	timer := time.AfterFunc(testTimeout, func() { _ = l.Process.Kill() })
	defer timer.Stop()
	state, err := l.Wait()
	return l, state, err
}

// TestStartPaths runs the same target every way init can start it:
// forked from init and held at exec by ptrace while the rlimits are set;
// forked with its execs judged, the rlimits set while the supervisor holds
// its first exec; and through the target stage where ptrace is refused.
// Each must give the target its environment, directory, streams and
// limits (a program it starts has them too), and nothing of init's
// environment.
func TestStartPaths(t *testing.T) {
	for _, path := range []string{"fork", "fork-judged", "stage"} {
		stage := path == "stage"
		t.Run(path, func(t *testing.T) {
			forceStage = stage
			defer func() { forceStage = false }()
			dir := t.TempDir()
			spec := shSpec(t, dir, `echo "$GREETING $GOMAXPROCS $(pwd) $(ulimit -n) $(sh -c 'ulimit -n')"; read line; echo "in:$line"; echo err >&2; exit 3`)
			spec.Rlimits = []Rlimit{{Resource: unix.RLIMIT_NOFILE, Name: "nofile", Value: 77}}
			if path == "fork-judged" {
				spec.JudgeExec = (&execJudge{}).judge
			}
			var out, errb bytes.Buffer
			l, state, err := run(t, spec, Stdio{Stdin: strings.NewReader("typed\n"), Stdout: &out, Stderr: &errb})
			var ee *exec.ExitError
			if !errors.As(err, &ee) || state.ExitCode() != 3 {
				t.Fatalf("want exit 3 as *exec.ExitError, got %v (state %v)", err, state)
			}
			if path == "fork-judged" && !l.Report.Exec {
				t.Skipf("execs are not judged here: %v", l.Report)
			}
			if want := "hello  " + dir + " 77 77\nin:typed\n"; out.String() != want {
				t.Errorf("stdout %q, want %q", out.String(), want)
			}
			if errb.String() != "err\n" {
				t.Errorf("stderr %q", errb.String())
			}
			if e := l.Exit(); e == nil || e.Code != 3 {
				t.Errorf("Exit() = %+v, want code 3", e)
			}
			if got := strings.Join(l.Report.Rlimits, ","); got != "nofile=77" {
				t.Errorf("report rlimits %q", got)
			}
			staged := strings.Contains(strings.Join(l.Report.Notes, "\n"), "second stage")
			if staged != stage {
				t.Errorf("report notes %q: staged=%v, want %v", l.Report.Notes, staged, stage)
			}
			if !l.Report.NoCapabilities || !l.Report.Seccomp {
				t.Errorf("report %s: want caps dropped and seccomp on", l.Report)
			}
		})
	}
}

// TestRlimitRefused: a limit the kernel refuses to set (a hard limit above
// the host's own, which a sandbox cannot raise) is a set-up error naming
// the step, on every path, and the target never runs.
func TestRlimitRefused(t *testing.T) {
	var host unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &host); err != nil {
		t.Fatal(err)
	}
	if host.Max == unix.RLIM_INFINITY {
		t.Skip("the host's nofile hard limit is unlimited")
	}
	for _, path := range []string{"fork", "fork-judged", "stage"} {
		t.Run(path, func(t *testing.T) {
			forceStage = path == "stage"
			defer func() { forceStage = false }()
			dir := t.TempDir()
			spec := shSpec(t, dir, `touch ran`)
			spec.Rlimits = []Rlimit{{Resource: unix.RLIMIT_NOFILE, Name: "nofile", Value: host.Max + 1}}
			if path == "fork-judged" {
				spec.JudgeExec = (&execJudge{}).judge
			}
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			l, err := Start(ctx, spec, Stdio{WaitDelay: time.Second}, nil, nil)
			if errors.Is(err, ErrUnavailable) {
				t.Skipf("no sandbox here: %v", err)
			}
			if err == nil {
				l.Wait()
				t.Fatalf("Start succeeded with nofile above the host's hard limit (report %s)", l.Report)
			}
			var se *SetupError
			if !errors.As(err, &se) || se.Step != "rlimits" {
				t.Errorf("Start: %v, want a SetupError at step rlimits", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
				t.Error("the target ran")
			}
		})
	}
}

// TestStdioKinds covers the stream kinds exec.Cmd accepts: files go to the
// target as they are, nil is the null device, one writer for both
// stdout and stderr keeps their order.
func TestStdioKinds(t *testing.T) {
	dir := t.TempDir()
	t.Run("same writer", func(t *testing.T) {
		var both bytes.Buffer
		_, _, err := run(t, shSpec(t, dir, `echo 1; echo 2 >&2; echo 3`), Stdio{Stdout: &both, Stderr: &both})
		if err != nil || both.String() != "1\n2\n3\n" {
			t.Fatalf("err %v, output %q", err, both.String())
		}
	})
	t.Run("files and nil", func(t *testing.T) {
		f, err := os.Create(filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		_, _, err = run(t, shSpec(t, dir, `cat; echo done`), Stdio{Stdout: f})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(f.Name())
		if string(b) != "done\n" {
			t.Fatalf("file got %q (stdin must be empty)", b)
		}
		if _, err := f.Stat(); err != nil {
			t.Errorf("the caller's file was closed: %v", err)
		}
	})
}

// TestSignalledTarget: a target killed by a signal is reported with it.
func TestSignalledTarget(t *testing.T) {
	l, state, err := run(t, shSpec(t, t.TempDir(), `kill -TERM $$`), Stdio{})
	if err == nil || state.ExitCode() != 128+int(unix.SIGTERM) {
		t.Fatalf("err %v, exit %d", err, state.ExitCode())
	}
	if e := l.Exit(); e == nil || e.Signal != unix.SIGTERM {
		t.Errorf("Exit() = %+v, want SIGTERM", e)
	}
}

// TestPool: Prewarm returns once the pool's trampoline is ready and has
// settled, a ready trampoline is used by the next start, a dead one is
// replaced, and turning the pool off leaves no process behind.
func TestPool(t *testing.T) {
	freshPool(t)
	SetPrewarm(true)
	defer SetPrewarm(true)
	waitSpawner(testTimeout)
	if err := Prewarm(false); errors.Is(err, ErrUnavailable) {
		t.Skipf("no sandbox here: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	pool.Lock()
	ready := pool.ready[0]
	pool.Unlock()
	if ready == nil {
		t.Fatal("Prewarm left no trampoline in the pool")
	}
	select {
	case <-ready.settled:
	default:
		t.Error("Prewarm returned before the trampoline's init settled (growHeap)")
	}
	dir := t.TempDir()
	var out bytes.Buffer
	l, _, err := run(t, shSpec(t, dir, `echo ok`), Stdio{Stdout: &out})
	if err != nil || out.String() != "ok\n" {
		t.Fatalf("err %v, out %q", err, out.String())
	}
	if l.Process.Pid != ready.proc.Pid {
		t.Errorf("the start used pid %d, not the ready trampoline %d", l.Process.Pid, ready.proc.Pid)
	}
	if !ready.viaSpawner {
		t.Error("the pool's trampoline was not made by the spawner")
	}

	// A ready trampoline that died is not used.
	if err := Prewarm(false); err != nil {
		t.Fatal(err)
	}
	pool.Lock()
	dead := pool.ready[0]
	pool.Unlock()
	_ = dead.proc.Kill()
	for deadline := time.Now().Add(5 * time.Second); dead.alive() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	out.Reset()
	l, _, err = run(t, shSpec(t, dir, `echo ok`), Stdio{Stdout: &out})
	if err != nil || out.String() != "ok\n" {
		t.Fatalf("after a dead trampoline: err %v, out %q", err, out.String())
	}
	if l.Process.Pid == dead.proc.Pid {
		t.Error("the start used the dead trampoline")
	}

	if err := Prewarm(false); err != nil {
		t.Fatal(err)
	}
	SetPrewarm(false)
	if kids := children(t); len(kids) > 0 {
		t.Errorf("SetPrewarm(false) left children: %v", kids)
	}
}

// TestNoLeaks: with the pool off, starts leave no descriptor and no
// process behind.
func TestNoLeaks(t *testing.T) {
	SetPrewarm(false)
	defer SetPrewarm(true)
	dir := t.TempDir()
	run(t, shSpec(t, dir, `true`), Stdio{}) // first use starts the keeper threads
	before := fdCount(t)
	for range 5 {
		var out bytes.Buffer
		if _, _, err := run(t, shSpec(t, dir, `echo x; echo y >&2`), Stdio{Stdin: strings.NewReader("z"), Stdout: &out, Stderr: &out}); err != nil {
			t.Fatal(err)
		}
	}
	if after := fdCount(t); after != before {
		t.Errorf("descriptors: %d before, %d after", before, after)
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("children left: %v", kids)
	}
}

func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// children lists this process's live children (zombies excluded).
func children(t *testing.T) []int {
	t.Helper()
	kids, err := proctree.Children()
	if err != nil {
		t.Skipf("no /proc task list: %v", err)
	}
	return kids
}

// TestSignalsReachTheTarget: a signal the host sends the sandbox (as
// exec.Cmd.Cancel or Process.Signal would) reaches the target, which can
// clean up and choose its exit.
func TestSignalsReachTheTarget(t *testing.T) {
	out := &syncBuffer{}
	l := startUntil(t, shSpec(t, t.TempDir(), `trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done`), out, "ready")
	if err := l.Process.Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	state, _ := l.Wait()
	if state.ExitCode() != 7 || !strings.Contains(out.String(), "got-term") {
		t.Fatalf("exit %d, output %q: the target did not get SIGTERM", state.ExitCode(), out.String())
	}
}

// startUntil starts spec with its stdout in out and returns once out
// holds marker (or testTimeout has passed); a kill timer bounds the
// sandbox to testTimeout. The caller Waits.
func startUntil(t *testing.T, spec *Spec, out *syncBuffer, marker string) *Launch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	l, err := Start(ctx, spec, Stdio{Stdout: out, WaitDelay: 5 * time.Second}, nil, nil)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("no sandbox here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(testTimeout, func() { _ = l.Process.Kill() })
	t.Cleanup(func() { timer.Stop() })
	for deadline := time.Now().Add(testTimeout); !strings.Contains(out.String(), marker) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	return l
}

// syncBuffer is a bytes.Buffer safe for a copier and a poller.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestExtraFiles: the target finds ExtraFiles at 3, 4, ... on both start
// paths, a nil entry's number closed, and nothing else of init's open.
func TestExtraFiles(t *testing.T) {
	for _, stage := range []bool{false, true} {
		t.Run(map[bool]string{false: "fork", true: "stage"}[stage], func(t *testing.T) {
			forceStage = stage
			defer func() { forceStage = false }()
			dir := t.TempDir()
			a := filepath.Join(dir, "a")
			if err := os.WriteFile(a, []byte("from-a"), 0o644); err != nil {
				t.Fatal(err)
			}
			fa, err := os.Open(a)
			if err != nil {
				t.Fatal(err)
			}
			defer fa.Close()
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			defer pw.Close()
			var out bytes.Buffer
			_, _, err = run(t, shSpec(t, dir, `cat <&3; echo; echo to-pipe >&5; for fd in 4 6 7 8 9; do if { true >&$fd; } 2>/dev/null; then printf 'open:%s ' $fd; fi; done; echo end`),
				Stdio{Stdout: &out, ExtraFiles: []*os.File{fa, nil, pw}})
			if err != nil {
				t.Fatalf("%v: %q", err, out.String())
			}
			pw.Close()
			got, _ := io.ReadAll(pr)
			if string(got) != "to-pipe\n" {
				t.Errorf("fd 5 (the pipe) got %q", got)
			}
			lines := strings.SplitN(out.String(), "\n", 2)
			if lines[0] != "from-a" {
				t.Errorf("fd 3 read %q", lines[0])
			}
			if strings.TrimSpace(lines[1]) != "end" {
				t.Errorf("descriptors the target should not have: %q", lines[1])
			}
		})
	}
}

// TestHostMountsReachPooledTrampoline: a trampoline waits in the pool with
// its own copy of the host's mounts; a mount the host adds afterwards (on
// a shared mount) must still be seen by the command that uses it, and the
// sandbox's own mounts must not propagate back.
func TestHostMountsReachPooledTrampoline(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a test filesystem needs root")
	}
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", shared, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	defer unix.Unmount(shared, unix.MNT_DETACH)
	if err := unix.Mount("", shared, "", unix.MS_SHARED, ""); err != nil {
		t.Skipf("cannot make a mount shared here: %v", err)
	}
	freshPool(t) // the next trampoline is made after the shared mount
	SetPrewarm(true)
	if err := Prewarm(false); errors.Is(err, ErrUnavailable) {
		t.Skipf("no sandbox here: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	later := filepath.Join(shared, "later")
	if err := os.Mkdir(later, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", later, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(later, unix.MNT_DETACH)
	if err := os.WriteFile(filepath.Join(later, "file"), []byte("mounted-after"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, _, err := run(t, shSpec(t, dir, `cat shared/later/file; echo; mount -t tmpfs none shared 2>/dev/null; echo done`), Stdio{Stdout: &out})
	if err != nil {
		t.Fatalf("%v: %q", err, out.String())
	}
	if !strings.HasPrefix(out.String(), "mounted-after\n") {
		t.Errorf("the command did not see a mount the host added after its trampoline started: %q", out.String())
	}
	if _, err := os.Stat(filepath.Join(later, "file")); err != nil {
		t.Errorf("the host's view changed: %v", err)
	}
}

// freshPool turns the pool off and waits until no refill is in flight, so
// no trampoline made before this point can land in it afterwards.
func freshPool(t testing.TB) {
	t.Helper()
	SetPrewarm(false)
	for deadline := time.Now().Add(testTimeout); ; time.Sleep(time.Millisecond) {
		pool.Lock()
		busy := pool.filling[0] != nil || pool.filling[1] != nil
		pool.Unlock()
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a pool refill did not finish")
		}
	}
}

// TestTaskStates: the clue a start that got no answer gives says where
// the process's threads and its children wait.
func TestTaskStates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", "sleep 30 & wait")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	var got string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = taskStates(c.Process.Pid); strings.Contains(got, "sleep") {
			break
		}
	}
	for _, want := range []string{"threads:", "x1", "; child ", "sleep"} {
		if !strings.Contains(got, want) {
			t.Errorf("taskStates = %q, lacks %q", got, want)
		}
	}
}

// TestInitDied: when init itself dies (here of SIGABRT, which its Go
// runtime turns into a stack dump and exit status 2) before the target
// ends, Wait says so rather than pass init's status off as the
// command's, with the first line the runtime wrote; the target dies with
// the sandbox.
func TestInitDied(t *testing.T) {
	var out syncBuffer
	l := startUntil(t, shSpec(t, realDir(t), "echo up; exec sleep 30"), &out, "up")
	if err := l.Process.Signal(unix.SIGABRT); err != nil {
		t.Fatal(err)
	}
	state, err := l.Wait()
	if !errors.Is(err, ErrInitDied) {
		t.Fatalf("Wait: %v (%v), want ErrInitDied", err, state)
	}
	if !strings.Contains(err.Error(), "SIGABRT") {
		t.Errorf("the error lacks the runtime's words: %v", err)
	}
	if l.Exit() != nil {
		t.Errorf("Exit = %+v, want nil", l.Exit())
	}
	if m := proctree.NamespaceMembers(l.Report.PidNamespace, l.Process.Pid); len(m) > 0 {
		t.Errorf("processes outlived init: %v", m)
	}
	t.Log(err)
}

// TestTreeCgroupOnEveryPath: with Spec.TreeCgroup, the target is in that
// cgroup from its first instruction on every start path (forked and held
// at a ptrace stop, forked with its execs judged, through the stage where
// ptrace is refused), and init is not: the tree's process limit never
// counts init's threads. The cgroup is a v1 pids one the test makes (the
// kind that holds a process's controllers apart); the target reads its
// own /proc/self/cgroup as its first program.
func TestTreeCgroupOnEveryPath(t *testing.T) {
	const v1 = "/sys/fs/cgroup/pids"
	if _, err := os.Stat(filepath.Join(v1, "cgroup.procs")); err != nil {
		t.Skipf("no v1 pids hierarchy here: %v", err)
	}
	for _, path := range []string{"fork", "fork-judged", "stage"} {
		t.Run(path, func(t *testing.T) {
			forceStage = path == "stage"
			defer func() { forceStage = false }()
			name := fmt.Sprintf("auditguard-test-%d-%s", os.Getpid(), path)
			cg := filepath.Join(v1, name)
			if err := os.Mkdir(cg, 0o755); err != nil {
				t.Skipf("cannot make a pids cgroup here: %v", err)
			}
			defer func() {
				for deadline := time.Now().Add(5 * time.Second); os.Remove(cg) != nil && time.Now().Before(deadline); {
					time.Sleep(20 * time.Millisecond)
				}
			}()
			procs, err := os.OpenFile(filepath.Join(cg, "cgroup.procs"), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer procs.Close()
			dir := t.TempDir()
			spec := &Spec{Path: "/bin/sh", Args: []string{"sh", "-c", `grep :pids: /proc/self/cgroup; grep :pids: /proc/1/cgroup`},
				Dir: dir, Files: []policy.Spec{{WriteRoots: []string{dir}}}, TreeCgroups: []*os.File{procs}}
			if path == "fork-judged" {
				spec.JudgeExec = (&execJudge{}).judge
			}
			var out, errb bytes.Buffer
			l, state, err := run(t, spec, Stdio{Stdout: &out, Stderr: &errb})
			if err != nil || !state.Success() {
				t.Fatalf("%v %v: %s", err, state, &errb)
			}
			if path == "fork-judged" && !l.Report.Exec {
				t.Skipf("execs are not judged here: %v", l.Report)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 2 {
				t.Fatalf("output %q", out.String())
			}
			// The sandbox has no cgroup namespace of its own: the paths
			// are the host's.
			if !strings.HasSuffix(lines[0], "/"+name) {
				t.Errorf("the target is in %q, want the tree's cgroup %s", lines[0], name)
			}
			if strings.HasSuffix(lines[1], "/"+name) {
				t.Errorf("init is in the tree's cgroup: %q", lines[1])
			}
		})
	}
}

// TestUmaskFollowsTheTask: the supervisor creates files for the target
// with the umask the creating task has at that moment: changed between
// creates, in a subshell, in short-lived processes one after another.
func TestUmaskFollowsTheTask(t *testing.T) {
	dir := realDir(t)
	_, state, err := run(t, shSpec(t, dir, `umask 077; echo > a; umask 022; echo > b; mkdir d1
umask 027; mkdir d2; (umask 002; echo > c); echo > e
for i in 1 2 3 4 5 6; do sh -c "umask 0$((i % 2 * 7))$((i % 2 * 7)); echo > f$i"; done`), Stdio{})
	if err != nil || !state.Success() {
		t.Fatalf("%v %v", err, state)
	}
	want := map[string]os.FileMode{"a": 0o600, "b": 0o644, "d1": 0o755, "d2": 0o750, "c": 0o664, "e": 0o640,
		"f1": 0o600, "f2": 0o666, "f3": 0o600, "f4": 0o666, "f5": 0o600, "f6": 0o666}
	for name, mode := range want {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("%s: mode %o, want %o", name, got, mode)
		}
	}
}
