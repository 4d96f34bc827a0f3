package isolate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// DefaultTimeout is how long a call may run when no Timeout option is
// given.
const DefaultTimeout = 30 * time.Second

// DefaultMaxOutput caps the bytes a child may send (its result, captured
// stdout and records together) unless MaxOutput says otherwise.
const DefaultMaxOutput = 64 << 20

// Option configures one call.
type Option func(*options)

type options struct {
	timeout   time.Duration
	limits    policy.ExecLimits
	stdout    io.Writer
	stderr    io.Writer
	env       []string
	conf      *procguard.Confinement
	maxOutput int64
}

// Timeout kills the call after d (DefaultTimeout otherwise); d <= 0 means
// no timeout beyond the caller's context.
func Timeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// MemoryLimit caps the memory of the child and everything it starts (the
// cgroup memory controller); past it the kernel kills the child and the
// call fails with OutOfMemory. 0 keeps the policy's exec limit.
func MemoryLimit(bytes uint64) Option { return func(o *options) { o.limits.MemoryBytes = bytes } }

// ProcessLimit caps the processes and threads alive at once in the child's
// tree (the cgroup pids controller; the child's Go runtime needs about
// ten threads). 0 keeps the policy's exec limit (procguard's default 512
// when it has none).
func ProcessLimit(n uint64) Option { return func(o *options) { o.limits.Processes = n } }

// Rlimits sets the child's rlimits (CPUSeconds, FileSize, AddressSpace,
// OpenFiles; other fields are ignored), in force from its first
// instruction. A zero field keeps the policy's exec limit.
func Rlimits(l policy.ExecLimits) Option {
	return func(o *options) {
		o.limits.CPUSeconds, o.limits.FileSize = l.CPUSeconds, l.FileSize
		o.limits.AddressSpace, o.limits.OpenFiles = l.AddressSpace, l.OpenFiles
	}
}

// Stdout receives what the function writes to its standard output
// (discarded otherwise). Writes happen on the calling goroutine.
func Stdout(w io.Writer) Option { return func(o *options) { o.stdout = w } }

// Stderr receives the child's standard error as it comes (it is also kept,
// in part, in Error.Stderr). Writes happen on another goroutine.
func Stderr(w io.Writer) Option { return func(o *options) { o.stderr = w } }

// Env adds variables ("NAME=value") to the child's environment, which is
// otherwise what the policy lets a child have (policy.ExecEnv).
func Env(kv ...string) Option { return func(o *options) { o.env = append(o.env, kv...) } }

// ReportTo stores what was enforced on the child (sandbox, cgroup,
// Landlock, rlimits) in c once the call ended.
func ReportTo(c *procguard.Confinement) Option { return func(o *options) { o.conf = c } }

// MaxOutput caps the bytes the child may send (DefaultMaxOutput
// otherwise); past it the call is killed and fails with BadResult.
func MaxOutput(n int64) Option { return func(o *options) { o.maxOutput = n } }

var callSeq atomic.Uint64

// Call runs the function registered as name in a child process: the host
// binary re-executed inside the sandbox built from the guard scope ctx
// carries, under a cgroup with the call's limits. in is encoded as JSON
// and decoded there as the function's In; the function's Out comes back
// into out (a non-nil pointer, or nil to drop it).
//
// In the child, the function's ctx carries a guard rebuilt from the
// caller's scope (policies, modes, data snapshot, the tool call), so
// fsguard, procguard and netguard handles made from it work there; each
// of its decisions is replayed into the host's logger and Recorder with
// Record.Remote naming the call, and OnCall and BeforeDeny run here, in
// the host, on the calling goroutine.
//
// Every failure is an *Error (see Kind). Call returns only once the
// child and everything it started are gone.
func Call(ctx context.Context, name string, in, out any, opts ...Option) error {
	o := options{timeout: DefaultTimeout, maxOutput: DefaultMaxOutput}
	for _, fn := range opts {
		fn(&o)
	}
	e := lookup(name)
	if e == nil {
		return &Error{Name: name, Kind: Unknown}
	}
	if out != nil {
		if rv := reflect.ValueOf(out); rv.Kind() != reflect.Pointer || rv.IsNil() {
			return &Error{Name: name, Kind: BadResult, Msg: fmt.Sprintf("out must be a non-nil pointer, not %T", out)}
		}
	}
	input, err := json.Marshal(in)
	if err != nil {
		return &Error{Name: name, Kind: BadInput, Msg: err.Error(), Err: err}
	}
	scope := audit.From(ctx)
	if err := scope.Err(); err != nil {
		return &Error{Name: name, Kind: Setup, Err: err}
	}
	if audit.CallFrom(ctx) == nil {
		var done func()
		ctx, done = audit.WithCall(ctx, name, in)
		defer done()
	}
	req := request{Input: input, Policies: scope.Policies(), Settings: scope.Guard().Settings()}
	tc := audit.CallFrom(ctx)
	req.CallName = tc.Name
	if b, err := json.Marshal(tc.Args); err == nil {
		req.CallArgs = b
	}
	if d := scope.Guard().Data(); d != nil {
		if b, err := json.Marshal(d); err == nil {
			req.Data = b // a snapshot that does not encode stays in the host, where the callbacks run
		}
	}
	reqLine, err := json.Marshal(&req)
	if err != nil {
		return &Error{Name: name, Kind: Setup, Err: err}
	}
	return call(ctx, scope, e, append(reqLine, '\n'), out, &o)
}

// call takes a ready child (or starts one), serves it and classifies how
// it ended. The call's own watcher enforces the timeout and the caller's
// context; procguard's supervisor kills the child when the scope is
// released.
func call(ctx context.Context, scope *audit.Scope, e *entry, reqLine []byte, out any, o *options) error {
	env := childEnv(scope, o.env)
	key := keyOf(e.name, scope, env, o.limits)
	p := takeReady(key)
	if p == nil {
		var err error
		if p, err = startProc(context.WithoutCancel(ctx), key, env, o.limits); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return &Error{Name: e.name, Kind: Canceled, Err: cerr}
			}
			return &Error{Name: e.name, Kind: Setup, Err: err}
		}
		p.cold = true
	}
	defer p.close()
	p.stderr.set(o.stderr)
	// The next call of this function in this scope finds a child ready;
	// it starts once this one is over, not while it runs.
	defer refill(context.WithoutCancel(ctx), key, env, o.limits, true)

	hp := p.hp
	remote := fmt.Sprintf("isolate %s#%d pid %d", e.name, callSeq.Add(1), hp.Process.Pid)
	w := watch(ctx, hp, o.timeout)
	var final *message
	overflow := false
	// A cold child is waited for until it is ready (the watcher bounds
	// that); one that fails first has its failure as the outcome.
	if !p.cold || p.awaitReady() {
		// A write only blocks while the child runs and does not read;
		// the timeout, cancel or its death ends that.
		_, _ = p.inW.Write(reqLine)
		p.lr.N = o.maxOutput
		final, overflow = serveHost(ctx, scope, remote, p.dec, p.lr, p.inW, o)
	} else if p.early != nil && isOutcome(p.early.T) {
		final = p.early
	}
	p.inW.Close()
	if overflow {
		_ = hp.Process.Kill()
	}
	cause := w.stop()
	werr := hp.Wait()
	if o.conf != nil {
		*o.conf = hp.Confinement
	}
	res := classify(e.name, final, cause, werr, hp, p.tail.String(), o)
	if overflow && res == nil {
		res = &Error{Name: e.name, Kind: BadResult, Msg: fmt.Sprintf("the child sent more than %d bytes", o.maxOutput)}
	}
	if res != nil {
		return res
	}
	if final.T == msgResult && out != nil {
		if err := json.Unmarshal(final.Out, out); err != nil {
			return &Error{Name: e.name, Kind: BadResult, Msg: fmt.Sprintf("decoding into %T: %v", out, err), Err: err}
		}
	}
	return nil
}

// childEnv is the environment of a child: what the scope's policy lets a
// child have, plus the call's Env.
func childEnv(scope *audit.Scope, set []string) []string {
	pol := scope.Policies()[0]
	es := pol.Exec()
	wd, _ := os.Getwd()
	env, _ := pol.ExecEnv(policy.ExecEnvInput{Host: os.Environ(), Set: set,
		Home: firstNonEmpty(es.Home, wd), Tmp: firstNonEmpty(es.TmpDir, wd)})
	return env
}

// watcher kills a call's child when its timeout passes or its caller's
// context ends, and says which.
type watcher struct {
	done, exited chan struct{}
	cause        error
}

func watch(ctx context.Context, hp *procguard.HostProcess, timeout time.Duration) *watcher {
	w := &watcher{done: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(w.exited)
		var timer <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-w.done:
			return
		case <-ctx.Done():
			w.cause = ctx.Err()
		case <-timer:
			w.cause = errTimedOut
		}
		// The sandbox's init is pid 1 of the call's pid namespace: its
		// death ends every process of the call.
		_ = hp.Process.Kill()
	}()
	return w
}

var errTimedOut = errors.New("timed out")

// stop ends the watcher before the child is reaped, so no kill can reach
// a reaped pid, and returns why it killed (nil if it did not).
func (w *watcher) stop() error {
	close(w.done)
	<-w.exited
	return w.cause
}

// serveHost reads the child's messages until it closes its side: it
// answers asks with the host's callbacks, replays records, passes on
// stdout, and returns the last outcome message.
func serveHost(ctx context.Context, scope *audit.Scope, remote string, dec *json.Decoder, lr *io.LimitedReader, w io.Writer, o *options) (final *message, overflow bool) {
	enc := json.NewEncoder(w)
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			return final, lr.N <= 0
		}
		switch m.T {
		case msgAsk:
			if m.Event == nil {
				continue
			}
			a := answer{ID: m.ID}
			ev, frames := m.Event.event(), framesFromWire(m.Frames)
			var err error
			switch m.Kind {
			case askOnCall:
				a.Verdict, err = scope.AskOnCall(ctx, ev, frames)
			case askBeforeDeny:
				a.Allow, err = scope.AskBeforeDeny(ctx, ev, frames)
			}
			if err != nil {
				a.Fault = err.Error()
			}
			_ = enc.Encode(&a)
		case msgRecord:
			if m.Record != nil {
				m.Record.Remote = remote
				scope.Replay(ctx, *m.Record)
			}
		case msgStdout:
			if o.stdout != nil {
				_, _ = o.stdout.Write(m.Data)
			}
		case msgResult, msgError, msgPanic, msgFail:
			mm := m
			final = &mm
		}
	}
}

func isOutcome(t string) bool {
	return t == msgResult || t == msgError || t == msgPanic || t == msgFail
}

// classify turns how the child ended into nil (a result) or an *Error.
func classify(name string, final *message, cause, werr error, hp *procguard.HostProcess, stderr string, o *options) error {
	if final != nil {
		switch final.T {
		case msgResult:
			return nil
		case msgError:
			return &Error{Name: name, Kind: Failed, Msg: final.Msg, Denied: final.Denied, Stderr: stderr}
		case msgPanic:
			return &Error{Name: name, Kind: Panicked, Msg: final.Msg, Stack: final.Stack, Stderr: stderr}
		case msgFail:
			return &Error{Name: name, Kind: final.Fail, Msg: final.Msg, Stderr: stderr, Err: errors.New(final.Msg)}
		}
	}
	base := Error{Name: name, Stderr: stderr, ExitCode: -1, Signal: hp.Signal}
	if st := hp.ProcessState; st != nil && hp.Signal == 0 {
		base.ExitCode = st.ExitCode()
	}
	var ke *procguard.KilledError
	switch {
	case cause == errTimedOut:
		base.Kind, base.Timeout = TimedOut, o.timeout
	case cause != nil:
		base.Kind, base.Err = Canceled, cause
	case errors.As(werr, &ke):
		base.Kind, base.Err = Canceled, ke.Cause
	case errors.Is(werr, sandbox.ErrInitDied):
		// The sandbox failed, not the function: its status says nothing.
		base.Kind, base.Msg, base.Err = Crashed, werr.Error(), werr
	case hp.OutOfMemory() || strings.Contains(stderr, "runtime: out of memory"):
		base.Kind, base.MemoryLimit = OutOfMemory, hp.MemoryLimit()
	case strings.HasPrefix(stderr, "panic: ") || strings.Contains(stderr, "\npanic: "):
		base.Kind, base.Stack = Panicked, stderr[strings.LastIndex(stderr, "panic: "):]
		base.Msg = firstLine(strings.TrimPrefix(base.Stack, "panic: "))
	case hp.Signal != 0:
		base.Kind = Crashed
	default:
		base.Kind = Crashed
		if i := strings.Index(stderr, "fatal error: "); i >= 0 {
			base.Msg = firstLine(stderr[i:])
		}
	}
	return &base
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

var (
	exeOnce sync.Once
	exePath string
	exeErr  error
)

// hostExecutable is the real path of this binary, re-executed as the child.
func hostExecutable() (string, error) {
	exeOnce.Do(func() {
		exePath, exeErr = os.Executable()
		if exeErr == nil {
			exePath, exeErr = filepath.EvalSymlinks(exePath)
		}
	})
	return exePath, exeErr
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
