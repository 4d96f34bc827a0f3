package audit

import (
	"context"
	"fmt"
	"runtime"

	"github.com/auditguard/auditguard/policy"
)

// Request is the pure question a facade asks about one call. Decide must not
// perform I/O: everything it needs (resolved paths, the resolved program,
// addresses) is gathered by the facade beforehand.
type Request interface {
	Decide(p *policy.Policy) policy.Decision
}

// Check runs the decision pipeline for ev in the scope ctx carries. It
// returns nil when the call may proceed and a *DenyError otherwise.
func Check(ctx context.Context, ev *Event, req Request) error {
	return From(ctx).Check(ctx, ev, req)
}

// Result is what the pipeline decided for one call, as a dry run reports
// it and a facade's Check returns it.
type Result struct {
	// Decision is the deciding answer. Allowed says whether the call goes
	// ahead; for a call a callback rescued or Warn mode let through, Rule,
	// Tier and Detail are still those of the denial that was overturned.
	policy.Decision
	Outcome Outcome // Allowed, Rescued, Warned or Denied
	By      Decider // who decided the outcome
	// Err is what the call returns for the decision: nil when it goes
	// ahead, else the denial (a facade's Check gives it the shape of the
	// call's own errors, with the *DenyError inside).
	Err error
}

// DryRun runs the whole decision for ev in the scope ctx carries, as
// Check does for the real call, and stops before the act: ev.DryRun is
// set, so OnCall and BeforeDeny are asked and can tell; the protocol's
// mode applies; nothing is recorded or logged and no call site is
// remembered as trusted. The facade must not act on the answer.
func DryRun(ctx context.Context, ev *Event, req Request) Result {
	return From(ctx).DryRun(ctx, ev, req)
}

// DryRun is the package-level DryRun in scope s.
func (s *Scope) DryRun(ctx context.Context, ev *Event, req Request) Result {
	ev.DryRun = true
	return s.check(ctx, ev, req, nil)
}

// Decide is Check with the whole answer: who decided, the outcome, and
// the error the call returns. With ev.DryRun set it is a dry run.
func Decide(ctx context.Context, ev *Event, req Request) Result {
	return From(ctx).Decide(ctx, ev, req)
}

// Decide is the package-level Decide in scope s.
func (s *Scope) Decide(ctx context.Context, ev *Event, req Request) Result {
	return s.check(ctx, ev, req, nil)
}

type dryRunKey struct{}

// WithDryRun returns a context in which every pipeline run is a dry run
// (as DryRun) and stores its Result in *res, the last run's winning. It
// lets a facade's Check take the real call's route, whose pipeline run
// sits deep inside shared code, and stop before the act: the facade must
// not act with this context.
func WithDryRun(ctx context.Context, res *Result) context.Context {
	return context.WithValue(ctx, dryRunKey{}, res)
}

// CheckDecided is Check for a call whose policy decision the facade has
// already made, with the scope's policies (Scope.Policies, the first
// denial winning) on the same request: the pipeline carries that verdict
// instead of deciding again. Everything else (scope, OnCall, BeforeDeny,
// mode, record) is as in Check. A fast path uses it to hand over a denial
// it found, so the call costs one decision.
func (s *Scope) CheckDecided(ctx context.Context, ev *Event, req Request, d policy.Decision) error {
	return s.check(ctx, ev, req, &d).Err
}

// Check runs the decision pipeline, in this order:
//
//  1. the scope must be open;
//  2. OnCall, if set (a call site trusted in this scope skips it); its
//     Allow and TrustSite overturn soft denials only, hard ones where the
//     host opted in (WithRescueHard, WithTrustSiteHard);
//  3. the policy, and every policy the scope was restricted with;
//  4. BeforeDeny, for rescuable denials;
//  5. the protocol's mode (Warn carries out soft denials, and hard ones
//     only with WithWarnHard; an OnCall Deny always denies);
//  6. a record of the outcome.
//
// With ev.DryRun set (or in a context from WithDryRun) it is a dry run, as
// DryRun says.
func (s *Scope) Check(ctx context.Context, ev *Event, req Request) error {
	return s.check(ctx, ev, req, nil).Err
}

func (s *Scope) check(ctx context.Context, ev *Event, req Request, pre *policy.Decision) Result {
	if slot, ok := ctx.Value(dryRunKey{}).(*Result); ok && slot != nil {
		ev.DryRun = true
		*slot = s.run(ctx, ev, req, pre)
		return *slot
	}
	return s.run(ctx, ev, req, pre)
}

// run is the pipeline; pre, when not nil, is the policy decision already
// made.
func (s *Scope) run(ctx context.Context, ev *Event, req Request, pre *policy.Decision) Result {
	if err := s.Err(); err != nil {
		r := Result{Outcome: Denied, By: ByScope, Err: err}
		if de, ok := err.(*DenyError); ok {
			de.Protocol, de.Op, de.Target, de.Target2 = ev.Protocol, ev.Op, ev.Target, ev.Target2
			de.Caller = ev.Caller() // past the facade's PassOver helpers
			r.Decision = de.Decision
		}
		return r
	}
	g := s.g
	st := g.state.Load()
	mode := Enforce
	if ev.Protocol < numProtocols {
		mode = st.modes[ev.Protocol]
	}
	if mode == Off {
		return Result{Decision: policy.Allow(ruleModeOff), Outcome: Allowed, By: ByOffMode}
	}
	ev.scope = s
	ev.Data = st.data
	ev.Call = CallFrom(ctx)
	ev.recorded = callerPCsFrom(ctx)
	decideNow := func() policy.Decision {
		if pre != nil {
			return *pre
		}
		return decide(st.pol, s.restrict, req)
	}

	// onCallDeny marks a decision OnCall made: no BeforeDeny, no Warn.
	onCallDeny := false
	decided := false
	if g.onCall != nil {
		v := Continue
		trusted := s.trustedSite(ev)
		if !trusted {
			var fault error
			v, fault = g.callOnCall(ctx, ev)
			if fault != nil {
				return g.fail(ctx, ev, fault)
			}
		}
		switch {
		case trusted || v == Allow || v == TrustSite:
			// A callback's allow overturns what the policy may overturn
			// for it: soft denials, and hard ones only where the host
			// opted in. Invalid input and self-protection never.
			d := decideNow()
			by, rule, hardOK := ByOnCall, ruleOnCallAllow, g.rescueHard
			if trusted || v == TrustSite {
				by, rule, hardOK = ByTrustSite, ruleTrustedSite, g.trustHard
				if !trusted && !ev.DryRun {
					s.trustSiteOf(ev)
				}
			}
			if d.Allowed || d.Tier == policy.TierSoft || (d.Tier == policy.TierHard && hardOK) {
				ev.Decision = policy.Allow(rule)
				g.record(ctx, ev, Allowed, by, nil)
				return Result{Decision: ev.Decision, Outcome: Allowed, By: by}
			}
			ev.Decision, decided = d, true
		case v == Deny:
			// A callback may name its own rule (ev.Decision set to a
			// denial) so the error teaches that instead.
			if ev.Decision.Allowed || ev.Decision.Rule == nil {
				ev.Decision = policy.Deny(policy.TierHard, ruleOnCallDeny, "")
			}
			decided, onCallDeny = true, true
		case v == Continue:
		default:
			ev.Decision = policy.Deny(policy.TierFault, ruleFault, "OnCall returned an unknown verdict")
			decided, onCallDeny = true, true
		}
	}
	if !decided {
		ev.Decision = decideNow()
	}
	if ev.Decision.Allowed {
		g.record(ctx, ev, Allowed, ByPolicy, nil)
		return Result{Decision: ev.Decision, Outcome: Allowed, By: ByPolicy}
	}

	by := ByPolicy
	if onCallDeny {
		by = ByOnCall
	}
	t := ev.Decision.Tier
	rescuable := t == policy.TierSoft || (t == policy.TierHard && g.rescueHard)
	if rescuable && !onCallDeny && g.beforeDeny != nil {
		ok, fault := g.callBeforeDeny(ctx, ev)
		if fault != nil {
			return g.fail(ctx, ev, fault)
		}
		if ok {
			g.record(ctx, ev, Rescued, ByBeforeDeny, nil)
			return goesAhead(ev.Decision, Rescued, ByBeforeDeny)
		}
	}
	// Warn carries out what the policy merely does not allow; a hard-tier
	// denial (a protected name, an explicit deny, a special-purpose
	// address) is still refused unless the host opted in for the protocol,
	// and an OnCall Deny is always a denial.
	if mode == Warn && !onCallDeny && (t == policy.TierSoft || (t == policy.TierHard && g.warnHard(ev.Protocol))) {
		g.record(ctx, ev, Warned, ByWarnMode, nil)
		return goesAhead(ev.Decision, Warned, ByWarnMode)
	}
	err := ev.denyError(nil, by)
	g.record(ctx, ev, Denied, by, err)
	return Result{Decision: ev.Decision, Outcome: Denied, By: by, Err: err}
}

// goesAhead is the Result of a denial that was overturned: the call goes
// ahead, and the denial's rule, tier and detail say what was overturned.
func goesAhead(d policy.Decision, out Outcome, by Decider) Result {
	d.Allowed = true
	return Result{Decision: d, Outcome: out, By: by}
}

// decide asks the guard's policy, then every restriction; the first denial
// wins, and so does the strictest allowing rule's absence.
func decide(p *policy.Policy, restrict []*policy.Policy, req Request) policy.Decision {
	if req == nil {
		return policy.Deny(policy.TierInvalid, ruleNoRequest, "")
	}
	d := req.Decide(p)
	if !d.Allowed {
		return d
	}
	for _, r := range restrict {
		if rd := req.Decide(r); !rd.Allowed {
			return rd
		}
	}
	return d
}

var (
	ruleOnCallAllow = &policy.Rule{Kind: policy.KindHost, Pattern: "OnCall returned Allow", Source: "host callback"}
	ruleTrustedSite = &policy.Rule{Kind: policy.KindHost, Pattern: "call site trusted by OnCall", Source: "host callback"}
	ruleNoRequest   = &policy.Rule{Kind: policy.KindInvalid, Pattern: "a guarded call must say what it asks", Source: "builtin"}
	ruleModeOff     = &policy.Rule{Kind: policy.KindHost, Pattern: "mode off: no checks", Source: "guard mode"}
)

func (ev *Event) denyError(cause error, by Decider) *DenyError {
	e := &DenyError{
		Protocol: ev.Protocol, Op: ev.Op, Target: ev.Target, Target2: ev.Target2,
		Resolved: ev.Resolved, Decision: ev.Decision, By: by, Caller: ev.Caller(),
		ScopeID: ev.ScopeID(), ScopeEntered: ev.ScopeEntered(), Err: cause,
	}
	if ev.scope != nil && ev.Decision.Rule != nil {
		// A policy loaded from a file gives its hints in TOML terms.
		if st := ev.scope.g.state.Load(); st != nil && st.pol != nil {
			e.Hint = st.pol.HintFor(ev.Decision.Rule)
		}
	}
	return e
}

// fail denies because a callback panicked, whatever the mode. A dry run
// reports the fault in its answer and logs nothing.
func (g *Guard) fail(ctx context.Context, ev *Event, fault error) Result {
	ev.Decision = policy.Deny(policy.TierFault, ruleFault, "")
	err := ev.denyError(fault, ByFault)
	if !ev.DryRun {
		g.logFault(ctx, fault)
	}
	g.record(ctx, ev, Denied, ByFault, err)
	return Result{Decision: ev.Decision, Outcome: Denied, By: ByFault, Err: err}
}

// CallbackPanic is the cause of a denial made because a host callback
// panicked.
type CallbackPanic struct {
	Callback string
	Value    any
	Stack    string
}

func (p *CallbackPanic) Error() string {
	return fmt.Sprintf("%s panicked: %v", p.Callback, p.Value)
}

func recoverInto(name string, fault *error) {
	if v := recover(); v != nil {
		buf := make([]byte, 8<<10)
		buf = buf[:runtime.Stack(buf, false)]
		*fault = &CallbackPanic{Callback: name, Value: v, Stack: string(buf)}
	}
}

func (g *Guard) callOnCall(ctx context.Context, ev *Event) (v Verdict, fault error) {
	defer recoverInto("OnCall", &fault)
	ev.inHook = true
	defer func() { ev.inHook = false }()
	return g.onCall(ctx, ev), nil
}

func (g *Guard) callBeforeDeny(ctx context.Context, ev *Event) (ok bool, fault error) {
	defer recoverInto("BeforeDeny", &fault)
	ev.inHook = true
	defer func() { ev.inHook = false }()
	return g.beforeDeny(ctx, ev), nil
}

// selfProtect denies a re-configuration attempt from inside scope s. No
// callback is asked and no mode applies.
func (s *Scope) selfProtect(ctx context.Context, what string) error {
	ev := &Event{Op: policy.OpConfig, Target: what, scope: s}
	ev.Decision = policy.Deny(policy.TierSelf, ruleSelf, "")
	err := ev.denyError(ErrSelfProtection, ByScope)
	s.g.record(ctx, ev, Denied, ByScope, err)
	return err
}
