package audit

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/auditguard/auditguard/policy"
)

// Scope is one entry into a guard, carried by a context. Guarded handles
// made from the context check every call against it; releasing it revokes
// them all, from any goroutine.
type Scope struct {
	g        *Guard
	id       uint64
	parent   *Scope
	restrict []*policy.Policy // narrowing policies, outermost first
	entered  string           // "file.go:12 pkg.Func" of the Enter call
	closed   atomic.Bool
	trust    siteTrust // call sites OnCall trusted in this scope (trust.go)

	// life is what release waits for and closes (release.go); releaseMu
	// makes a second release wait for the first.
	life      lifetime
	releaseMu sync.Mutex

	// done is closed when this scope or one it is nested in is released;
	// children are the open scopes nested in this one, closed with it.
	mu       sync.Mutex
	done     chan struct{}
	isDone   bool
	children map[*Scope]struct{}
}

type scopeKey struct{}

var scopeIDs atomic.Uint64 // only touched by Enter and Restrict, never per call

// From returns the scope ctx carries, or nil.
func From(ctx context.Context) *Scope {
	if ctx == nil {
		return nil
	}
	s, _ := ctx.Value(scopeKey{}).(*Scope)
	return s
}

// Enter opens a scope of g on ctx: the Go form of fastaudit's
// `with audit_perms():`. Call release when the guarded work is over;
// release is idempotent. Release denies new calls, waits for calls in
// flight (up to DefaultReleaseWait, or WithReleaseWait), then closes every
// file and connection made through the scope (unless WithKeepHandles),
// kills every child started from it and closes its root handles; see
// release.go and docs/threat-model.md for the line between "after
// release" and "leaked".
//
// Entering the same guard again nests a scope; entering a different guard
// inside a scope (open or released) is denied, whatever the callbacks say,
// because it could replace the policy from inside the sandbox. Use Restrict
// to narrow instead.
func (g *Guard) Enter(ctx context.Context) (context.Context, func(), error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if !g.valid() {
		return ctx, func() {}, ErrInvalidGuard
	}
	outer := From(ctx)
	if outer != nil && outer.g != g {
		return ctx, func() {}, outer.selfProtect(ctx, "Enter of another guard")
	}
	s := &Scope{g: g, id: scopeIDs.Add(1), parent: outer, entered: callerSite(), done: make(chan struct{})}
	if outer != nil {
		if err := outer.Err(); err != nil {
			return ctx, func() {}, err
		}
		s.restrict = outer.restrict
		outer.adopt(s)
	}
	return context.WithValue(ctx, scopeKey{}, s), s.release, nil
}

// Restrict opens a nested scope on ctx whose decisions must also be allowed
// by p: the intersection of the policies in force, never a widening. It is
// allowed inside a scope (that is its purpose) and fails with ErrNoScope
// outside one.
func Restrict(ctx context.Context, p *policy.Policy) (context.Context, func(), error) {
	outer := From(ctx)
	if outer == nil {
		return ctx, func() {}, noScopeError("Restrict")
	}
	if err := outer.Err(); err != nil {
		return ctx, func() {}, err
	}
	if p == nil {
		return ctx, func() {}, ErrNilPolicy
	}
	r := make([]*policy.Policy, 0, len(outer.restrict)+1)
	r = append(append(r, outer.restrict...), p)
	s := &Scope{g: outer.g, id: scopeIDs.Add(1), parent: outer, restrict: r, entered: callerSite(), done: make(chan struct{})}
	outer.adopt(s)
	return context.WithValue(ctx, scopeKey{}, s), s.release, nil
}

// adopt links an open nested scope, so releasing s ends it too.
func (s *Scope) adopt(child *Scope) {
	s.mu.Lock()
	if s.isDone {
		s.mu.Unlock()
		child.finish()
		return
	}
	if s.children == nil {
		s.children = map[*Scope]struct{}{}
	}
	s.children[child] = struct{}{}
	s.mu.Unlock()
}

// finish closes done, here and in every nested scope.
func (s *Scope) finish() {
	s.mu.Lock()
	if s.isDone {
		s.mu.Unlock()
		return
	}
	s.isDone = true
	close(s.done)
	kids := s.children
	s.children = nil
	s.mu.Unlock()
	for k := range kids {
		k.finish()
	}
}

// Done returns a channel that is closed when the scope, or a scope it is
// nested in, is released: procguard kills the children started in it then.
// A nil scope returns nil (never closed).
func (s *Scope) Done() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.done
}

// ID identifies the scope in events and records.
func (s *Scope) ID() uint64 { return s.id }

// Guard returns the guard the scope belongs to.
func (s *Scope) Guard() *Guard { return s.g }

// Entered says where the scope was entered ("file.go:12 pkg.Func").
func (s *Scope) Entered() string { return s.entered }

// Policies returns the policies every decision in this scope must satisfy:
// the guard's current one, then each restriction.
func (s *Scope) Policies() []*policy.Policy {
	return append([]*policy.Policy{s.g.Policy()}, s.restrict...)
}

// AsksOnCall reports whether the scope's guard has an OnCall callback.
// One sees every call, allowed ones included, and may answer each
// differently: without it, an allowed call's outcome is the policy's
// alone, and the same call is allowed again.
func (s *Scope) AsksOnCall() bool { return s != nil && s.g != nil && s.g.onCall != nil }

// ShowsEvents reports whether the pipeline may show this scope's events
// to a host callback (OnCall, BeforeDeny), which may keep the *Event it
// is shown. Without one, nothing holds an event once its pipeline run
// has returned, so a facade may hand the pipeline an event it reuses.
func (s *Scope) ShowsEvents() bool {
	return s != nil && s.g != nil && (s.g.onCall != nil || s.g.beforeDeny != nil)
}

// Mode returns the guard's mode for protocol p.
func (s *Scope) Mode(p Protocol) Mode { return s.g.Mode(p) }

// ErrFor is Err with the caller found past the functions passOver names
// (a facade's helpers, as Event.PassOver), so the error names the code
// that called, say, afero.WriteFile, not afero.WriteFile.
func (s *Scope) ErrFor(passOver ...string) error {
	err := s.Err()
	if de, ok := err.(*DenyError); ok && len(passOver) > 0 {
		if c := callerOf(passOver); c != nil {
			de.Caller = *c
		}
	}
	return err
}

// Err reports whether the scope can still be used: nil, or a *DenyError
// wrapping ErrNoScope (nil scope) or ErrScopeClosed (it, or a scope it is
// nested in, was released).
func (s *Scope) Err() error {
	if s == nil {
		return noScopeError("")
	}
	for x := s; x != nil; x = x.parent {
		if x.closed.Load() {
			return &DenyError{
				Op: policy.OpConfig, ScopeID: s.id, ScopeEntered: x.entered,
				Decision: policy.Deny(policy.TierSelf, ruleScopeClosed, ""),
				Err:      ErrScopeClosed, Caller: callerFrame(), By: ByScope,
			}
		}
	}
	return nil
}
