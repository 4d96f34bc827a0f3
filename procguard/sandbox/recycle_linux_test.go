//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/landlock"
)

// recycledRun runs spec through StartRecycled and waits for it.
func recycledRun(t *testing.T, spec *Spec) (l *Launch, out string, state *os.ProcessState, err error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	l, state, err = startWait(t, func(ctx context.Context) (*Launch, error) {
		return StartRecycled(ctx, spec, Stdio{Stdout: &stdout, Stderr: &stderr, WaitDelay: 5 * time.Second}, nil)
	})
	return l, stdout.String() + stderr.String(), state, err
}

// initPid is the pid of l's init (its Process is released by Wait).
func initPid(l *Launch) int { return l.t.proc.Pid }

// endRecycled ends every idle sandbox when the test ends and leaves
// recycling on.
func endRecycled(t *testing.T) {
	t.Cleanup(func() {
		SetRecycle(false)
		SetRecycle(true)
	})
}

// TestRecycledCommands runs commands one after another through
// StartRecycled, the first as a hostile command would leave its sandbox:
// a background job and a daemon that left its session keep writing, IPC
// objects stay, a file outside the write root is tried. The next command
// with the same policy must run in the same init, find nothing of the
// first, and be held by the same confinement; the first command's
// Process, used after its Wait as a careless host would, must not reach
// the second; Wait gives each a real-looking state; another policy gets
// another sandbox.
func TestRecycledCommands(t *testing.T) {
	endRecycled(t)
	dir, outside := realDir(t), realDir(t)
	ipc := ""
	if _, err := exec.LookPath("ipcmk"); err == nil {
		ipc = "ipcmk -M 4096 >/dev/null; ipcmk -Q >/dev/null\n"
	}
	spec := shSpec(t, dir, ipc+`echo one > a
`+leftWriting+`i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done
sleep 0.2
echo "env=$GREETING"
exit 3`)
	l1, out, state, err := recycledRun(t, spec)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || state == nil || state.ExitCode() != 3 || ee.ProcessState != state {
		t.Fatalf("first command: err %v (%T), state %v, want *exec.ExitError 3 with its state\n%s", err, err, state, out)
	}
	if !strings.Contains(out, "env=hello") || l1.Exit() == nil || l1.Exit().Code != 3 {
		t.Fatalf("first command: output %q, exit %+v", out, l1.Exit())
	}
	init1 := state.Pid()
	if init1 != initPid(l1) || !alive(init1) || l1.Process.Pid != -1 {
		t.Fatalf("state's pid %d, init %d (alive %v), Process's pid %d: want the kept init, and Process released", init1, initPid(l1), alive(init1), l1.Process.Pid)
	}
	// The usage is the target's: the shell counted to 200,000.
	if ru, ok := state.SysUsage().(*syscall.Rusage); !ok || ru == nil || state.UserTime()+state.SystemTime() <= 0 {
		t.Errorf("state's usage: %#v, user %v, system %v", state.SysUsage(), state.UserTime(), state.SystemTime())
	}
	if err := l1.Process.Signal(syscall.Signal(0)); err == nil {
		t.Errorf("the first command's Process still reaches its kept init after Wait")
	}
	writersStopped(t, dir)

	// The second command runs while a host kills the first one's Process.
	spec = shSpec(t, dir, `echo started; read line; cat a
echo "env=$GREETING"
echo "procs=$(ls /proc | grep -c '^[0-9]')"
echo "ipc=$(cat /proc/sysvipc/shm /proc/sysvipc/msg | grep -vc key)"
echo leak > `+filepath.Join(outside, "escaped")+` || echo refused`)
	spec.Env = []string{"GREETING=again"}
	out2 := &syncBuffer{}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	l2, err := StartRecycled(ctx, spec, Stdio{Stdin: pr, Stdout: out2, Stderr: out2, WaitDelay: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(testTimeout, func() { _ = l2.Process.Kill() })
	defer timer.Stop()
	for deadline := time.Now().Add(testTimeout); !strings.Contains(out2.String(), "started") && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if err := l1.Process.Kill(); err == nil {
		t.Errorf("Kill on the first command's Process succeeded while the second runs in its sandbox")
	}
	if l1.Kill() {
		t.Errorf("the first command's Launch.Kill killed the sandbox the second runs in")
	}
	pw.Write([]byte("go\n"))
	pw.Close()
	state2, err := l2.Wait()
	out = out2.String()
	if err != nil || state2 == nil || !state2.Success() {
		t.Fatalf("second command: %v, state %v\n%s", err, state2, out)
	}
	if initPid(l2) != init1 || state2.Pid() != init1 {
		t.Errorf("the second command ran in a new sandbox (init %d, then %d)", init1, initPid(l2))
	}
	for _, want := range []string{"one", "env=again", "refused", "ipc=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("second command's output lacks %q:\n%s", want, out)
		}
	}
	if n := procsIn(out); n < 2 || n > 5 {
		t.Errorf("the second command saw %d processes in its sandbox, want init and its own:\n%s", n, out)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Errorf("a recycled sandbox's command wrote outside the write root")
	}
	if !l2.Report.Seccomp || l2.Report.String() != l1.Report.String() {
		t.Errorf("the second command's report lost confinement: %v (first: %v)", l2.Report, l1.Report)
	}

	// A signal's death reads as init's own exit would give it.
	l3, out, state, err := recycledRun(t, shSpec(t, dir, `kill -TERM $$`))
	if !errors.As(err, &ee) || state.ExitCode() != 128+int(unix.SIGTERM) || l3.Exit().Signal != unix.SIGTERM || state.Pid() != init1 {
		t.Errorf("killed by SIGTERM: err %v, state %v (pid %d), exit %+v\n%s", err, state, state.Pid(), l3.Exit(), out)
	}

	// Another policy: another sandbox.
	spec = shSpec(t, dir, `true`)
	spec.Files = []policy.Spec{{WriteRoots: []string{dir}, Protected: []string{"*.key"}}}
	l4, out, _, err := recycledRun(t, spec)
	if err != nil || initPid(l4) == init1 {
		t.Errorf("a command with another policy: %v, init %d (the first's %d)\n%s", err, initPid(l4), init1, out)
	}

	// Recycling off: the kept sandboxes end.
	SetRecycle(false)
	if alive(init1) || alive(initPid(l4)) {
		t.Errorf("kept inits outlived SetRecycle(false): %d %v, %d %v", init1, alive(init1), initPid(l4), alive(initPid(l4)))
	}
	// A command then gets a sandbox of its own, ended after its Wait
	// (TestRecycleOffEndsAfterWait).
	l5, out, state, err := recycledRun(t, shSpec(t, dir, `true`))
	if err != nil || state == nil || initPid(l5) == init1 || initPid(l5) == initPid(l4) {
		t.Errorf("with recycling off: %v, state %v, init %d (kept ones %d, %d)\n%s", err, state, initPid(l5), init1, initPid(l4), out)
	}
	SetRecycle(false)
	if alive(initPid(l5)) {
		t.Errorf("init %d outlived SetRecycle(false)", initPid(l5))
	}
}

// TestRecycledKilledNotKept: a recycled command killed by its host ends
// its sandbox, which is not kept: the next command starts in another.
func TestRecycledKilledNotKept(t *testing.T) {
	endRecycled(t)
	dir := realDir(t)
	l1, _, _, err := recycledRun(t, shSpec(t, dir, `true`))
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	l2, err := StartRecycled(ctx, shSpec(t, dir, `echo ready; exec sleep 30`), Stdio{Stdout: out, WaitDelay: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if initPid(l2) != initPid(l1) {
		t.Fatalf("the second command did not reuse the first one's sandbox")
	}
	for deadline := time.Now().Add(testTimeout); !strings.Contains(out.String(), "ready") && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if !l2.Kill() {
		t.Fatal("Kill of a running recycled command did nothing")
	}
	state, err := l2.Wait()
	if err == nil || state == nil || state.Success() || alive(initPid(l2)) {
		t.Fatalf("killed command: %v, state %v, init alive %v", err, state, alive(initPid(l2)))
	}
	l3, _, _, err := recycledRun(t, shSpec(t, dir, `true`))
	if err != nil || initPid(l3) == initPid(l2) {
		t.Errorf("after a kill: %v, init %d (the killed one's %d)", err, initPid(l3), initPid(l2))
	}
}

// TestRecycledParallel: 8 goroutines run 5 commands each through
// StartRecycled with one policy: each command's output is its own, the
// sandboxes are reused (at most 8 kept), and none outlives
// SetRecycle(false).
func TestRecycledParallel(t *testing.T) {
	endRecycled(t)
	dir := realDir(t)
	var inits sync.Map
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				want := fmt.Sprintf("g%d-%d", g, i)
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				var out syncBuffer
				l, err := StartRecycled(ctx, shSpec(t, dir, "echo "+want), Stdio{Stdout: &out, WaitDelay: 5 * time.Second}, nil)
				if err == nil {
					inits.Store(initPid(l), true)
					timer := time.AfterFunc(testTimeout, func() { _ = l.Process.Kill() })
					_, err = l.Wait()
					timer.Stop()
				}
				cancel()
				if err == nil && strings.TrimSpace(out.String()) != want {
					err = fmt.Errorf("output %q, want %q", out.String(), want)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n := 0
	inits.Range(func(any, any) bool { n++; return true })
	if n >= 40 {
		t.Errorf("40 commands ran in %d sandboxes: none was reused", n)
	}
	SetRecycle(false)
	inits.Range(func(pid, _ any) bool {
		if alive(pid.(int)) {
			t.Errorf("init %d outlived SetRecycle(false)", pid)
		}
		return true
	})
}

// TestRecycledIdleEnds: a kept sandbox ends once it was idle for
// maxIdleTime, and recycling leaves no descriptor or child behind.
func TestRecycledIdleEnds(t *testing.T) {
	SetPrewarm(false) // no ready trampoline; recycling alone
	defer SetPrewarm(true)
	SetRecycle(true)
	recycled.Lock()
	maxIdleTime = 300 * time.Millisecond
	recycled.Unlock()
	defer func() {
		recycled.Lock()
		maxIdleTime = 30 * time.Second
		recycled.Unlock()
	}()
	dir := realDir(t)
	run(t, shSpec(t, dir, `true`), Stdio{}) // first use starts the keeper threads
	before := fdCount(t)
	l1, _, _, err := recycledRun(t, shSpec(t, dir, `echo x; echo y >&2`))
	if err != nil {
		t.Fatal(err)
	}
	l2, _, _, err := recycledRun(t, shSpec(t, dir, `echo x; echo y >&2`))
	if err != nil || initPid(l2) != initPid(l1) {
		t.Fatalf("second command: %v, init %d (first %d)", err, initPid(l2), initPid(l1))
	}
	if !alive(initPid(l1)) {
		t.Fatal("the sandbox was not kept")
	}
	deadline := time.Now().Add(testTimeout)
	for alive(initPid(l1)) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(initPid(l1)) {
		t.Fatalf("the idle sandbox (init %d) did not end", initPid(l1))
	}
	SetRecycle(false) // waits for the ends under way
	if after := fdCount(t); after != before {
		t.Errorf("descriptors: %d before, %d after", before, after)
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("children left: %v", kids)
	}
}

// TestRecycledHoldsNamesMadeLater: a kept sandbox's masks cover the names
// that existed when it was built. A read-denied file and a protected name
// made afterwards (by the host between commands) must still be refused
// to the next command in it, by the supervisor; a sandbox without the
// supervisor, whose masks are all it has, is never kept.
func TestRecycledHoldsNamesMadeLater(t *testing.T) {
	endRecycled(t)
	dir := realDir(t)
	files := []policy.Spec{{WriteRoots: []string{dir}, ReadDeny: []string{"*.key"}, Protected: []string{".envrc"}}}
	spec := shSpec(t, dir, `true`)
	spec.Files = files
	l1, out, _, err := recycledRun(t, spec)
	if err != nil {
		t.Fatalf("first command: %v\n%s", err, out)
	}
	for _, err := range []error{
		os.WriteFile(filepath.Join(dir, "later.key"), []byte("SECRET-VALUE\n"), 0o644),
		os.MkdirAll(filepath.Join(dir, "deep/er"), 0o755),
		os.WriteFile(filepath.Join(dir, "deep/er/.envrc"), []byte("orig\n"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	spec = shSpec(t, dir, `echo ran
cat later.key; cat /proc/self/root`+dir+`/later.key
ln later.key copy 2>/dev/null && cat copy
echo pwned > deep/er/.envrc || echo refused
echo pwned > .envrc || echo refused-new`)
	spec.Files = files
	l2, out, _, err := recycledRun(t, spec)
	if initPid(l2) != initPid(l1) {
		t.Fatalf("the second command did not run in the kept sandbox")
	}
	if !strings.Contains(out, "ran") || strings.Contains(out, "SECRET-VALUE") {
		t.Errorf("a read-denied file made after the sandbox was built was read (err %v):\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "deep/er/.envrc")); string(b) != "orig\n" || !strings.Contains(out, "refused-new") {
		t.Errorf("a protected name made after the sandbox was built was written: %q\n%s", b, out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".envrc")); err == nil {
		t.Errorf("a new protected name was created in a kept sandbox")
	}

	spec = shSpec(t, dir, `true`)
	spec.NoSeccomp = true
	l3, out, state, err := recycledRun(t, spec)
	if err != nil || state == nil || alive(initPid(l3)) {
		t.Errorf("without the supervisor: %v, state %v, init kept %v\n%s", err, state, alive(initPid(l3)), out)
	}
}

// TestRecycledNotStale: a kept sandbox shows its commands the objects its
// paths named when it was built (its write root is a mount of the
// directory it was, a protected file is bound over itself, a Landlock
// rule is on an inode). When the host changes what a path names between
// commands (a protected file replaced by a rename, a program upgraded the
// same way, the workspace removed and made again), the next command must
// see the new object, in a new sandbox: the new file's content, the new
// program run, its write on the host's disk.
func TestRecycledNotStale(t *testing.T) {
	endRecycled(t)
	abi, err := landlock.ABI()
	if err != nil || abi < 1 {
		t.Skipf("no Landlock here: %v", err)
	}
	base, progDir := realDir(t), realDir(t)
	ws := filepath.Join(base, "ws")
	prog := filepath.Join(progDir, "prog")
	replace := func(path, content string, mode os.FileMode) {
		t.Helper()
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	replace(filepath.Join(ws, ".envrc"), "one\n", 0o644)
	replace(prog, "#!/bin/sh\necho prog-one\n", 0o755)
	spec := func(script string) *Spec {
		s := shSpec(t, ws, script)
		s.Files = []policy.Spec{{WriteRoots: []string{ws}, Protected: []string{".envrc"}}}
		s.Landlock = &landlock.Ruleset{ABI: abi, Rules: []landlock.Rule{
			{Path: "/", Access: landlock.ReadFile | landlock.ReadDir},
			{Path: "/usr", Access: landlock.ReadExec},
			{Path: ws, Access: landlock.HandledFS(abi)},
			{Path: prog, Access: landlock.ReadExec},
		}}
		s.Landlock.Normalize()
		return s
	}
	script := `cat .envrc; ` + prog + `; echo w > written`
	l1, out, _, err := recycledRun(t, spec(script))
	if err != nil || !strings.Contains(out, "one") || !strings.Contains(out, "prog-one") {
		t.Fatalf("first command: %v\n%s", err, out)
	}
	l2, out, _, err := recycledRun(t, spec(script))
	if err != nil || initPid(l2) != initPid(l1) {
		t.Fatalf("unchanged, the second command must reuse the sandbox: %v, init %d then %d\n%s", err, initPid(l1), initPid(l2), out)
	}

	replace(filepath.Join(ws, ".envrc"), "two\n", 0o644)
	l3, out, _, err := recycledRun(t, spec(script))
	if err != nil || !strings.Contains(out, "two") || initPid(l3) == initPid(l2) {
		t.Errorf("after .envrc was replaced: %v, init %d (before %d)\n%s", err, initPid(l3), initPid(l2), out)
	}

	replace(prog, "#!/bin/sh\necho prog-two\n", 0o755)
	l4, out, _, err := recycledRun(t, spec(script))
	if err != nil || !strings.Contains(out, "prog-two") || initPid(l4) == initPid(l3) {
		t.Errorf("after the program was replaced: %v, init %d (before %d)\n%s", err, initPid(l4), initPid(l3), out)
	}

	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	replace(filepath.Join(ws, ".envrc"), "three\n", 0o644)
	l5, out, _, err := recycledRun(t, spec(script))
	if err != nil || !strings.Contains(out, "three") || initPid(l5) == initPid(l4) {
		t.Errorf("after the workspace was made again: %v, init %d (before %d)\n%s", err, initPid(l5), initPid(l4), out)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "written")); err != nil || string(b) != "w\n" {
		t.Errorf("the command's write is not in the workspace the host sees: %q, %v", b, err)
	}
}

// TestRecycledClearsKeys: keys a command adds to the keyrings that outlive
// it in a kept sandbox (its user's keyring and user session keyring, which
// belong to the sandbox's user namespace, and the session keyring
// inherited from init) are gone when the next command runs in that
// sandbox, as in a sandbox of its own.
func TestRecycledClearsKeys(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed")
	}
	endRecycled(t)
	dir := realDir(t)
	keys := `python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_add_key, SYS_keyctl, KEYCTL_SEARCH = 248, 250, 10
for ring in (-3, -4, -5):
    name = b"k%d" % -ring
    if sys.argv[1] == "add":
        r = libc.syscall(SYS_add_key, b"user", name, b"SECRET", 6, ctypes.c_int(ring))
    else:
        r = libc.syscall(SYS_keyctl, KEYCTL_SEARCH, ctypes.c_int(ring), b"user", name, 0)
    print(sys.argv[1], ring, "found" if r > 0 else "none", ctypes.get_errno())
' `
	l1, out, _, err := recycledRun(t, shSpec(t, dir, keys+"add"))
	if err != nil || strings.Count(out, "found") != 3 {
		t.Fatalf("adding the keys: %v\n%s", err, out)
	}
	l2, out, _, err := recycledRun(t, shSpec(t, dir, keys+"search"))
	if err != nil || initPid(l2) != initPid(l1) {
		t.Fatalf("the second command: %v, init %d (first %d)\n%s", err, initPid(l2), initPid(l1), out)
	}
	if strings.Contains(out, "found") || strings.Count(out, "none") != 3 {
		t.Errorf("the next command finds the last one's keys:\n%s", out)
	}
}

// TestRecycleOffEndsAfterWait: with recycling off and the pool on, each
// command gets a sandbox of its own, ended after the command's Wait
// rather than in it. A command leaves a background job and a daemon that
// keep writing: both are dead by the time Wait returns (init killed them
// before its report); its init ends by itself soon after, never kept; the
// next command runs in another init; SetRecycle(false) waits for the ends
// under way. With the pool off as well, StartRecycled is Start: Wait
// returns once init is gone.
func TestRecycleOffEndsAfterWait(t *testing.T) {
	endRecycled(t)
	SetRecycle(false)
	if !EndsAfterWait() {
		t.Skip("no sandbox outlives its Wait here (this Go's os.ProcessState cannot be made)")
	}
	dir := realDir(t)
	l1, out, state, err := recycledRun(t, shSpec(t, dir, leftWriting+"sleep 0.2\nexit 3"))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || state == nil || state.ExitCode() != 3 {
		t.Fatalf("first command: err %v, state %v, want *exec.ExitError 3\n%s", err, state, out)
	}
	init1 := initPid(l1)
	if state.Pid() != init1 || l1.Process.Pid != -1 {
		t.Errorf("state's pid %d, Process's pid %d: want init's %d, and Process released", state.Pid(), l1.Process.Pid, init1)
	}
	writersStopped(t, dir)
	for deadline := time.Now().Add(testTimeout); alive(init1); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("init %d of a command with recycling off still runs %v after its Wait", init1, testTimeout)
		}
	}

	l2, out, _, err := recycledRun(t, shSpec(t, dir, "echo two"))
	if err != nil || out != "two\n" {
		t.Fatalf("second command: err %v, output %q", err, out)
	}
	if initPid(l2) == init1 {
		t.Error("the second command ran in the first's sandbox")
	}
	SetRecycle(false) // waits for the end under way
	if alive(initPid(l2)) {
		t.Errorf("init %d outlived SetRecycle(false)", initPid(l2))
	}

	SetPrewarm(false)
	defer SetPrewarm(true)
	if EndsAfterWait() {
		t.Fatal("EndsAfterWait with recycling and the pool off")
	}
	l3, out, state, err := recycledRun(t, shSpec(t, dir, "echo three"))
	if err != nil || out != "three\n" || l3.InSession() {
		t.Fatalf("with the pool off: err %v, output %q, in a session %v", err, out, l3.InSession())
	}
	if alive(state.Pid()) {
		t.Errorf("with the pool off, init %d outlived the command's Wait", state.Pid())
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("children left: %v", kids)
	}
}

// TestEndCount: wait returns at once with no end under way, and otherwise
// only once every end under way (and every end added before they are
// over) is done; ends start and are waited for from any goroutine, also
// while a wait is under way, which a sync.WaitGroup forbids.
func TestEndCount(t *testing.T) {
	var e endCount
	e.wait()
	e.add(2)
	waited := make(chan struct{})
	go func() { e.wait(); close(waited) }()
	e.done()
	select {
	case <-waited:
		t.Fatal("wait returned with an end under way")
	case <-time.After(50 * time.Millisecond):
	}
	e.done()
	select {
	case <-waited:
	case <-time.After(testTimeout):
		t.Fatal("wait did not return once the ends were done")
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					e.wait()
				}
			}
		})
	}
	for range 2000 {
		e.add(1)
		go e.done()
	}
	close(stop)
	wg.Wait()
	done := make(chan struct{})
	go func() { e.wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("wait did not return once every end was done")
	}
}
