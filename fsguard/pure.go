package fsguard

import (
	"sync/atomic"

	"github.com/auditguard/auditguard/policy"
)

// fastOff is set when the kernel refuses openat2 (too old, or a seccomp
// filter), for the rest of the process; tests set it to run the slow path.
var fastOff atomic.Bool

// polFacts caches what a policy says about reads.
type polFacts struct {
	pol       *policy.Policy
	readsFree bool
}

// readsFree reports whether p allows every read: no read roots and no
// read-deny entries, so a read's decision does not depend on its path.
func readsFree(p *policy.Policy) bool {
	for _, r := range p.Rules() {
		if r.Kind == policy.KindReadDeny || r.Kind == policy.KindReadRoot {
			return false
		}
	}
	return true
}

// pureState is the part of the scope a pure decision needs: the
// restricting policies (fixed for a scope) and a cache for the guard's
// policy (which SetPolicy may swap).
type pureState struct {
	restrict          []*policy.Policy
	restrictReadsFree bool
	facts             atomic.Pointer[polFacts]
}

func (f *Fs) initPure() {
	if f.scope == nil {
		return
	}
	f.pure.restrict = f.scope.Policies()[1:]
	f.pure.restrictReadsFree = true
	for _, p := range f.pure.restrict {
		if !readsFree(p) {
			f.pure.restrictReadsFree = false
		}
	}
}

// quietRead reports whether a read may skip resolution and the pipeline:
// the scope is Silent (an allowed call leaves no trace) and no policy in
// force restricts reads, so the decision would be "allowed" whatever the
// name resolves to. The read then costs what the raw call costs.
func (f *Fs) quietRead() bool {
	if !f.pure.restrictReadsFree || !f.scope.Silent() {
		return false
	}
	pol := f.scope.Guard().Policy()
	pf := f.pure.facts.Load()
	if pf == nil || pf.pol != pol {
		pf = &polFacts{pol: pol, readsFree: readsFree(pol)}
		f.pure.facts.Store(pf)
	}
	return pf.readsFree
}
