package audit

import (
	"sync"
	"sync/atomic"
)

// siteTrust is the set of call sites an OnCall TrustSite verdict trusted in
// one scope. It lives on the scope, not the guard: trust given to a call
// site while one task ran ends with that task's scope, and a scope nested
// in it (or entered later from the same guard) asks OnCall afresh.
type siteTrust struct {
	sites sync.Map // siteKey -> struct{}
	n     atomic.Int32
}

type siteKey struct {
	file string
	line int
}

// trustedSite reports whether this scope trusts ev's call site. The
// caller's frames are captured only when some site is trusted.
func (s *Scope) trustedSite(ev *Event) bool {
	if s.trust.n.Load() == 0 {
		return false
	}
	c := ev.Caller()
	_, ok := s.trust.sites.Load(siteKey{c.File, c.Line})
	return ok
}

// trustSiteOf remembers ev's call site as trusted by OnCall.
func (s *Scope) trustSiteOf(ev *Event) {
	c := ev.Caller()
	if _, loaded := s.trust.sites.LoadOrStore(siteKey{c.File, c.Line}, struct{}{}); !loaded {
		s.trust.n.Add(1)
	}
}
