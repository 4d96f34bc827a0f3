package procguard

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"

	"github.com/auditguard/auditguard/procguard/landlock"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// Cmd is a guarded command, shaped like exec.Cmd. Set its fields before
// Start; a denial comes back from Start (and Run, Output, CombinedOutput)
// and nothing is spawned.
type Cmd struct {
	// Path is the program found in the policy's PATH (or Name when it was
	// absolute); Program is its real path, the file that is run and judged.
	Path    string
	Program string
	// Args holds the command line, Args[0] being the name as given.
	Args []string
	// Env is the environment the caller asks for. It is filtered (see
	// policy.ExecEnv): nil means only the variables the policy lets through.
	Env []string
	// Dir is the working directory; empty means the host's. It must lie
	// inside a write root.
	Dir    string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// ExtraFiles are given to the program as descriptors 3, 4, ... (a nil
	// entry leaves its number closed), as exec.Cmd.ExtraFiles; inside the
	// sandbox too.
	ExtraFiles []*os.File
	// Cancel, when set, is called instead of killing the command when its
	// context ends, as exec.Cmd.Cancel: it may ask the program to stop
	// (c.Process.Signal(os.Interrupt) reaches the program inside the
	// sandbox). If the command has not exited WaitDelay later, it is
	// killed. Wait then returns a *KilledError with the context's error
	// (and Cancel's, if it failed). Timeouts and scope release still kill
	// at once.
	Cancel func() error
	// WaitDelay bounds how long Wait waits for I/O after the group was
	// killed, and how long a Cancel may take (as exec.Cmd.WaitDelay); 0
	// means DefaultWaitDelay.
	WaitDelay time.Duration
	// Timeout overrides the policy's default hard timeout (capped by its
	// MaxTimeout).
	Timeout time.Duration
	// Session, when set, runs the command in the session's sandbox, which
	// its earlier commands built (see Session). Process is then that
	// sandbox's init, shared by the session's commands, and ProcessState
	// stays nil: a failed program gives a *sandbox.ExitError.
	Session *Session

	// Process is the started process: in the sandbox, the sandbox's init,
	// which passes the signals a host uses to stop or notify a command on
	// to the program, and whose SIGKILL ends the sandbox. A sandbox that
	// is kept for a later command when this one ends (recycling, see
	// sandbox.StartRecycled) is reached through a handle of the command's
	// own, which Wait releases: afterwards its Pid is -1 and Signal and
	// Kill fail, rather than reach a later command.
	Process *os.Process
	// ProcessState is set by Wait. In the sandbox it is init's: the
	// program's exit code, 128+N for a signal N (see Signal). For a
	// recycled sandbox, whose init goes on, it is made from init's report
	// with the same status, init's pid and the program's usage.
	ProcessState *os.ProcessState
	// Err, when set, is returned by Start (as exec.Cmd.Err). CommandContext
	// leaves it nil: the lookup happens at Start, with the policy's PATH.
	Err error

	// Confinement says what was enforced on the child; set by Start.
	Confinement Confinement
	// Signal is the signal that killed the program inside the sandbox, 0
	// when it exited. ProcessState reports such a death as exit code
	// 128+Signal (as shells do).
	Signal syscall.Signal

	ctx     context.Context
	x       *exec.Cmd
	started bool
	waited  bool

	outW, errW                      *capWriter
	closeAfterStart, closeAfterWait []io.Closer

	sup     *supervisor
	tree    tree // what the command's tree ran (tree.go)
	hostRun bool // a program of the host's own (StartHost): its execs are not judged
	sandbox *sandbox.Launch
	egress  *egress    // the sandbox's route out through the proxy, with net rules
	double  *doubleRun // set when a test double plays the command (double.go)
}

// Confinement is exactly what Start enforced on a child.
type Confinement struct {
	// Sandbox is what the namespace sandbox enforced (nil when the child
	// ran without it), and SandboxNote why it is missing.
	Sandbox     *sandbox.Report
	SandboxNote string
	// Landlock is the domain applied ("none" when none), and LandlockNote
	// why it is missing or what it cannot cover.
	Landlock     landlock.Status
	LandlockNote string
	// ProcessGroup is the child's process group id (its pid).
	ProcessGroup int
	// Cgroup is the per-command cgroup v2 directory, "" with CgroupNote
	// saying why there is none. Cgroups is what the command's cgroup
	// enforces (the pids and memory limits, how a kill reaches every
	// process, why a fact is missing), and CgroupNote renders it.
	Cgroup     string
	Cgroups    CgroupStatus
	CgroupNote string
	// Rlimits lists the limits applied ("cpu=10s", "nofile=256").
	Rlimits []string
	// Timeout is the hard timeout in force (0: none).
	Timeout time.Duration
	// EnvDropped lists variables of Cmd.Env, or host variables the policy
	// names by a prefix, that were not passed on, by name.
	EnvDropped []string
	// ExecJudged is true when every program the command's processes
	// start is judged when it starts (the sandbox traps exec and checks
	// at the exec stop that what ran is what was judged; see Cmd.Tree):
	// the static reading of the command line then refuses only what it
	// can read. Where it is false (no sandbox, no seccomp, ptrace
	// refused), the static reading is the only judgement of what a
	// command starts, and it refuses what it cannot read ahead.
	ExecJudged bool
	// Creation, when set, lists protected names this command was let
	// create because its tool writes them from its defaults (`git init`
	// and .git/config under the git profile; policy.ToolCreation), and the
	// variables forced for that.
	Creation *policy.ToolCreation
}

// DefaultWaitDelay is how long Wait waits for I/O after the child group was
// killed when Cmd.WaitDelay is zero.
const DefaultWaitDelay = 2 * time.Second

// ErrTimeout is returned (wrapped in *KilledError) when a command ran past
// its hard timeout.
var ErrTimeout = errors.New("procguard: hard timeout")

// KilledError reports a command whose group was killed by its timeout or
// context. errors.Is works for the Cause (ErrTimeout, context.Canceled,
// context.DeadlineExceeded) and for the wait error.
type KilledError struct {
	Cause error
	Err   error // the wait error (usually *exec.ExitError), may be nil
	// Limit is the hard timeout in force when Cause is ErrTimeout.
	Limit time.Duration
}

func (e *KilledError) Error() string {
	s := "procguard: command killed: " + e.Cause.Error()
	if errors.Is(e.Cause, ErrTimeout) && e.Limit > 0 {
		s = "procguard: command killed after " + e.Limit.String() + " (Timeout)"
	}
	if e.Err != nil {
		s += " (" + e.Err.Error() + ")"
	}
	return s
}

func (e *KilledError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Cause}
	}
	return []error{e.Cause, e.Err}
}

// CommandContext returns a guarded command. ctx must carry a guard scope
// (audit.Guard.Enter); cancelling it kills the command's whole group.
// Nothing is looked up or decided until Start (or Check).
func CommandContext(ctx context.Context, name string, args ...string) *Cmd {
	if ctx == nil {
		panic("procguard: nil Context")
	}
	return &Cmd{ctx: ctx, Path: name, Args: append([]string{name}, args...)}
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Output runs the command and returns its standard output, capped by the
// policy's OutputLimit: a cut of a command that succeeded is reported as a
// *TruncatedError (errors.Is(err, ErrTruncated)) with the bytes kept.
func (c *Cmd) Output() ([]byte, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if c.Stdout != nil {
		return nil, errors.New("procguard: Stdout already set")
	}
	var b safeBuffer
	c.Stdout = &b
	var eb *safeBuffer
	if c.Stderr == nil {
		eb = &safeBuffer{}
		c.Stderr = eb
	}
	err := c.Run()
	if eb != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			ee.Stderr = eb.Bytes()
		}
	}
	if err == nil && c.StdoutTruncated() {
		err = &TruncatedError{Stream: "stdout", Limit: c.outW.limit}
	}
	return b.Bytes(), err
}

// CombinedOutput runs the command and returns stdout and stderr together,
// capped and reported as Output is.
func (c *Cmd) CombinedOutput() ([]byte, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if c.Stdout != nil || c.Stderr != nil {
		return nil, errors.New("procguard: Stdout or Stderr already set")
	}
	var b safeBuffer
	c.Stdout, c.Stderr = &b, &b
	err := c.Run()
	if err == nil && c.StdoutTruncated() {
		err = &TruncatedError{Stream: "output", Limit: c.outW.limit}
	}
	return b.Bytes(), err
}

// StdinPipe returns a pipe connected to the child's standard input.
func (c *Cmd) StdinPipe() (io.WriteCloser, error) {
	if c.Stdin != nil || c.started {
		return nil, errors.New("procguard: Stdin already set or command started")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c.Stdin = pr
	c.closeAfterStart = append(c.closeAfterStart, pr)
	wc := &closeOnce{File: pw}
	c.closeAfterWait = append(c.closeAfterWait, wc)
	return wc, nil
}

// StdoutPipe returns a pipe connected to the child's standard output. Wait
// closes it; read everything before calling Wait. It is not capped.
func (c *Cmd) StdoutPipe() (io.ReadCloser, error) {
	if c.Stdout != nil || c.started {
		return nil, errors.New("procguard: Stdout already set or command started")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c.Stdout = pipeEnd{pw}
	c.closeAfterStart = append(c.closeAfterStart, pw)
	c.closeAfterWait = append(c.closeAfterWait, pr)
	return pr, nil
}

// StderrPipe returns a pipe connected to the child's standard error.
func (c *Cmd) StderrPipe() (io.ReadCloser, error) {
	if c.Stderr != nil || c.started {
		return nil, errors.New("procguard: Stderr already set or command started")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c.Stderr = pipeEnd{pw}
	c.closeAfterStart = append(c.closeAfterStart, pw)
	c.closeAfterWait = append(c.closeAfterWait, pr)
	return pr, nil
}

// StdoutTruncated and StderrTruncated report whether the cap cut a stream.
func (c *Cmd) StdoutTruncated() bool { return c.outW != nil && c.outW.Truncated() }
func (c *Cmd) StderrTruncated() bool { return c.errW != nil && c.errW.Truncated() }

// String describes the command, like exec.Cmd.String.
func (c *Cmd) String() string {
	s := c.Path
	if len(c.Args) > 1 {
		s += " " + strings.Join(c.Args[1:], " ")
	}
	return s
}

// Environ returns the environment the command would get if started now,
// like exec.Cmd.Environ: the policy's scrubbing applied to Env (nil Env:
// the host variables the policy lets through). It is nil outside a guard
// scope.
func (c *Cmd) Environ() []string {
	if c.usable() != nil {
		return nil
	}
	pols := audit.From(c.ctx).Policies()
	if len(pols) == 0 {
		return nil
	}
	dir := c.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	env, _ := pols[0].ExecEnv(policy.ExecEnvInput{Host: os.Environ(), Set: c.Env, Home: dir, Tmp: dir})
	return env
}

// ErrNoCommand is returned by Start, Run, Output and Check for a Cmd that
// was not made by CommandContext (a zero Cmd{}) or has no Args.
var ErrNoCommand = errors.New("procguard: Cmd has no context or no Args; make it with CommandContext")

// usable reports why the command cannot be judged at all.
func (c *Cmd) usable() error {
	if c == nil || c.ctx == nil || len(c.Args) == 0 {
		return ErrNoCommand
	}
	return nil
}

// pipeEnd marks the write end of a pipe made by StdoutPipe/StderrPipe: it
// is handed to the child as is, never capped.
type pipeEnd struct{ *os.File }

type closeOnce struct {
	*os.File
	once sync.Once
	err  error
}

func (c *closeOnce) Close() error {
	c.once.Do(func() { c.err = c.File.Close() })
	return c.err
}
