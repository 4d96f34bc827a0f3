package audit

import (
	"context"
	"runtime"
)

// WithDouble installs a test double on the guard under key: a facade looks
// its own up with Scope.Double and serves the calls the pipeline allowed
// from it instead of the operating system (procguard.WithDouble and
// netguard.WithDouble wrap this with their own keys). Doubles are fixed at
// New, like the callbacks, so code inside a scope cannot install one. The
// pipeline is not changed by a double: a call it denies never reaches it.
func WithDouble(key, double any) Option {
	return func(g *Guard, _ *state) {
		if g.doubles == nil {
			g.doubles = map[any]any{}
		}
		g.doubles[key] = double
	}
}

// Double returns the test double installed under key on the scope's guard,
// or nil (always nil for a nil scope).
func (s *Scope) Double(key any) any {
	if s == nil || s.g.doubles == nil {
		return nil
	}
	return s.g.doubles[key]
}

// CallerFrame returns the first frame outside auditguard's library packages
// on the current goroutine's stack, or on the stack ctx recorded with
// WithCallerStack: the call site a denial would name. Test doubles use it to
// say where an unscripted call came from.
func CallerFrame(ctx context.Context) runtime.Frame {
	if cp := callerPCsFrom(ctx); cp != nil {
		f, _, _ := firstCaller(cp.pcs, cp.skip, false, cp.physical)
		return frameOf(f)
	}
	return callerFrame()
}
