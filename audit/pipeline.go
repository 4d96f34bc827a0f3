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
func (s *Scope) Check(ctx context.Context, ev *Event, req Request) error {
	if err := s.Err(); err != nil {
		if de, ok := err.(*DenyError); ok {
			de.Protocol, de.Op, de.Target, de.Target2 = ev.Protocol, ev.Op, ev.Target, ev.Target2
			de.Caller = ev.Caller() // past the facade's PassOver helpers
		}
		return err
	}
	g := s.g
	st := g.state.Load()
	mode := Enforce
	if ev.Protocol < numProtocols {
		mode = st.modes[ev.Protocol]
	}
	if mode == Off {
		return nil
	}
	ev.scope = s
	ev.Data = st.data
	ev.Call = CallFrom(ctx)
	ev.recorded = callerPCsFrom(ctx)

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
			d := decide(st.pol, s.restrict, req)
			by, rule, hardOK := ByOnCall, ruleOnCallAllow, g.rescueHard
			if trusted || v == TrustSite {
				by, rule, hardOK = ByTrustSite, ruleTrustedSite, g.trustHard
				if !trusted {
					s.trustSiteOf(ev)
				}
			}
			if d.Allowed || d.Tier == policy.TierSoft || (d.Tier == policy.TierHard && hardOK) {
				ev.Decision = policy.Allow(rule)
				g.record(ctx, ev, Allowed, by, nil)
				return nil
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
		ev.Decision = decide(st.pol, s.restrict, req)
	}
	if ev.Decision.Allowed {
		g.record(ctx, ev, Allowed, ByPolicy, nil)
		return nil
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
			return nil
		}
	}
	// Warn carries out what the policy merely does not allow; a hard-tier
	// denial (a protected name, an explicit deny, a special-purpose
	// address) is still refused unless the host opted in for the protocol,
	// and an OnCall Deny is always a denial.
	if mode == Warn && !onCallDeny && (t == policy.TierSoft || (t == policy.TierHard && g.warnHard(ev.Protocol))) {
		g.record(ctx, ev, Warned, ByWarnMode, nil)
		return nil
	}
	err := ev.denyError(nil)
	g.record(ctx, ev, Denied, by, err)
	return err
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
)

func (ev *Event) denyError(cause error) *DenyError {
	e := &DenyError{
		Protocol: ev.Protocol, Op: ev.Op, Target: ev.Target, Target2: ev.Target2,
		Resolved: ev.Resolved, Decision: ev.Decision, Caller: ev.Caller(),
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

// fail denies because a callback panicked, whatever the mode.
func (g *Guard) fail(ctx context.Context, ev *Event, fault error) error {
	ev.Decision = policy.Deny(policy.TierFault, ruleFault, "")
	err := ev.denyError(fault)
	g.logFault(ctx, fault)
	g.record(ctx, ev, Denied, "callback fault", err)
	return err
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
	return g.onCall(ctx, ev), nil
}

func (g *Guard) callBeforeDeny(ctx context.Context, ev *Event) (ok bool, fault error) {
	defer recoverInto("BeforeDeny", &fault)
	return g.beforeDeny(ctx, ev), nil
}

// selfProtect denies a re-configuration attempt from inside scope s. No
// callback is asked and no mode applies.
func (s *Scope) selfProtect(ctx context.Context, what string) error {
	ev := &Event{Op: policy.OpConfig, Target: what, scope: s}
	ev.Decision = policy.Deny(policy.TierSelf, ruleSelf, "")
	err := ev.denyError(ErrSelfProtection)
	s.g.record(ctx, ev, Denied, ByScope, err)
	return err
}
