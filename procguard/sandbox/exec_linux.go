//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/procguard/internal/seccomp"
)

// Every program a process of the sandbox starts after the target is
// judged when it starts. The supervisor traps execve and execveat
// (seccomp.Filter.Exec), reads the program, argv and environment once and
// resolves the program in the caller's context, and the host judges it
// (Spec.JudgeExec) with the command's policies and callbacks. An allowed
// exec then goes on in the kernel, which reads the name, argv and
// environment from the caller's memory again: another thread, a process
// sharing the memory, or a writer of a shared mapping could change them
// in between. So the supervisor seizes the caller with ptrace(2) just
// before it lets the exec go on, and at the exec stop (the new program
// loaded, none of its instructions run) compares what the kernel ran
// with what was judged: the file mapped (/proc/<pid>/exe, by device and
// inode), the argv and the environment as the kernel copied them
// (/proc/<pid>/cmdline and environ). A difference kills the process
// there; either way it is detached and runs on untraced. An exec that
// fails leaves the caller traced until its next signal, when it is
// detached with the signal passed on (or until it exits or execs again).
//
// The serving thread is the tracer (ptrace requests must come from the
// thread that attached); the reaper, which waits for every process of
// the namespace, hands it the stops it sees.
//
// The reaper, like the serving loop, loops in system calls and never
// blocks in Go: to Go's scheduler it is one goroutine that runs on and
// on, and sysmon takes the P of one that ran 10 ms without rescheduling,
// each take setting sysmon polling every 20 µs again. It wakes for every
// exec stop, so it yields its P now and then as well (seccomp.Yield).

// execs is the supervisor's state for exec calls. pending and cmd are
// the serving thread's alone; mu guards what the reaper touches.
type execs struct {
	cmd     *command             // the command whose target's own exec was seen last
	judged  *ExecCall            // the exec decideExec allowed last, for beforeExec
	pending map[int]*expectation // seized callers, by thread id
	base    map[string]bool      // the command's own environment entries
	// Buffers for the proc files read for every exec.
	statBuf, cmdBuf, envBuf []byte
	noPidfdInfo             bool // the kernel has no PIDFD_GET_INFO: parent reads stat
	// allowed holds the execs the host allowed and said it would allow
	// again without asking (judgement.Cache), by ExecCall.key.
	allowed map[string]bool
	// envScripts: processes running env as a script's "#!/usr/bin/env
	// NAME" interpreter, by thread group id: the script and NAME.
	envScripts map[int][2]string

	efd int // eventfd: the reaper wrote stops for the serving thread
	// repeats are reports of repeated execs not sent yet (repeat);
	// flushed is set once init sent its last batch.
	repeatMu sync.Mutex
	repeats  []*ExecCall
	flushed  bool
	mu       sync.Mutex
	events   []traceEvent
	traced   map[int]bool // pids the serving thread traces
	reaped   time.Time    // the reaper's last yield
}

// expectation is what a seized caller's exec must run.
type expectation struct {
	call     *ExecCall
	dev, ino uint64 // the file the kernel maps last (/proc/<pid>/exe)
	cmdline  []byte // the argv as the kernel lays it out
	environ  []byte
}

type traceEvent struct {
	pid    int
	ws     unix.WaitStatus
	exited bool
}

func newExecs() (*execs, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	return &execs{efd: efd, pending: map[int]*expectation{}, traced: map[int]bool{}}, nil
}

// begin starts the judging of a new command's execs (a session runs
// several, one after another): its environment is the base a child's
// additions are told against, and what the host allowed without asking
// for the last command is asked again.
func (x *execs) begin(cmd *command) {
	x.cmd = cmd
	x.base = make(map[string]bool, len(cmd.env))
	for _, kv := range cmd.env {
		x.base[kv] = true
	}
	x.envScripts = map[int][2]string{}
	x.allowed = map[string]bool{}
	x.repeatMu.Lock()
	x.flushed = false
	x.repeatMu.Unlock()
}

// decideExec judges an exec: the target's own first exec was judged by
// the host before Start and goes on; any other is sent to the host.
func (st *initState) decideExec(c *seccomp.Call) unix.Errno {
	x := st.execs
	x.judged = nil
	if cmd := st.cmd.Load(); x.cmd != cmd {
		x.begin(cmd)
		if st.collectAtFirst {
			allocateGarbage()
		}
		if name := envInterpreter(c.Exec); name != "" {
			x.envScripts[c.Pid] = [2]string{c.Paths[0].Name, name}
		}
		// The target joins the tree's cgroup now, before its first
		// instruction; init's threads stay out of it.
		if err := joinCgroups(cmd.tree, c.Pid); err != nil {
			return unix.EAGAIN
		}
		if cmd.rlimitsAtExec {
			// The task waits in its exec, its new program not yet
			// loaded: limits set now are in force from its first
			// instruction, with no ptrace stop.
			if err := prlimits(c.Pid, cmd.rlimits); err != nil {
				st.rlimitErr.Store(&err)
				return unix.EPERM
			}
		}
		return 0
	}
	ec := st.execCall(c)
	if g, ok := x.envScripts[ec.Pid]; ok {
		delete(x.envScripts, ec.Pid)
		if len(ec.Argv) > 0 && ec.Argv[0] == g[1] {
			ec.InterpreterOf = g[0]
		}
	}
	key := ec.key()
	if x.allowed[key] {
		// The host allowed this very call before and said it would again
		// without asking anyone: it is told (and records it), not asked.
		ec.Repeat = true
		x.repeat(st, ec)
		x.judged = ec
		if name := envInterpreter(c.Exec); name != "" {
			x.envScripts[ec.Pid] = [2]string{ec.Program, name}
		}
		return 0
	}
	if st.ctl == nil {
		return unix.EACCES
	}
	if j := st.ask(message{Event: "exec", Exec: ec}, &ec.ID); j.Allow && ec.Reason == "" {
		if j.Cache && len(x.allowed) < maxAllowedExecs {
			x.allowed[key] = true
		}
		x.judged = ec
		if name := envInterpreter(c.Exec); name != "" {
			x.envScripts[ec.Pid] = [2]string{ec.Program, name}
		}
		return 0
	}
	return unix.EACCES
}

// execCall is what the host judges of an exec.
func (st *initState) execCall(c *seccomp.Call) *ExecCall {
	x := c.Exec
	// Pid is the calling thread's id: its process's for a single-threaded
	// caller, and the process's own once the exec is done.
	ec := &ExecCall{Pid: c.Pid, Program: c.Paths[0].Name, Argv: x.Argv, Dir: x.Dir}
	if ppid, ok := st.execs.parent(c.Pid); ok {
		ec.PPid = ppid
	}
	for _, in := range x.Interp {
		ec.Interp = append(ec.Interp, in.Path.Name)
	}
	if l := x.Loaded; l != nil {
		ec.Loader = x.Final(c.Paths[0]).Name
		ec.LoaderOptions = l.Options
		ec.Argv = l.Argv
		ec.Program = l.Path.Name
		if ec.Program == "" {
			ec.Reason = "the dynamic loader was asked to search the library directories for the program it runs"
		}
	}
	for _, kv := range x.Env {
		if !st.execs.base[kv] {
			ec.Set = append(ec.Set, kv)
		}
	}
	return ec
}

// repeatBatch is how many reports of repeated execs init gathers into one
// message: a loop's programs cost the host one wake-up per batch, not one
// each.
const repeatBatch = 32

// repeat reports a repeated exec to the host, in batches: a batch goes
// when it is full, before init asks the host anything (so the host's
// records keep their order), and when the target has exited (flush),
// before init's exit message; the host reads the stream to its end before
// Wait returns, so the command's records and tree are whole by then.
func (x *execs) repeat(st *initState, ec *ExecCall) {
	x.repeatMu.Lock()
	x.repeats = append(x.repeats, ec)
	full := len(x.repeats) >= repeatBatch || x.flushed
	x.repeatMu.Unlock()
	if full {
		x.flush(st)
	}
}

// flush sends the reports gathered so far.
func (x *execs) flush(st *initState) {
	x.repeatMu.Lock()
	batch := x.repeats
	x.repeats = nil
	x.repeatMu.Unlock()
	if len(batch) > 0 {
		st.send(message{Event: "exec-repeats", Execs: batch})
	}
}

// flushRepeats sends what is left at the end: later repeats (a background
// job outliving the target) go one by one.
func (st *initState) flushRepeats() {
	if x := st.execs; x != nil {
		x.repeatMu.Lock()
		x.flushed = true
		x.repeatMu.Unlock()
		x.flush(st)
	}
}

// maxAllowedExecs bounds the allowed execs init remembers: past it, new
// ones are asked each time.
const maxAllowedExecs = 4096

// key is what the host's judgement of an exec depends on: everything it
// is sent but the ids and the parent (the working directory is not
// judged, but a script's relative names are resolved in it).
func (ec *ExecCall) key() string {
	var b strings.Builder
	for _, part := range [][]string{{ec.Program, ec.Dir, ec.Loader, ec.InterpreterOf, ec.Reason}, ec.Argv, ec.Interp, ec.LoaderOptions, ec.Set} {
		for _, s := range part {
			b.WriteString(s)
			b.WriteByte(0)
		}
		b.WriteByte(1)
	}
	return b.String()
}

// envInterpreter is NAME when the kernel runs a script through
// "#!/usr/bin/env NAME" (env's options and NAME=VALUE words skipped), else
// "".
func envInterpreter(x *seccomp.Exec) string {
	n := len(x.Interp)
	if n == 0 || path.Base(x.Interp[n-1].Path.Name) != "env" {
		return ""
	}
	for _, w := range strings.Fields(x.Interp[n-1].Arg) {
		if strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
			continue
		}
		return w
	}
	return ""
}

// parent finds a thread's parent process id: from a pidfd of the thread
// (PIDFD_GET_INFO, Linux 6.13), which reads a few fields of the task,
// else from /proc/<tid>/stat (the field after the command name, which may
// hold anything, and the state), which the kernel fills with the task's
// memory and scheduling figures as well: the exec path asks for every
// exec.
func (x *execs) parent(tid int) (ppid int, ok bool) {
	if !x.noPidfdInfo {
		// PIDFD_THREAD (Linux 6.9) for a thread that is not its
		// process's leader; the info's ppid is its process's parent.
		fd, err := unix.PidfdOpen(tid, unix.O_EXCL)
		if err == nil {
			info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_PID}
			err = unix.IoctlPidfdInfo(fd, &info)
			unix.Close(fd)
			if err == nil && info.Mask&unix.PIDFD_INFO_PID != 0 {
				return int(info.Ppid), true
			}
		}
		if err == unix.ENOTTY || err == unix.EINVAL {
			x.noPidfdInfo = true // an older kernel: stat from now on
		}
	}
	b := x.readProc("/proc/"+strconv.Itoa(tid)+"/stat", &x.statBuf)
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	n, err := strconv.Atoi(string(f[1]))
	return n, err == nil
}

// readProc reads a whole proc file into *buf (kept for the next read,
// grown as needed) with plain system calls; nil when it cannot be read.
func (x *execs) readProc(name string, buf *[]byte) []byte {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	if *buf == nil {
		*buf = make([]byte, 4096)
	}
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil
		}
		if n == 0 {
			*buf = b[:0]
			return b
		}
		b = b[:len(b)+n]
	}
}

// beforeExec seizes the caller of an allowed exec, so that its exec stop
// shows what the kernel ran (see checkExec). The target's own first exec
// runs init's code and is not seized (the rlimits may already trace it).
// A caller another process traces cannot be checked: EPERM.
func (st *initState) beforeExec(c *seccomp.Call) unix.Errno {
	x := st.execs
	if x.judged == nil {
		return 0 // the target's own exec
	}
	exp := &expectation{call: x.judged}
	x.judged = nil
	final := c.Exec.Final(c.Paths[0])
	exp.dev, exp.ino = final.Dev, final.Ino
	exp.cmdline = nulJoin(c.Exec.KernelArgv())
	exp.environ = nulJoin(c.Exec.Env)
	x.mu.Lock()
	ours := x.traced[c.Pid]
	x.mu.Unlock()
	if !ours {
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(c.Pid), 0,
			unix.PTRACE_O_TRACEEXEC|unix.PTRACE_O_EXITKILL, 0, 0)
		if e != 0 {
			return unix.EPERM
		}
		x.mu.Lock()
		x.traced[c.Pid] = true
		x.mu.Unlock()
	}
	x.pending[c.Pid] = exp
	return 0
}

func nulJoin(ss []string) []byte {
	n := 0
	for _, s := range ss {
		n += len(s) + 1
	}
	b := make([]byte, 0, n)
	for _, s := range ss {
		b = append(b, s...)
		b = append(b, 0)
	}
	return b
}

// stopped is called by the reaper for every wait status of a process it
// did not start: ptrace stops of the callers the serving thread seized,
// and exits. It hands the serving thread the ones it needs.
func (x *execs) stopped(pid int, ws unix.WaitStatus) {
	x.mu.Lock()
	if !x.traced[pid] && !ws.Stopped() {
		x.mu.Unlock()
		return
	}
	x.events = append(x.events, traceEvent{pid: pid, ws: ws, exited: !ws.Stopped()})
	x.mu.Unlock()
	var one = [8]byte{1}
	_, _ = unix.Write(x.efd, one[:])
	x.reaped = seccomp.Yield(x.reaped)
}

// handle runs on the serving thread when the reaper handed it stops.
func (st *initState) handleTraceEvents() {
	x := st.execs
	var buf [8]byte
	_, _ = unix.Read(x.efd, buf[:])
	x.mu.Lock()
	evs := x.events
	x.events = nil
	x.mu.Unlock()
	for _, ev := range evs {
		if ev.exited {
			x.untrace(ev.pid)
			delete(x.pending, ev.pid)
			continue
		}
		if ev.ws.StopSignal() == unix.SIGTRAP && ev.ws.TrapCause() == unix.PTRACE_EVENT_EXEC {
			st.checkExec(ev.pid)
			continue
		}
		// Any other stop: the exec failed and the caller went on, and a
		// signal came (passed on as it is detached), or a group stop
		// (PTRACE_EVENT_STOP: nothing to pass on).
		sig := uintptr(ev.ws.StopSignal())
		if ev.ws>>16 != 0 {
			sig = 0
		}
		_, _, _ = unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(ev.pid), 0, sig, 0, 0)
		x.untrace(ev.pid)
		delete(x.pending, ev.pid)
	}
}

func (x *execs) untrace(pid int) {
	x.mu.Lock()
	delete(x.traced, pid)
	x.mu.Unlock()
}

// checkExec compares what the kernel ran at pid's exec stop with what was
// judged, kills the process when they differ, and detaches it.
func (st *initState) checkExec(pid int) {
	x := st.execs
	former := pid
	if msg, err := unix.PtraceGetEventMsg(pid); err == nil && msg != 0 {
		former = int(msg)
	}
	exp := x.pending[former]
	delete(x.pending, former)
	delete(x.pending, pid)
	x.untrace(former)
	x.untrace(pid)
	if exp == nil || !x.ranAsJudged(pid, exp) {
		_ = unix.Kill(pid, unix.SIGKILL)
		if exp != nil {
			ec := *exp.call
			ec.Changed = true
			st.send(message{Event: "exec-changed", Exec: &ec})
		}
	}
	_ = unix.PtraceDetach(pid)
}

// ranAsJudged reads what the kernel ran from the stopped process.
func (x *execs) ranAsJudged(pid int, exp *expectation) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	var st unix.Stat_t
	if unix.Stat(dir+"exe", &st) != nil || st.Dev != exp.dev || st.Ino != exp.ino {
		return false
	}
	cmdline := x.readProc(dir+"cmdline", &x.cmdBuf)
	if cmdline == nil || !bytes.Equal(cmdline, exp.cmdline) {
		return false
	}
	environ := x.readProc(dir+"environ", &x.envBuf)
	return environ != nil && bytes.Equal(environ, exp.environ)
}

// ExecJudgeable reports whether a sandbox on this host can judge every
// exec when it happens (Spec.JudgeExec), and why not: init must be able
// to trace the processes of its sandbox, which Yama's ptrace_scope 3
// forbids to everyone. (The sandbox itself, seccomp user notification and
// a private /proc, is checked when it starts: Report.Exec.)
func ExecJudgeable() (bool, string) {
	execJudgeableOnce.Do(func() {
		b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope")
		if err == nil && strings.TrimSpace(string(b)) == "3" {
			execJudgeableWhy = "ptrace is disabled on this host (kernel.yama.ptrace_scope=3)"
		}
	})
	return execJudgeableWhy == "", execJudgeableWhy
}

var (
	execJudgeableOnce sync.Once
	execJudgeableWhy  string
)

// garbage keeps allocateGarbage's allocations from being optimized away.
var garbage []byte

// allocateGarbage allocates 64 MiB in small pieces: enough to start
// several collections where collection is on.
func allocateGarbage() {
	for range 1 << 14 {
		garbage = make([]byte, 4096)
	}
}
