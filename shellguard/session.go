package shellguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// Defaults of Options.
const (
	DefaultTimeout   = 2 * time.Minute
	DefaultMaxOutput = 64 << 10
	// DefaultTool is the tool name a call's records carry when the
	// caller's context names no tool call: "bash#N".
	DefaultTool = "bash"
)

// settleTimeout bounds how long a call waits, after its context ended,
// for the programs it started to be reaped (procguard kills each tree at
// once and waits at most its WaitDelay for the output).
const settleTimeout = 15 * time.Second

var (
	// ErrClosed is returned by Run on a closed session, and by a Run that
	// Close interrupted (with its Result).
	ErrClosed = errors.New("shellguard: session closed")
	// ErrStuck is returned when the programs of a call that ended could
	// not be reaped within the settle time; the session is closed, since
	// its interpreter may still be in use.
	ErrStuck = errors.New("shellguard: a call's programs did not end after it was killed; the session is closed")
)

// Options configure a Session.
type Options struct {
	// Dir is the starting working directory; required, absolute, an
	// existing directory. Programs run only where the policy lets them
	// run (inside a write root).
	Dir string
	// Env is the shell's initial environment ("K=V"), every variable
	// exported. nil gives a minimal one: PATH (the policy's), HOME=Dir,
	// LANG=C.UTF-8, and TMPDIR when the policy sets the children's
	// (ExecSpec.TmpDir). Children get the exported variables filtered by the
	// policy (policy.ExecEnv): PATH, HOME and TMPDIR are always the
	// policy's, and loader, interpreter and secret-looking variables are
	// dropped unless a rule names them.
	Env []string
	// Timeout bounds each Run; 0: DefaultTimeout. A Run's context may
	// end it sooner.
	Timeout time.Duration
	// MaxOutput is how many bytes of each stream a Result keeps; 0:
	// DefaultMaxOutput. The first and the last halves are kept, with a
	// line between them saying how many bytes were cut.
	MaxOutput int
	// Tool names the tool calls of Runs whose context carries no
	// audit.Call: "Tool#N", N counting calls in this process. "":
	// DefaultTool.
	Tool string
	// Recorder is the recorder the guard was built with
	// (audit.WithRecorder). When set, each Result lists the records of
	// its call. Allowed calls are recorded only by a guard made with
	// audit.WithLogAllows.
	Recorder *audit.Recorder
	// Logger receives what is for the host, not the model (a call whose
	// programs would not end); slog.Default() when nil.
	Logger *slog.Logger
}

// Result is what one Run did.
type Result struct {
	// Stdout and Stderr are the streams as kept by the cap: when a
	// stream was cut, a line "[output truncated: N bytes omitted]" stands
	// where the bytes were cut.
	Stdout, Stderr string
	// ExitCode is the script's exit status: its last command's, an
	// exit's, 126 for a refused program, 137 when Timeout ended it.
	ExitCode int
	// Dir is the working directory after the call.
	Dir string
	// TimedOut says the call's Timeout (or its context's deadline) ended
	// it: everything it started was killed.
	TimedOut bool
	// StdoutCut and StderrCut are the bytes the cap omitted.
	StdoutCut, StderrCut int
	// Call is the tool call name the call's decisions carry
	// (Record.Tool).
	Call string
	// Records are the decisions made during the call (Options.Recorder),
	// in order.
	Records []audit.Record
}

// Session is a guarded shell an agent keeps across tool calls, like a
// terminal: the working directory, variables, functions, aliases and
// options set by one Run hold for the next.
//
// Run is safe for concurrent use: calls on one Session run one at a time;
// a call waits for the one in progress as long as its context lets it
// (its Timeout starts when it runs). Use one Session per agent (or per
// conversation) to run calls in parallel.
type Session struct {
	turn     chan struct{} // one token: held by the Run in progress
	ctx      context.Context
	h        *Handlers
	runner   *interp.Runner
	out, err *switchWriter // the interpreter's first streams (see switchWriter)
	timeout  time.Duration
	max      int
	tool     string
	rec      *audit.Recorder
	log      *slog.Logger

	dir    atomic.Pointer[string]
	closed atomic.Bool
	stop   context.CancelFunc // ends the session's context: the Run in progress ends
	done   <-chan struct{}
}

var callSeq atomic.Uint64

// New starts a session in opts.Dir. ctx must carry an entered guard scope
// (audit.Guard.Enter): every call of the session is decided by it.
// Nothing runs until Run.
func New(ctx context.Context, opts Options) (*Session, error) {
	sc := audit.From(ctx)
	if sc == nil {
		return nil, errors.New("shellguard: ctx carries no guard scope (use audit.Guard.Enter)")
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("shellguard: %w", err)
	}
	if opts.Dir == "" || !filepath.IsAbs(opts.Dir) {
		return nil, fmt.Errorf("shellguard: Options.Dir must be an absolute directory, not %q", opts.Dir)
	}
	env := opts.Env
	if env == nil {
		env = []string{
			"PATH=" + strings.Join(pathOf(sc), ":"),
			"HOME=" + opts.Dir,
			"LANG=C.UTF-8",
		}
		if p := sc.Guard().Policy(); p != nil && p.Exec().TmpDir != "" {
			// Where the interpreter makes process substitutions' FIFOs:
			// the children's own TMPDIR.
			env = append(env, "TMPDIR="+p.Exec().TmpDir)
		}
	}
	sctx, stop := context.WithCancel(ctx)
	s := &Session{
		turn:    make(chan struct{}, 1),
		ctx:     sctx,
		h:       NewHandlers(sctx),
		out:     &switchWriter{},
		err:     &switchWriter{},
		timeout: opts.Timeout,
		max:     opts.MaxOutput,
		tool:    opts.Tool,
		rec:     opts.Recorder,
		log:     opts.Logger,
		stop:    stop,
		done:    sctx.Done(),
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.max <= 0 {
		s.max = DefaultMaxOutput
	}
	if s.tool == "" {
		s.tool = DefaultTool
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.h.track = &tracker{}
	ropts := append(s.h.Options(),
		interp.Dir(opts.Dir),
		interp.Env(expand.ListEnviron(env...)),
		interp.StdIO(nil, s.out, s.err),
	)
	r, err := interp.New(ropts...)
	if err != nil {
		stop()
		return nil, fmt.Errorf("shellguard: %w", err)
	}
	// The first reset fixes the streams process substitutions write to:
	// the switch writers, pointed at each call's buffers in turn.
	r.Reset()
	s.runner = r
	d := r.Dir
	s.dir.Store(&d)
	return s, nil
}

// pathOf is the policy's PATH, the one programs are looked up in.
func pathOf(sc *audit.Scope) []string {
	if p := sc.Guard().Policy(); p != nil {
		if path := p.ExecPath(); len(path) > 0 {
			return path
		}
	}
	return policy.DefaultExecPath
}

// ParseError is a script that does not parse; nothing of it ran.
type ParseError struct {
	Err syntax.ParseError
}

func (e *ParseError) Error() string {
	return "shellguard: the script does not parse: " + e.Err.Error() + " (nothing ran)"
}

func (e *ParseError) Unwrap() error { return e.Err }

// Run runs script in the session and returns what it did. The script is
// parsed whole first: a script that does not parse returns a *ParseError
// (with line:col) and changes nothing.
//
// The call ends when the script does, when Options.Timeout passes (or
// ctx's deadline, if sooner), or when ctx is cancelled; then every
// program it started (background jobs included) is killed with its whole
// tree, and Run returns once they are gone. Background jobs end with the
// call in any case: nothing a call started outlives it. A timed-out call
// has TimedOut set and exit code 137.
//
// The session's scope decides every call; ctx gives the call its
// cancellation, deadline and tool call: when ctx carries an active
// audit.Call, its name is the one the records carry, otherwise the call
// is named Options.Tool#N. The error is nil unless the session is closed
// (ErrClosed), the call could not be settled (ErrStuck), ctx was
// cancelled (ctx.Err(), with the Result so far; with no Result when it
// ended while the call waited for another), or the script does not parse.
// A script that fails is a Result with a non-zero ExitCode.
func (s *Session) Run(ctx context.Context, script string) (*Result, error) {
	file, err := syntax.NewParser().Parse(strings.NewReader(script), "")
	if err != nil {
		var pe syntax.ParseError
		if errors.As(err, &pe) {
			return nil, &ParseError{Err: pe}
		}
		return nil, fmt.Errorf("shellguard: the script does not parse: %w (nothing ran)", err)
	}
	// Wait for the call in progress, as long as ctx lets this one wait.
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.done:
		return nil, ErrClosed
	}
	defer func() { <-s.turn }()
	if s.closed.Load() {
		return nil, ErrClosed
	}

	name, args := "", any(script)
	if c := audit.CallFrom(ctx); c != nil {
		name, args = c.Name, c.Args
	} else {
		name = s.tool + "#" + strconv.FormatUint(callSeq.Add(1), 10)
	}
	callCtx, callDone := audit.WithCall(s.ctx, name, args)
	defer callDone()
	now := time.Now()
	deadline := now.Add(s.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	limit := deadline.Sub(now)
	runCtx, cancel := context.WithDeadline(callCtx, deadline)
	defer cancel()
	stopAfter := context.AfterFunc(ctx, cancel)
	defer stopAfter()

	out, errb := newCapBuffer(s.max), newCapBuffer(s.max)
	s.out.set(out)
	s.err.set(errb)
	defer s.out.set(nil)
	defer s.err.set(nil)
	if err := interp.StdIO(nil, out, errb)(s.runner); err != nil {
		return nil, fmt.Errorf("shellguard: %w", err)
	}
	s.h.track.open()
	start := time.Now()

	runErr := s.runner.Run(runCtx, file)
	// The caller's deadline counts as the call's timeout (it may reach
	// the interpreter as a cancellation, through the AfterFunc).
	timedOut := runErr != nil && (errors.Is(runCtx.Err(), context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded))
	cancelled := runErr != nil && !timedOut && runCtx.Err() != nil

	// End the call: whatever it started in the background is killed now,
	// and waited for.
	cancel()
	var settleErr error
	select {
	case <-s.h.track.close():
		s.h.track.closeFiles()
	case <-time.After(settleTimeout):
		s.log.Error("shellguard: a call's programs did not end after it was killed", "call", name)
		s.closed.Store(true)
		s.stop()
		settleErr = ErrStuck
	}

	res := &Result{Call: name, TimedOut: timedOut}
	res.ExitCode = exitCode(runErr)
	switch {
	case timedOut:
		res.ExitCode = StatusKilled
		fmt.Fprintf(errb, "\n[timed out after %v: every program the call started was killed]\n", limit.Round(time.Millisecond))
	case cancelled:
		res.ExitCode = StatusCancelled
		fmt.Fprintf(errb, "\n[cancelled: every program the call started was killed]\n")
	case runErr != nil && !isStatus(runErr):
		// A handler's fatal error (not a status): the script stopped.
		fmt.Fprintf(errb, "shellguard: %v\n", runErr)
	}
	s.out.set(nil)
	s.err.set(nil)
	res.Stdout, res.StdoutCut = out.result()
	res.Stderr, res.StderrCut = errb.result()
	d := s.runner.Dir
	s.dir.Store(&d)
	res.Dir = d
	if s.rec != nil {
		for _, r := range s.rec.Records() {
			if r.Tool == name && !r.Time.Before(start) {
				res.Records = append(res.Records, r)
			}
		}
	}
	switch {
	case settleErr != nil:
		return res, settleErr
	case s.closed.Load():
		return res, ErrClosed
	case ctx.Err() != nil && !timedOut:
		return res, ctx.Err()
	}
	return res, nil
}

// exitCode is the status Run's error stands for.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var es interp.ExitStatus
	if errors.As(err, &es) {
		return int(es)
	}
	return 1
}

func isStatus(err error) bool {
	var es interp.ExitStatus
	return errors.As(err, &es)
}

// Dir returns the session's working directory as the last call left it.
func (s *Session) Dir() string { return *s.dir.Load() }

// Close ends the session: a Run in progress is ended as by a
// cancellation (everything it started is killed) and Close returns once
// it has returned; the descriptors the session keeps on the write roots
// are closed. Later Runs return ErrClosed. Close is idempotent.
func (s *Session) Close() error {
	s.closed.Store(true)
	s.stop()
	s.turn <- struct{}{} // the Run in progress has returned
	defer func() { <-s.turn }()
	return s.h.Close()
}
