package isolate

import (
	"bufio"
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

// call starts the child, serves it and classifies how it ended.
func call(ctx context.Context, scope *audit.Scope, e *entry, reqLine []byte, out any, o *options) error {
	exe, err := hostExecutable()
	if err != nil {
		return &Error{Name: e.name, Kind: Setup, Err: err}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return &Error{Name: e.name, Kind: Setup, Err: err}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return &Error{Name: e.name, Kind: Setup, Err: err}
	}
	defer inW.Close()
	defer outR.Close()
	tail := &tailBuffer{max: 64 << 10}
	var stderr io.Writer = tail
	if o.stderr != nil {
		stderr = io.MultiWriter(tail, o.stderr)
	}
	pol := scope.Policies()[0]
	es := pol.Exec()
	wd, _ := os.Getwd()
	home, tmp := es.Home, es.TmpDir
	if home == "" {
		home = wd
	}
	if tmp == "" {
		tmp = wd
	}
	env, _ := pol.ExecEnv(policy.ExecEnvInput{Host: os.Environ(), Set: o.env, Home: home, Tmp: tmp})
	timeout := o.timeout
	if timeout < 0 {
		timeout = 0
	}
	hp, err := procguard.StartHost(ctx, &procguard.HostCommand{
		Path: exe, Args: []string{childArg0, e.name}, Env: env,
		Stdin: inR, Stdout: outW, Stderr: stderr,
		Timeout: timeout, Limits: o.limits, WaitDelay: time.Second,
	})
	inR.Close() // the child has its copies
	outW.Close()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return &Error{Name: e.name, Kind: Canceled, Err: cerr}
		}
		return &Error{Name: e.name, Kind: Setup, Err: err}
	}
	remote := fmt.Sprintf("isolate %s#%d pid %d", e.name, callSeq.Add(1), hp.Process.Pid)

	// A write only blocks while the child runs and does not read; the
	// timeout, cancel or its death ends that.
	_, _ = inW.Write(reqLine)
	final, overflow := serveHost(ctx, scope, remote, outR, inW, o)
	inW.Close()
	if overflow {
		_ = hp.Process.Kill()
	}
	werr := hp.Wait()
	if o.conf != nil {
		*o.conf = hp.Confinement
	}
	res := classify(e.name, final, werr, hp, tail.String(), o)
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

// serveHost reads the child's messages until it closes its side: it
// answers asks with the host's callbacks, replays records, passes on
// stdout, and returns the last outcome message.
func serveHost(ctx context.Context, scope *audit.Scope, remote string, r io.Reader, w io.Writer, o *options) (final *message, overflow bool) {
	lr := &io.LimitedReader{R: r, N: o.maxOutput}
	dec := json.NewDecoder(bufio.NewReaderSize(lr, 64<<10))
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

// classify turns how the child ended into nil (a result) or an *Error.
func classify(name string, final *message, werr error, hp *procguard.HostProcess, stderr string, o *options) error {
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
	case errors.As(werr, &ke) && errors.Is(ke.Cause, procguard.ErrTimeout):
		base.Kind, base.Timeout = TimedOut, o.timeout
	case errors.As(werr, &ke):
		base.Kind, base.Err = Canceled, ke.Cause
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
