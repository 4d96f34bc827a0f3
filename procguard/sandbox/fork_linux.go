//go:build linux

package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// errTraceRefused reports that the kernel refused the ptrace stop
// forkTarget needs to set rlimits before the target's first instruction
// (Yama ptrace_scope 3, a container's seccomp profile); init then takes the
// slower way through a target stage.
var errTraceRefused = errors.New("ptrace refused")

// startTarget starts the target. The fast way forks it straight from
// init's command thread: one re-execution of the host binary per sandbox
// instead of two, which is most of a start's cost.
//
// The command thread takes on the target's confinement for good. What
// init still does on it afterwards (report, wait for the target) needs
// nothing the confinement takes away, and no other goroutine runs on it:
// its goroutine is locked to it, and the runtime starts later threads
// from its template thread (made when the lock was taken, while this
// thread was clean), never from a locked one.
func startTarget(st *initState) error {
	if !st.stage {
		ts := &targetState{spec: targetSpec{Spec: st.spec, SeccompReads: st.needsReads()}, listener: -1}
		err := st.forkTarget(ts)
		if !errors.Is(err, errTraceRefused) {
			return err
		}
	}
	st.report.Notes = append(st.report.Notes, "ptrace is refused here; the target was started through a second stage")
	if st.next != nil {
		// The stage confines itself, not init's command thread: a later
		// command would start unconfined. The session ends with this
		// command; the host starts the next in a new sandbox.
		st.next.Close()
		st.next = nil
	}
	// The stage sets the rlimits itself.
	st.cmd.Store(&command{env: st.spec.Env, tree: st.treeProcs})
	// The stage confines itself; it is started from a clean thread.
	done := make(chan error, 1)
	go func() { done <- startStage(st) }()
	if err := <-done; err != nil {
		return err
	}
	return awaitStage(st)
}

// forkTarget confines the calling (locked) thread, starts the target from
// it in a new session and, with rlimits to set, holds the target at its
// exec (ptrace) until they are in force. It returns errTraceRefused, with
// nothing started, where the kernel refuses ptrace.
func (st *initState) forkTarget(ts *targetState) error {
	if !st.confined {
		// Once: a session's later targets inherit the same confinement
		// from this thread, and are served by the same supervisor.
		for _, s := range confineSteps {
			if err := s.run(ts); err != nil {
				return &SetupError{Step: s.name, Err: err}
			}
		}
		st.confined = true
		st.report.Landlock = ts.report.Landlock
		st.report.NoCapabilities = ts.report.NoCapabilities
		st.listener = ts.listener
		if ts.listener >= 0 {
			if err := st.startSupervisor(ts.listener); err != nil {
				return &SetupError{Step: "supervisor", Err: err}
			}
		}
	}
	// Where the supervisor will hold the target's first exec, it sets the
	// rlimits there; otherwise a ptrace stop at the exec does.
	atExec := st.listener >= 0 && st.spec.ExecJudged && len(st.spec.Rlimits) > 0
	st.cmd.Store(&command{env: st.spec.Env, rlimits: st.spec.Rlimits, rlimitsAtExec: atExec, tree: st.treeProcs})
	env := st.spec.Env
	if env == nil {
		env = []string{} // nil would hand the target init's environment
	}
	if len(st.spec.Args) == 0 {
		return &SetupError{Step: "exec", Path: st.spec.Path, Err: errors.New("empty argv")}
	}
	// Without the supervisor holding the first exec, a ptrace stop there
	// sets the rlimits and puts the target in the tree's cgroup.
	trace := len(st.spec.Rlimits) > 0 && !atExec || len(st.treeProcs) > 0 && st.execs == nil
	if st.execs != nil {
		// The target's exec is trapped while this thread waits in the
		// vfork without a system call the runtime can see, so it answers
		// no stop-the-world until the supervisor has answered: a garbage
		// collection starting meanwhile (the supervisor allocates) would
		// wait for the supervisor, which waits for it. None starts while
		// collection is off; SetGCPercent(-1) waits out one under way,
		// and gcMu the one growHeap forces (it forces none once the spec
		// came, as it has by now).
		st.gcMu.Lock()
		st.gcMu.Unlock()
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
	}
	p, err := os.StartProcess(st.spec.Path, st.spec.Args, &os.ProcAttr{
		Dir:   st.spec.Dir,
		Env:   env,
		Files: append(slices.Clone(st.stdio), st.extra...),
		Sys:   &syscall.SysProcAttr{Setsid: true, Ptrace: trace},
	})
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if trace && errors.Is(err, unix.EPERM) {
			return errTraceRefused
		}
		if rerr := st.rlimitErr.Load(); rerr != nil {
			return &SetupError{Step: "rlimits", Err: *rerr}
		}
		// The child reports one errno for chdir and exec alike.
		if st.spec.Dir != "" {
			if _, serr := os.Stat(st.spec.Dir); serr != nil {
				return &SetupError{Step: "chdir", Path: st.spec.Dir, Err: err}
			}
		}
		return &SetupError{Step: "exec", Path: st.spec.Path, Err: err}
	}
	st.targetPid = p.Pid
	if trace {
		if step, err := st.holdAtExec(p.Pid); err != nil {
			_ = unix.Kill(p.Pid, unix.SIGKILL)
			return &SetupError{Step: step, Err: err}
		}
	}
	// In force by now: set at the exec stop, or while the first exec was
	// held.
	st.report.Rlimits = rlimitNames(st.spec.Rlimits)
	st.report.Pid = p.Pid
	return nil
}

// holdAtExec waits for the traced target's stop at exec (before its first
// instruction), puts it in the tree's cgroup and sets the rlimits, and
// lets it go. Signals that arrive before are passed on; a target that
// dies first leaves its status for reap. A failure names its step.
func (st *initState) holdAtExec(pid int) (step string, err error) {
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return "exec", err
		case ws.Exited() || ws.Signaled():
			st.early = &ws
			return "", nil
		case !ws.Stopped():
			continue
		case ws.StopSignal() != unix.SIGTRAP:
			if err := unix.PtraceCont(pid, int(ws.StopSignal())); err != nil {
				return "exec", err
			}
			continue
		}
		if err := st.joinTree(pid); err != nil {
			return "join cgroup", err
		}
		if err := prlimits(pid, st.spec.Rlimits); err != nil {
			return "rlimits", err
		}
		return "exec", unix.PtraceDetach(pid)
	}
}

// joinTree puts pid in the tree's cgroups (Spec.TreeCgroups), if there
// are any. The pid is read in init's pid namespace, the writer's.
func (st *initState) joinTree(pid int) error {
	return joinCgroups(st.treeProcs, pid)
}

func joinCgroups(procs []*os.File, pid int) error {
	for _, f := range procs {
		if _, err := f.WriteString(strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// command is what the serving thread needs of the command whose target
// runs now; init hands it over (initState.cmd) before the target starts,
// and the serving thread takes it at the target's first exec.
type command struct {
	env           []string   // the target's environment (ExecCall.Set is what a child adds)
	rlimits       []Rlimit   // set while the first exec is held, with rlimitsAtExec
	rlimitsAtExec bool       // the supervisor holds the first exec: no ptrace stop
	tree          []*os.File // the tree cgroups' cgroup.procs
}
