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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
)

// sessionRun runs spec as the session's next command and waits for it.
func sessionRun(t *testing.T, s *Session, spec *Spec) (l *Launch, out string, state *os.ProcessState, err error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	l, state, err = startWait(t, func(ctx context.Context) (*Launch, error) {
		return s.Start(ctx, spec, Stdio{Stdout: &stdout, Stderr: &stderr, WaitDelay: 5 * time.Second}, nil)
	})
	return l, stdout.String() + stderr.String(), state, err
}

// TestSessionCommands runs commands one after another in one session, as
// a hostile first command would leave it: a background job and a daemon
// that left its session (setsid) keep writing, and a file outside the
// write root is tried. The next command must run in the same sandbox
// (the same init), find nothing of the first still running, keep its own
// environment, and be held by the same confinement.
func TestSessionCommands(t *testing.T) {
	dir, outside := realDir(t), realDir(t)
	var s Session
	defer s.Close()

	spec := shSpec(t, dir, `echo one > a
`+leftWriting+`sleep 0.2
echo "env=$GREETING"
exit 3`)
	l1, out, state, err := sessionRun(t, &s, spec)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || state != nil {
		t.Fatalf("first command: err %v (%T), state %v, want *ExitError 3 and no state\n%s", err, err, state, out)
	}
	if !strings.Contains(out, "env=hello") || l1.Exit() == nil || l1.Exit().Code != 3 {
		t.Fatalf("first command: output %q, exit %+v", out, l1.Exit())
	}
	writersStopped(t, dir)

	spec = shSpec(t, dir, `cat a
echo "env=$GREETING"
echo "procs=$(ls /proc | grep -c '^[0-9]')"
echo leak > `+filepath.Join(outside, "escaped")+` || echo refused
echo two > b`)
	spec.Env = []string{"GREETING=again"}
	l2, out, state, err := sessionRun(t, &s, spec)
	if err != nil || state != nil {
		t.Fatalf("second command: %v, state %v\n%s", err, state, out)
	}
	if l2.Process.Pid != l1.Process.Pid {
		t.Errorf("the second command ran in a new sandbox (init %d, then %d)", l1.Process.Pid, l2.Process.Pid)
	}
	// init, sh, and the subshell, ls and grep of the substitution at most.
	for _, want := range []string{"one", "env=again", "refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("second command's output lacks %q:\n%s", want, out)
		}
	}
	if n := procsIn(out); n < 2 || n > 5 {
		t.Errorf("the second command saw %d processes in its sandbox, want init and its own:\n%s", n, out)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Errorf("a session's second command wrote outside the write root")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "b")); err != nil || string(b) != "two\n" {
		t.Errorf("the second command's write: %q, %v", b, err)
	}
	if !l2.Report.Seccomp || l2.Report.String() != l1.Report.String() {
		t.Errorf("the second command's report lost confinement: %v (first: %v)", l2.Report, l1.Report)
	}

	// A command with another policy gets a sandbox of its own.
	spec = shSpec(t, dir, `echo three > c`)
	spec.Files = []policy.Spec{{WriteRoots: []string{dir}, Protected: []string{"*.key"}}}
	l3, out, _, err := sessionRun(t, &s, spec)
	if err != nil {
		t.Fatalf("third command: %v\n%s", err, out)
	}
	if l3.Process.Pid == l1.Process.Pid {
		t.Errorf("a command with another policy ran in the session's old sandbox")
	}
	if alive(l1.Process.Pid) {
		t.Errorf("the session's old sandbox (init %d) still runs", l1.Process.Pid)
	}

	// Closed: the sandbox is gone and nothing more starts.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(l3.Process.Pid) {
		t.Errorf("init %d outlived the session's Close", l3.Process.Pid)
	}
	if _, err := s.Start(context.Background(), spec, Stdio{}, nil); !errors.Is(err, ErrSessionClosed) {
		t.Errorf("Start after Close: %v, want ErrSessionClosed", err)
	}
}

// leftWriting is a script that leaves two writers behind, each appending
// to a file of dir every 20 ms: a background job and a daemon that left
// its session (setsid).
const leftWriting = `(while :; do echo x >> tick-bg; sleep 0.02; done) &
setsid sh -c 'while :; do echo x >> tick-daemon; sleep 0.02; done' &
`

// writersStopped fails when a writer of leftWriting never wrote in dir,
// or still writes after the command that started it ended.
func writersStopped(t *testing.T, dir string) {
	t.Helper()
	sizes := func() [2]int64 {
		var n [2]int64
		for i, name := range []string{"tick-bg", "tick-daemon"} {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("the first command's %s never ran: %v", name, err)
			}
			n[i] = fi.Size()
		}
		return n
	}
	before := sizes()
	time.Sleep(300 * time.Millisecond)
	if after := sizes(); after != before {
		t.Errorf("the first command's processes still write after it ended: %v, then %v", before, after)
	}
}

// procsIn reads the "procs=N" line of a command's output.
func procsIn(out string) int {
	_, rest, ok := strings.Cut(out, "procs=")
	if !ok {
		return -1
	}
	line, _, _ := strings.Cut(rest, "\n")
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return -1
	}
	return n
}

// alive reports whether pid is a process that has not been reaped.
func alive(pid int) bool { return unix.Kill(pid, 0) == nil }

// TestSessionBusyAndKilled: a second Start while a command runs is
// refused with ErrSessionBusy (the caller runs it elsewhere); a command
// killed by its host ends the session's sandbox, and the next command
// starts in a new one.
func TestSessionBusyAndKilled(t *testing.T) {
	dir := realDir(t)
	var s Session
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var out syncBuffer
	l, err := s.Start(ctx, shSpec(t, dir, `echo started; exec sleep 30`), Stdio{Stdout: &out, WaitDelay: 5 * time.Second}, nil)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("no sandbox here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(testTimeout, func() { _ = l.Process.Kill() })
	defer timer.Stop()
	if _, err := s.Start(ctx, shSpec(t, dir, `true`), Stdio{}, nil); !errors.Is(err, ErrSessionBusy) {
		t.Errorf("Start while a command runs: %v, want ErrSessionBusy", err)
	}
	for !strings.Contains(out.String(), "started") && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	_ = l.Process.Kill()
	state, err := l.Wait()
	if state == nil || err == nil || l.Exit() != nil {
		t.Fatalf("a killed command: state %v, err %v, exit %+v; want init's state and an error", state, err, l.Exit())
	}
	l2, got, _, err := sessionRun(t, &s, shSpec(t, dir, `echo after`))
	if err != nil || !strings.Contains(got, "after") {
		t.Fatalf("the command after a kill: %v\n%s", err, got)
	}
	if l2.Process.Pid == l.Process.Pid {
		t.Errorf("the command after a kill ran in the killed sandbox")
	}
}

// TestSessionExecsJudgedPerCommand: with execs judged, each command's
// programs go to its own JudgeExec, the target's own exec to none, and a
// refusal in one command does not carry over to the next.
func TestSessionExecsJudgedPerCommand(t *testing.T) {
	if ok, why := ExecJudgeable(); !ok {
		t.Skipf("execs are not judged here: %s", why)
	}
	dir := realDir(t)
	var s Session
	defer s.Close()
	j1 := &execJudge{deny: []string{"true"}}
	spec := shSpec(t, dir, `/bin/echo first; /bin/true; echo "true=$?"`)
	spec.JudgeExec = j1.judge
	l1, out, _, err := sessionRun(t, &s, spec)
	if err != nil {
		t.Fatalf("first: %v\n%s", err, out)
	}
	if !l1.Report.Exec {
		t.Skipf("execs are not judged here: %v", l1.Report)
	}
	if !strings.Contains(out, "true=126") {
		t.Errorf("the first command's refused /bin/true ran:\n%s", out)
	}
	j2 := &execJudge{}
	spec = shSpec(t, dir, `/bin/true; echo "true=$?"; /bin/echo second`)
	spec.JudgeExec = j2.judge
	l2, out, _, err := sessionRun(t, &s, spec)
	if err != nil || l2.Process.Pid != l1.Process.Pid {
		t.Fatalf("second: %v (init %d, first %d)\n%s", err, l2.Process.Pid, l1.Process.Pid, out)
	}
	if !strings.Contains(out, "true=0") || !strings.Contains(out, "second") {
		t.Errorf("the second command's programs did not run as judged:\n%s", out)
	}
	echo, _ := filepath.EvalSymlinks("/bin/echo")
	truth, _ := filepath.EvalSymlinks("/bin/true")
	if got, want := j1.programs(), []string{filepath.Base(echo), filepath.Base(truth)}; !equal(got, want) {
		t.Errorf("first command's judge saw %q, want %q", got, want)
	}
	if got, want := j2.programs(), []string{filepath.Base(truth), filepath.Base(echo)}; !equal(got, want) {
		t.Errorf("second command's judge saw %q, want %q", got, want)
	}
}

func equal(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// TestSessionStageRunsOne: where the target starts through a stage (ptrace
// refused), init's thread is not confined, so its sandbox runs one command
// and the next starts in a new one.
func TestSessionStageRunsOne(t *testing.T) {
	forceStage = true
	t.Cleanup(func() { forceStage = false })
	dir := realDir(t)
	var s Session
	defer s.Close()
	l1, out1, _, err1 := sessionRun(t, &s, shSpec(t, dir, `echo one`))
	l2, out2, _, err2 := sessionRun(t, &s, shSpec(t, dir, `echo two`))
	if err1 != nil || err2 != nil || !strings.Contains(out1, "one") || !strings.Contains(out2, "two") {
		t.Fatalf("%v %q; %v %q", err1, out1, err2, out2)
	}
	if l1.Process.Pid == l2.Process.Pid {
		t.Errorf("a sandbox whose target started through a stage ran a second command")
	}
}

// TestSessionClearsIPC: System V IPC objects a command made (shared
// memory, a message queue, a semaphore set) are gone when the session's
// next command runs, as in a sandbox of its own.
func TestSessionClearsIPC(t *testing.T) {
	for _, p := range []string{"ipcmk", "ipcs"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is needed: %v", p, err)
		}
	}
	dir := realDir(t)
	var s Session
	defer s.Close()
	_, out, _, err := sessionRun(t, &s, shSpec(t, dir, `ipcmk -M 4096 && ipcmk -Q && ipcmk -S 2 && ipcs | grep -c 0x || true`))
	if err != nil || strings.Count(out, "id:") != 3 {
		t.Fatalf("making the objects: %v\n%s", err, out)
	}
	_, out, _, err = sessionRun(t, &s, shSpec(t, dir, `ipcs -m -q -s | grep -c '^0x' || true`))
	if err != nil || strings.TrimSpace(out) != "0" {
		t.Errorf("the next command sees the last one's IPC objects: %v\n%s", err, out)
	}
}

// TestSessionConcurrentUse: goroutines share one Session, each falling
// back to a sandbox of its own when it is busy (as procguard does), while
// Close comes at the end: every command runs once with its own output, and
// Close leaves no init.
func TestSessionConcurrentUse(t *testing.T) {
	dir := realDir(t)
	var s Session
	var inits sync.Map
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 4 {
		wg.Go(func() {
			for i := range 4 {
				want := fmt.Sprintf("g%d-%d", g, i)
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				var out syncBuffer
				stdio := Stdio{Stdout: &out, WaitDelay: 5 * time.Second}
				spec := shSpec(t, dir, "echo "+want)
				l, err := s.Start(ctx, spec, stdio, nil)
				if errors.Is(err, ErrSessionBusy) {
					l, err = Start(ctx, spec, stdio, nil, nil)
				}
				if err == nil {
					inits.Store(l.Process.Pid, true)
					_, err = l.Wait()
				}
				cancel()
				if err == nil && strings.TrimSpace(out.String()) != want {
					err = fmt.Errorf("output %q, want %q", out.String(), want)
				}
				if err != nil && !errors.Is(err, ErrUnavailable) {
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
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	inits.Range(func(pid, _ any) bool {
		if alive(pid.(int)) {
			t.Errorf("init %d outlived its commands and the session's Close", pid)
		}
		return true
	})
}

// TestSessionNoLeaks: a session that ran commands (one killed, so its
// sandbox was rebuilt) and was closed leaves no descriptor, goroutine-held
// socket or child behind.
func TestSessionNoLeaks(t *testing.T) {
	SetPrewarm(false)
	defer SetPrewarm(true)
	dir := realDir(t)
	run(t, shSpec(t, dir, `true`), Stdio{}) // first use starts the keeper threads
	before := fdCount(t)
	var s Session
	for i := range 4 {
		spec := shSpec(t, dir, `echo x; echo y >&2`)
		if i == 2 {
			spec = shSpec(t, dir, `exec sleep 30`)
		}
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		l, err := s.Start(ctx, spec, Stdio{Stdin: strings.NewReader("z"), Stdout: &out, Stderr: &out, WaitDelay: 5 * time.Second}, nil)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if i == 2 && !l.Kill() { // the host kills it: the sandbox goes
			t.Error("Kill of a running session command did nothing")
		}
		_, err = l.Wait()
		cancel()
		if i != 2 && err != nil {
			t.Fatalf("command %d: %v\n%s", i, err, &out)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after := fdCount(t); after != before {
		t.Errorf("descriptors: %d before, %d after", before, after)
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("children left: %v", kids)
	}
}
