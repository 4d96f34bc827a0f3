package audit

import (
	"context"
	"runtime"
	"sync/atomic"

	"github.com/auditguard/auditguard/policy"
)

// Event is one guarded call as the pipeline and the host callbacks see it.
// Facades fill the call's fields; the pipeline fills the rest.
type Event struct {
	Protocol  Protocol
	Op        policy.Op
	Target    string   // as the caller named it
	Target2   string   // second name of a two-name operation (rename, link)
	Resolved  string   // where Target really lands, when resolved
	Resolved2 string   // where Target2 really lands
	Argv      []string // exec: the arguments, program first
	Program   string   // exec: the resolved program
	Detail    string   // facade-specific detail ("O_WRONLY|O_CREATE", "tcp")
	// Child: exec, what the kernel will hold the child to (nil otherwise).
	Child *Child
	// PassOver lists function-name prefixes whose frames are passed over
	// like auditguard's own when finding the caller: the helpers of the
	// interface a facade implements ("github.com/spf13/afero." for
	// afero.WriteFile), so the caller is the code that called them.
	PassOver []string
	// DryRun is set when the call is only being checked (a facade's Check,
	// Scope.DryRun): the pipeline decides as for the real call, asking the
	// callbacks, but nothing will be done and nothing is recorded. A
	// callback that keeps state per call (counts, budgets, trusted sites)
	// can tell the two apart here.
	DryRun bool

	// Set by the pipeline.
	Decision policy.Decision // the policy's answer, once asked
	Data     any             // the host data snapshot
	Call     *Call           // the running host tool call, nil if none or finished

	scope    *Scope
	frames   []runtime.Frame
	captured bool
	caller   *runtime.Frame // the first of frames, found without the rest (shared: pcFrames)
	site     string         // FormatFrame(*caller), from the same cache entry
	callerOK bool
	inHook   bool       // a host callback is running with this event
	recorded *callerPCs // the requester's stack, when the call runs on its behalf
}

// ScopeID identifies the scope the call was made in.
func (e *Event) ScopeID() uint64 {
	if e.scope == nil {
		return 0
	}
	return e.scope.id
}

// ScopeEntered says where the call's scope was entered.
func (e *Event) ScopeEntered() string {
	if e.scope == nil {
		return ""
	}
	return e.scope.entered
}

// Frames returns the caller's stack, starting at the first frame outside
// auditguard's library packages. It is captured on first use, so a callback
// pays for it only when it asks; call it from the callback itself (or keep
// the result), not after the callback returned.
func (e *Event) Frames() []runtime.Frame {
	if !e.captured {
		e.captured = true
		if r := e.recorded; r != nil {
			e.frames = callerFrames(r.pcs, append(r.skip[:len(r.skip):len(r.skip)], e.PassOver...), r.physical)
		} else {
			e.frames = callerStack(e.PassOver...)
		}
	}
	return e.frames
}

// Caller returns the first frame outside auditguard's library packages.
// It walks the stack only as far as that frame.
func (e *Event) Caller() runtime.Frame {
	switch {
	case e.inHook && !e.captured:
		// A callback asking for the caller may ask for more after it
		// returned (CalledFrom on a kept event): keep the whole stack
		// while it exists, as Frames says.
		e.Frames()
		fallthrough
	case e.captured:
		if len(e.frames) > 0 {
			return e.frames[0]
		}
		return runtime.Frame{}
	case !e.callerOK:
		e.callerOK = true
		if r := e.recorded; r != nil {
			e.caller, e.site, _ = firstCaller(r.pcs, append(r.skip[:len(r.skip):len(r.skip)], e.PassOver...), false, r.physical)
		} else {
			e.caller, e.site = callerSiteOf(e.PassOver)
		}
	}
	return frameOf(e.caller)
}

// callerText is FormatFrame(e.Caller()), taken from the frame cache when
// the caller was found without capturing the whole stack.
func (e *Event) callerText() string {
	f := e.Caller()
	if !e.captured && e.caller != nil {
		return e.site
	}
	return FormatFrame(f)
}

// CalledFrom reports whether function fn is on the caller's stack: fn is a
// function value (mytool.Search, (*T).Method) or its full runtime name
// ("example.com/tool.Search"). It is the building block of frame-based
// allowlists in BeforeDeny.
func (e *Event) CalledFrom(fn any) bool {
	name := funcName(fn)
	if name == "" {
		return false
	}
	for _, f := range e.Frames() {
		if f.Function == name {
			return true
		}
	}
	return false
}

// Call is a running host tool call, marked with WithCall. It grants nothing
// once it has returned.
type Call struct {
	Name string
	Args any
	done atomic.Bool
}

// Active reports whether the call is still running.
func (c *Call) Active() bool { return c != nil && !c.done.Load() }

type callKey struct{}

// WithCall marks ctx as running the trusted host tool name with args, so
// BeforeDeny and OnCall can decide by tool (fastaudit's track_call). Call
// done when the tool returns: from then on the call is absent from events,
// even in goroutines that outlived it.
func WithCall(ctx context.Context, name string, args any) (context.Context, func()) {
	c := &Call{Name: name, Args: args}
	return context.WithValue(ctx, callKey{}, c), func() { c.done.Store(true) }
}

// CallFrom returns the active tool call ctx carries, or nil.
func CallFrom(ctx context.Context) *Call {
	if ctx == nil {
		return nil
	}
	c, _ := ctx.Value(callKey{}).(*Call)
	if !c.Active() {
		return nil
	}
	return c
}
