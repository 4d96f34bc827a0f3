//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
)

// execJudge records every ExecCall and refuses the programs whose base
// name is in deny.
type execJudge struct {
	mu      sync.Mutex
	calls   []ExecCall
	changed []ExecCall
	deny    []string
	hold    func(*ExecCall) // runs before answering (a slow host)
}

func (j *execJudge) judge(ec *ExecCall) bool {
	j.mu.Lock()
	if ec.Changed {
		j.changed = append(j.changed, *ec)
	} else {
		j.calls = append(j.calls, *ec)
	}
	hold := j.hold
	j.mu.Unlock()
	if hold != nil {
		hold(ec)
	}
	return !slices.Contains(j.deny, filepath.Base(ec.Program))
}

func (j *execJudge) programs() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for _, c := range j.calls {
		out = append(out, filepath.Base(c.Program))
	}
	return out
}

// TestExecJudgedInSandbox runs a shell that starts programs: each one
// after the target is sent to the host with its real path, argv, working
// directory and parent; a refused one fails with EACCES in the shell and
// runs nothing. Both ways init starts the target are taken.
func TestExecJudgedInSandbox(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("python3 is needed for the exec from a second thread")
	}
	for _, stage := range []bool{false, true} {
		t.Run(map[bool]string{false: "forked", true: "stage"}[stage], func(t *testing.T) {
			if stage {
				forceStage = true
				t.Cleanup(func() { forceStage = false })
			}
			dir := realDir(t)
			if err := os.WriteFile(filepath.Join(dir, "denied.sh"), []byte("#!/bin/sh\necho DENIED-RAN\ntouch ran-denied\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "ok.sh"), []byte("#!/bin/sh -e\necho ok-ran \"$@\"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			// Allowed by the judge, refused by the kernel (not executable):
			// the shell stays traced after its failed exec and goes on.
			if err := os.WriteFile(filepath.Join(dir, "noexec.sh"), []byte("#!/bin/sh\necho never\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			spec := shSpec(t, dir, `/bin/echo allowed-ran
./denied.sh; echo "denied=$?"
./ok.sh one "two words"
for i in 1 2 3; do /bin/true; done
sh -c '/bin/echo nested'
X=1 /bin/true
python3 -c 'import os, threading; t = threading.Thread(target=lambda: os.execv("/bin/echo", ["echo", "from-thread"])); t.start(); t.join()'
./noexec.sh; echo "noexec=$?"
/bin/echo after-failed-exec
`)
			j := &execJudge{deny: []string{"denied.sh"}}
			spec.JudgeExec = j.judge
			var stdout, stderr bytes.Buffer
			l, state, err := run(t, spec, Stdio{Stdout: &stdout, Stderr: &stderr})
			if err != nil || !state.Success() {
				t.Fatalf("%v %v\n%s\n%s", err, state, &stdout, &stderr)
			}
			if !l.Report.Exec {
				t.Skipf("execs are not judged here: %v", l.Report)
			}
			out := stdout.String()
			for _, want := range []string{"allowed-ran", "denied=126", "ok-ran one two words", "nested", "from-thread", "noexec=126", "after-failed-exec"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s\n%s", want, out, &stderr)
				}
			}
			if strings.Contains(out, "DENIED-RAN") {
				t.Errorf("the refused script ran")
			}
			if _, err := os.Stat(filepath.Join(dir, "ran-denied")); err == nil {
				t.Errorf("the refused script left its file")
			}
			echo, _ := filepath.EvalSymlinks("/bin/echo")
			truth, _ := filepath.EvalSymlinks("/bin/true")
			sh, _ := filepath.EvalSymlinks("/bin/sh")
			got := j.programs()
			py, _ := filepath.EvalSymlinks("/usr/bin/python3")
			want := []string{filepath.Base(echo), "denied.sh", "ok.sh", filepath.Base(truth), filepath.Base(truth), filepath.Base(truth), filepath.Base(sh), filepath.Base(echo), filepath.Base(truth),
				filepath.Base(py), filepath.Base(echo), // the last from a thread that is not its process's first
				"noexec.sh", filepath.Base(echo)}
			if !slices.Equal(got, want) {
				t.Errorf("judged %q, want %q", got, want)
			}
			j.mu.Lock()
			defer j.mu.Unlock()
			for _, c := range j.calls {
				if c.Dir != dir {
					t.Errorf("%s: dir %q, want %q", c.Program, c.Dir, dir)
				}
				base := filepath.Base(c.Program)
				switch {
				case base == "ok.sh":
					if !slices.Equal(c.Argv, []string{"./ok.sh", "one", "two words"}) || !slices.Equal(c.Interp, []string{sh}) {
						t.Errorf("script: argv %q interp %q", c.Argv, c.Interp)
					}
					if c.PPid != l.Report.Pid {
						t.Errorf("script's parent %d, want the target %d", c.PPid, l.Report.Pid)
					}
				case c.Program == echo && slices.Equal(c.Argv, []string{"/bin/echo", "nested"}):
					if c.PPid == l.Report.Pid || c.PPid == 0 {
						t.Errorf("nested echo's parent %d should be the inner sh, not the target %d", c.PPid, l.Report.Pid)
					}
				case slices.Contains(c.Set, "X=1"):
					if c.Program != truth {
						t.Errorf("X=1 set for %s", c.Program)
					}
				}
				if slices.ContainsFunc(c.Set, func(kv string) bool { return strings.HasPrefix(kv, "GREETING=") }) {
					t.Errorf("%s: Set holds the command's own variable: %q", c.Program, c.Set)
				}
			}
			if len(j.changed) != 0 {
				t.Errorf("execs killed as changed: %+v", j.changed)
			}
		})
	}
}

// execRace is a hostile child: in a forked process, one thread flips the
// name of the program it passes to execve between an allowed script and a
// refused one (same length, same buffer) while the main thread calls
// execve on it, over and over. The host's judge is slow (so the flip
// lands between the supervisor's read and the kernel's); the refused
// script would leave a file. Each attempt reports how the forked process
// ended.
const execRace = `
import ctypes, os, sys, threading, time, signal
d = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
good = (d + "/ok.sh").encode()
bad = (d + "/no.sh").encode()
assert len(good) == len(bad)
name = ctypes.create_string_buffer(good, len(good) + 1)
arg0 = ctypes.create_string_buffer(b"race")
argv = (ctypes.c_char_p * 2)(ctypes.addressof(arg0), None)
envp = (ctypes.c_char_p * 1)(None)
killed = ran = refused = 0
for attempt in range(int(sys.argv[2])):
    pid = os.fork()
    if pid == 0:
        stop = False
        def flip():
            while not stop:
                ctypes.memmove(name, bad, len(bad))
                ctypes.memmove(name, good, len(good))
        threading.Thread(target=flip, daemon=True).start()
        for _ in range(20):
            libc.execve(name, argv, envp)
        os._exit(3)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        killed += 1
    elif os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        ran += 1
    else:
        refused += 1
print("killed=%d" % killed)
print("ran=%d" % ran)
print("refused=%d" % refused)
print("done=1")
`

// TestAttackExecRace: a program name flipped by another thread after the
// supervisor read it is caught at the exec stop: the refused script never
// runs (its file is never written), and the processes where the kernel
// read the other name are killed before their first instruction.
func TestAttackExecRace(t *testing.T) {
	py, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := realDir(t)
	for name, body := range map[string]string{
		"ok.sh": "#!/bin/sh\nexit 0\n",
		"no.sh": "#!/bin/sh\ntouch \"$(dirname \"$0\")/pwned\"\nexit 0\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := &Spec{
		Path:  py,
		Args:  []string{"python3", "-c", execRace, dir, "12"},
		Env:   []string{"PYTHONDONTWRITEBYTECODE=1"},
		Dir:   dir,
		Files: []policy.Spec{{WriteRoots: []string{dir}}},
	}
	j := &execJudge{deny: []string{"no.sh"}, hold: func(ec *ExecCall) {
		if filepath.Base(ec.Program) == "ok.sh" {
			time.Sleep(5 * time.Millisecond) // a slow host: the flip lands meanwhile
		}
	}}
	spec.JudgeExec = j.judge
	var stdout, stderr bytes.Buffer
	l, state, err := run(t, spec, Stdio{Stdout: &stdout, Stderr: &stderr})
	if err != nil || !state.Success() {
		t.Fatalf("%v %v\n%s\n%s", err, state, &stdout, &stderr)
	}
	if !l.Report.Exec {
		t.Skipf("execs are not judged here: %v", l.Report)
	}
	t.Logf("attacker:\n%s", &stdout)
	if !strings.Contains(stdout.String(), "done=1") {
		t.Fatalf("the attacker did not finish:\n%s\n%s", &stdout, &stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Errorf("the refused script ran: the flipped name reached the kernel unchecked")
	}
	progs := j.programs()
	if !slices.Contains(progs, "ok.sh") || !slices.Contains(progs, "no.sh") {
		t.Errorf("the judge did not see both names (the attack did not run): %q", progs)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.changed) == 0 {
		t.Errorf("no exec was caught changed: the race never landed, so this run proves nothing")
	}
	for _, c := range j.changed {
		if filepath.Base(c.Program) != "ok.sh" {
			t.Errorf("changed report for %s, want the judged ok.sh", c.Program)
		}
	}
}

// TestMemfdNoExec: a memfd asked for as executable cannot be made in the
// sandbox, and a plain one cannot be run, by execveat or through
// /proc/self/fd, even with exec judgement off.
func TestMemfdNoExec(t *testing.T) {
	py, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Skip("no python3")
	}
	const prog = `
import os, errno
try:
    os.memfd_create("x", 0x10)  # MFD_EXEC
    print("mfd_exec=ok")
except OSError as e:
    print("mfd_exec=" + errno.errorcode[e.errno])
fd = os.memfd_create("y", 0)
os.write(fd, open("/bin/true", "rb").read())
print("plain=made")
for name, run in (("fexecve", lambda: os.execve(fd, ["t"], {})), ("procfd", lambda: os.execv("/proc/self/fd/%d" % fd, ["t"]))):
    try:
        run()
    except OSError as e:
        print(name + "=" + errno.errorcode[e.errno])
print("done=1")
`
	dir := realDir(t)
	spec := &Spec{Path: py, Args: []string{"python3", "-c", prog}, Dir: dir, Files: []policy.Spec{{WriteRoots: []string{dir}}}}
	var stdout, stderr bytes.Buffer
	l, state, err := run(t, spec, Stdio{Stdout: &stdout, Stderr: &stderr})
	if err != nil || !state.Success() {
		t.Fatalf("%v %v\n%s\n%s", err, state, &stdout, &stderr)
	}
	if !l.Report.MemfdNoExec {
		t.Skipf("vm.memfd_noexec is not set here: %v", l.Report.Notes)
	}
	out := stdout.String()
	for _, want := range []string{"mfd_exec=EACCES", "plain=made", "fexecve=EACCES", "procfd=EACCES", "done=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s\n%s", want, out, &stderr)
		}
	}
}

// TestCollectionsAtFirstExec: init forks the target with vfork from a
// thread the runtime cannot stop until the child has exec'd, and that
// exec is trapped and judged by init's supervisor, so a garbage
// collection then would wait for the supervisor, which waits for it. The
// start must complete and the target run when:
//   - the supervisor allocates enough to start collections while it
//     judges the target's first exec (collectAtFirst);
//   - a collection is forced while the spec comes, as growHeap forces one
//     while init waits in the pool (which SetGCPercent(-1) does not hold
//     off): init forces collections for 50 ms from before the fork is due
//     (collectAtFork).
func TestCollectionsAtFirstExec(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  *bool
	}{
		{"supervisor allocates", &collectAtFirst},
		{"collection forced before the fork", &collectAtFork},
	} {
		t.Run(tc.name, func(t *testing.T) {
			*tc.set = true
			t.Cleanup(func() { *tc.set = false })
			dir := realDir(t)
			spec := shSpec(t, dir, `echo first-ran; /bin/echo second-ran`)
			j := &execJudge{}
			spec.JudgeExec = j.judge
			var stdout bytes.Buffer
			// Wedged, the start fails when its own timeout ends it (run
			// fails the test on a set-up error).
			l, state, err := run(t, spec, Stdio{Stdout: &stdout})
			if err != nil || !state.Success() {
				t.Fatalf("%v %v\n%s", err, state, &stdout)
			}
			if !l.Report.Exec {
				t.Skipf("execs are not judged here: %v", l.Report)
			}
			if got := stdout.String(); got != "first-ran\nsecond-ran\n" {
				t.Errorf("output %q", got)
			}
		})
	}
}

// TestParentBothWays checks that an exec's parent is found the same from
// a pidfd (PIDFD_GET_INFO) and, where the kernel has none, from
// /proc/<tid>/stat, for a process's leader and for another of its threads.
func TestParentBothWays(t *testing.T) {
	done := make(chan struct{})
	tids := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- unix.Gettid()
		<-done
	}()
	defer close(done)
	for _, tid := range []int{os.Getpid(), <-tids} {
		for _, stat := range []bool{false, true} {
			x := &execs{noPidfdInfo: stat}
			if ppid, ok := x.parent(tid); !ok || ppid != os.Getppid() {
				t.Errorf("tid %d, stat only %v: parent %d %v, want %d", tid, stat, ppid, ok, os.Getppid())
			}
		}
	}
}

// TestEnvScriptTarget runs a target that is a "#!/usr/bin/env sh" script:
// the supervisor reads its first exec, so the sh that env starts next is
// judged as the script's interpreter (ExecCall.InterpreterOf).
func TestEnvScriptTarget(t *testing.T) {
	if ok, why := ExecJudgeable(); !ok {
		t.Skip(why)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env sh\necho ran > out.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := shSpec(t, dir, "")
	spec.Path, spec.Args, spec.Env = script, []string{"run.sh"}, []string{"PATH=/usr/bin:/bin"}
	var mu sync.Mutex
	var of []string
	spec.JudgeExec = func(ec *ExecCall) bool {
		mu.Lock()
		of = append(of, ec.InterpreterOf)
		mu.Unlock()
		return true
	}
	var out bytes.Buffer
	l, st, err := run(t, spec, Stdio{Stdout: &out, Stderr: &out})
	if err != nil || !st.Success() {
		t.Fatalf("%v %v: %s", st, err, out.Bytes())
	}
	if !l.Report.Exec {
		t.Skip("execs are not judged here")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(b) != "ran\n" {
		t.Fatalf("the script did not run: %q %v", b, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(of, script) {
		t.Errorf("no exec was judged as the interpreter of %s: %q", script, of)
	}
}
