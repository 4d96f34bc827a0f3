package procguard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// Double serves the commands a guard allowed in place of the operating
// system: a test fake (procguard/proctest.Fake is the scripted one).
// Install it on a guard with WithDouble; every Cmd whose context carries a
// scope of that guard is then decided as usual (the policy, the callbacks,
// the mode, the record) and, when allowed, handed to the double instead of
// being spawned. A denied command never reaches it.
//
// Command is called from Start on the caller's goroutine, possibly from
// many goroutines at once; it must be safe for concurrent use.
type Double interface {
	// Command returns how to play inv, or an error that Start returns
	// wrapped in *exec.Error (an unscripted command, say).
	Command(inv *Invocation) (Behavior, error)
}

// Behavior plays one command a Double accepted.
type Behavior interface {
	// Run reads stdin, writes stdout and stderr and returns the exit code
	// (0-255). It runs on its own goroutine after Start returned; Wait
	// returns when it does. ctx is cancelled when the command is killed (its
	// context, its hard timeout, its scope's release): Run should return
	// promptly then, and its exit code is ignored. stdin is empty when the
	// command has none.
	Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int
}

// Invocation is one allowed command as a Double sees it.
type Invocation struct {
	// Argv is the command line, the name as given first.
	Argv []string
	// Path and Program are the file found in the policy's PATH and its real
	// path; both are empty when the program is not installed and the call
	// was allowed anyway (Warn mode, a rescue).
	Path, Program string
	// Dir is the resolved working directory.
	Dir string
	// Env is Cmd.Env as the caller set it, before the policy's filter.
	Env []string
	// Caller is the call site in the code under test (the first frame
	// outside auditguard), and Decision what allowed the call.
	Caller   runtime.Frame
	Decision policy.Decision
}

type doubleKey struct{}

// WithDouble installs d on a guard: procguard serves the commands that
// guard allows from d and spawns nothing. For tests; see Double.
func WithDouble(d Double) audit.Option { return audit.WithDouble(doubleKey{}, d) }

func doubleOf(s *audit.Scope) Double {
	d, _ := s.Double(doubleKey{}).(Double)
	return d
}

// NoteDouble is what Confinement says of a command a Double served.
const NoteDouble = "served by a test double (procguard.WithDouble); nothing was spawned"

// doubleRun is a command being played by a Double.
type doubleRun struct {
	done     chan struct{} // closed when Behavior.Run returned
	finished chan struct{} // closed when the watcher returned
	exit     int

	mu    sync.Mutex
	cause error // why it was killed, nil when it was not
}

// startDouble hands an allowed command to d: the Start of a faked command.
func (c *Cmd) startDouble(d Double, pr *prepared) error {
	inv := &Invocation{Argv: slices.Clone(c.Args), Path: pr.path, Program: pr.program, Dir: pr.req.Dir,
		Env: slices.Clone(c.Env), Caller: pr.ev.Caller(), Decision: pr.ev.Decision}
	b, err := d.Command(inv)
	if err != nil {
		c.closeAll(c.closeAfterStart, c.closeAfterWait)
		return &exec.Error{Name: c.Args[0], Err: err}
	}
	c.Path, c.Program = pr.path, pr.program
	spec := pr.pol.Exec()
	limit := spec.OutputLimit
	if limit == 0 {
		limit = policy.DefaultOutputLimit
	}
	var stdout, stderr io.Writer
	stdout, c.outW = wrapOutput(c.Stdout, limit)
	if c.Stderr != nil && c.Stderr == c.Stdout && c.outW != nil {
		stderr, c.errW = c.outW, c.outW
	} else {
		stderr, c.errW = wrapOutput(c.Stderr, limit)
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	stdin := c.Stdin
	if stdin == nil {
		stdin = bytes.NewReader(nil)
	}
	timeout := commandTimeout(spec, c.Timeout)
	c.Confinement = Confinement{Timeout: timeout, SandboxNote: NoteDouble, LandlockNote: NoteDouble, CgroupNote: NoteDouble,
		Cgroups: missingStatus(cgroupLimits{}, CgroupDisabled, NoteDouble)}

	run := &doubleRun{done: make(chan struct{}), finished: make(chan struct{})}
	c.double = run
	ctx, kill := context.WithCancel(context.WithoutCancel(c.ctx))
	// The pipe ends the child would have inherited (StdoutPipe's writer,
	// StdinPipe's reader) are closed when the play ends, so readers see EOF.
	ends := c.closeAfterStart
	c.closeAfterStart = nil
	go func() {
		defer close(run.done)
		defer c.closeAll(ends)
		run.exit = b.Run(ctx, stdin, stdout, stderr)
	}()
	go run.watch(c.ctx, audit.From(c.ctx).Done(), timeout, kill)
	return nil
}

// watch kills the play on timeout, cancellation or the scope's release, as
// the supervisor does for a real child.
func (r *doubleRun) watch(ctx context.Context, released <-chan struct{}, timeout time.Duration, kill context.CancelFunc) {
	defer close(r.finished)
	defer kill()
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	var cause error
	select {
	case <-r.done:
		return
	case <-ctx.Done():
		cause = ctx.Err()
	case <-released:
		cause = audit.ErrScopeClosed
	case <-timer:
		cause = ErrTimeout
	}
	r.mu.Lock()
	select {
	case <-r.done: // it finished on its own first
	default:
		r.cause = cause
	}
	r.mu.Unlock()
}

// waitDouble is Wait for a faked command: the same errors a real child
// gives (*exec.ExitError for a non-zero exit, *KilledError for a kill).
func (c *Cmd) waitDouble() error {
	if c.waited {
		return errors.New("procguard: Wait was already called")
	}
	c.waited = true
	r := c.double
	<-r.done
	<-r.finished // the watcher saw done, or recorded why it killed
	c.closeAll(c.closeAfterWait)
	r.mu.Lock()
	cause := r.cause
	r.mu.Unlock()
	code := r.exit
	if cause != nil {
		code = -1
	}
	c.ProcessState = standInState(code)
	var err error
	if code != 0 {
		err = &exec.ExitError{ProcessState: c.ProcessState}
	}
	if cause != nil {
		return &KilledError{Cause: cause, Err: err}
	}
	return err
}

// standIns holds one *os.ProcessState per exit code (-1: killed by
// SIGKILL). os.ProcessState has no constructor, and callers of faked
// commands read ExitCode, Success and ExitError from it as from a real
// child's, so each state comes from a real stand-in process that exited
// that way, started once per code and never inside a guard. The values are
// immutable and safe to share.
var standIns sync.Map // int -> *os.ProcessState

func standInState(code int) *os.ProcessState {
	if code < -1 || code > 255 {
		code = 255 & code
	}
	if v, ok := standIns.Load(code); ok {
		return v.(*os.ProcessState)
	}
	script := fmt.Sprintf("exit %d", code)
	if code < 0 {
		script = "kill -KILL $$"
	}
	x := exec.Command("/bin/sh", "-c", script)
	x.Env = []string{}
	_ = x.Run() // the exit status is the point; a failure leaves ProcessState nil
	if x.ProcessState == nil {
		return nil
	}
	v, _ := standIns.LoadOrStore(code, x.ProcessState)
	return v.(*os.ProcessState)
}
