package audit

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/auditguard/auditguard/policy"
)

// Protocol is the family of a guarded call. Modes are set per protocol.
type Protocol uint8

const (
	FS   Protocol = iota // filesystem calls (fsguard)
	Exec                 // process creation (procguard)
	Net                  // dials and listens (netguard)

	numProtocols
)

var protocolNames = [...]string{FS: "fs", Exec: "exec", Net: "net"}

func (p Protocol) String() string {
	if int(p) < len(protocolNames) {
		return protocolNames[p]
	}
	return "protocol(" + strconv.Itoa(int(p)) + ")"
}

// Mode says what a denial does for one protocol.
type Mode uint8

const (
	// Enforce returns the denial to the caller; nothing happens.
	Enforce Mode = iota
	// Warn records "would deny" and lets a call the policy merely does not
	// allow (a soft denial) proceed: a dry run with real side effects.
	// Hard-tier denials (protected names, explicit deny rules,
	// special-purpose addresses) are still refused unless the host opted in
	// with WithWarnHard; invalid input, self-protection, callback faults and
	// an OnCall Deny are always denied.
	Warn
	// Off skips checks for the protocol. Scope rules still apply.
	Off
)

var modeNames = [...]string{Enforce: "enforce", Warn: "warn", Off: "off"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// Verdict is an OnCall callback's answer.
type Verdict uint8

const (
	// Continue asks the policy (the default).
	Continue Verdict = iota
	// Allow trusts this call: a soft denial (no rule allows it) is
	// overturned; a hard one only with WithRescueHard; invalid input and
	// self-protection never.
	Allow
	// Deny refuses the call in every mode but Off; BeforeDeny is not asked.
	Deny
	// TrustSite allows this call and every later one from the same call site
	// in the same scope without asking the callback again. Like Allow, it
	// overturns soft denials only, unless the host opted in
	// (WithTrustSiteHard).
	TrustSite
)

var verdictNames = [...]string{Continue: "continue", Allow: "allow", Deny: "deny", TrustSite: "trust-site"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// BeforeDenyFunc is asked before a rescuable denial takes effect; returning
// true allows the call.
type BeforeDenyFunc func(ctx context.Context, ev *Event) bool

// OnCallFunc observes every guarded call before the policy is asked. A
// callback that returns Deny may first set ev.Decision to a denial
// (policy.Deny with its own rule and hint): the error then names that rule
// instead of "OnCall returned Deny".
type OnCallFunc func(ctx context.Context, ev *Event) Verdict

// Guard decides guarded calls. It holds a policy snapshot, host data and
// modes, swapped atomically, and the host callbacks, fixed at New.
type Guard struct {
	state atomic.Pointer[state]

	beforeDeny BeforeDenyFunc
	onCall     OnCallFunc
	logger     *slog.Logger
	recorder   *Recorder
	logAllows  bool
	childCalls bool
	rescueHard bool
	trustHard  bool
	recordHook func(context.Context, Record)

	doubles map[any]any // test doubles by facade key (double.go); fixed at New

	releaseWait    time.Duration // release.go
	releaseWaitSet bool
	keepHandles    bool
	warnHardP      [numProtocols]bool

	baseModes [numProtocols]Mode // as given to New; what an unset file mode returns to
}

// state is one immutable snapshot of what decides.
type state struct {
	pol   *policy.Policy
	data  any
	modes [numProtocols]Mode
}

// Option configures a Guard.
type Option func(*Guard, *state)

// WithBeforeDeny sets the callback asked before a rescuable denial.
func WithBeforeDeny(fn BeforeDenyFunc) Option {
	return func(g *Guard, _ *state) { g.beforeDeny = fn }
}

// WithOnCall sets the callback that observes every call.
func WithOnCall(fn OnCallFunc) Option {
	return func(g *Guard, _ *state) { g.onCall = fn }
}

// WithData sets the host data snapshot events carry.
func WithData(d any) Option {
	return func(_ *Guard, s *state) { s.data = d }
}

// WithMode sets the mode of one protocol (Enforce by default).
func WithMode(p Protocol, m Mode) Option {
	return func(_ *Guard, s *state) {
		if p < numProtocols {
			s.modes[p] = m
		}
	}
}

// WithLogger sets where decision records go (slog.Default() otherwise).
// Pass a logger with a discarding handler to silence them.
func WithLogger(l *slog.Logger) Option {
	return func(g *Guard, _ *state) { g.logger = l }
}

// WithRecorder keeps every record in r as well.
func WithRecorder(r *Recorder) Option {
	return func(g *Guard, _ *state) { g.recorder = r }
}

// WithLogAllows records allowed calls too, not only denials, rescues and
// warnings.
func WithLogAllows() Option {
	return func(g *Guard, _ *state) { g.logAllows = true }
}

// WithChildFileCalls has the file calls a sandboxed child's supervisor
// allows decided again in this guard too (procguard, isolate): each is
// recorded as allowed (with WithLogAllows or a Recorder's record hook it
// is kept) and asked of OnCall, which may refuse it. That costs the child
// a round trip to the host per trapped call (every create, write,
// delete, rename and link); without it only the supervisor's refusals
// reach the host.
func WithChildFileCalls() Option {
	return func(g *Guard, _ *state) { g.childCalls = true }
}

// WithRescueHard lets BeforeDeny rescue, and an OnCall Allow overturn, hard
// denials (protected paths, explicit denies, special-purpose addresses).
// Without it, callbacks never outrank the hard tier. Invalid input and
// self-protection are never rescuable.
func WithRescueHard() Option {
	return func(g *Guard, _ *state) { g.rescueHard = true }
}

// WithTrustSiteHard lets a call site OnCall trusted (TrustSite) go on with
// hard denials too. Without it, a trusted site is spared soft denials only:
// it cannot write a protected name or reach a special-purpose address.
// Trust is remembered per scope either way.
func WithTrustSiteHard() Option {
	return func(g *Guard, _ *state) { g.trustHard = true }
}

// WithWarnHard makes Warn mode for protocol p carry out hard-tier denials
// as well (recording them as would-deny). Without it, Warn carries out soft
// denials only and still refuses protected names, explicit deny rules and
// special-purpose addresses: a dry run must not do the damage the hard
// tier exists to prevent.
func WithWarnHard(p Protocol) Option {
	return func(g *Guard, _ *state) {
		if p < numProtocols {
			g.warnHardP[p] = true
		}
	}
}

func (g *Guard) warnHard(p Protocol) bool { return p < numProtocols && g.warnHardP[p] }

// ErrNilPolicy is returned when a guard is given no policy.
var ErrNilPolicy = errors.New("auditguard: nil policy")

// ErrInvalidGuard is returned by a Guard that New did not make: a nil
// *Guard or a zero Guard{}. Like os/exec with a zero Cmd, it is an error,
// not a panic.
var ErrInvalidGuard = errors.New("auditguard: invalid guard (a nil *Guard, or a Guard not made by audit.New)")

// valid reports whether g was made by New.
func (g *Guard) valid() bool { return g != nil && g.state.Load() != nil }

// New returns a guard deciding with p.
func New(p *policy.Policy, opts ...Option) (*Guard, error) {
	if p == nil {
		return nil, ErrNilPolicy
	}
	g := &Guard{}
	st := &state{pol: p}
	for _, o := range opts {
		o(g, st)
	}
	for _, m := range st.modes {
		if m > Off {
			return nil, errors.New("auditguard: unknown mode " + m.String())
		}
	}
	if g.logger == nil {
		g.logger = slog.Default()
	}
	g.baseModes = st.modes
	g.state.Store(st)
	return g, nil
}

// Policy returns the policy in force.
// It is nil for a Guard not made by New.
func (g *Guard) Policy() *policy.Policy {
	if !g.valid() {
		return nil
	}
	return g.state.Load().pol
}

// Data returns the host data snapshot in force.
func (g *Guard) Data() any {
	if !g.valid() {
		return nil
	}
	return g.state.Load().data
}

// Mode returns the mode of protocol p.
func (g *Guard) Mode(p Protocol) Mode {
	if p >= numProtocols || !g.valid() {
		return Enforce
	}
	return g.state.Load().modes[p]
}

// SetData replaces the host data seen by later decisions. It is denied when
// ctx carries a guard scope: code running inside a scope cannot change what
// the callbacks see.
func (g *Guard) SetData(ctx context.Context, d any) error {
	return g.update(ctx, "SetData", func(s *state) { s.data = d })
}

// SetPolicy swaps in a new policy atomically; decisions already running
// finish with the old one. Denied from inside a scope (use Restrict there).
func (g *Guard) SetPolicy(ctx context.Context, p *policy.Policy) error {
	if p == nil {
		return ErrNilPolicy
	}
	return g.update(ctx, "SetPolicy", func(s *state) { s.pol = p })
}

// SetMode changes the mode of one protocol. Denied from inside a scope.
func (g *Guard) SetMode(ctx context.Context, p Protocol, m Mode) error {
	if p >= numProtocols || m > Off {
		return errors.New("auditguard: unknown protocol or mode")
	}
	return g.update(ctx, "SetMode", func(s *state) { s.modes[p] = m })
}

func (g *Guard) update(ctx context.Context, what string, change func(*state)) error {
	if !g.valid() {
		return ErrInvalidGuard
	}
	if s := From(ctx); s != nil {
		return s.selfProtect(ctx, what)
	}
	for {
		old := g.state.Load()
		next := *old
		change(&next)
		if g.state.CompareAndSwap(old, &next) {
			return nil
		}
	}
}
