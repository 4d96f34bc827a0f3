package audit

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultReleaseWait is how long a scope's release waits for guarded calls
// already in flight (past their check, still acting) before it closes what
// the scope made anyway. WithReleaseWait changes it per guard.
const DefaultReleaseWait = 5 * time.Second

// WithReleaseWait sets how long release waits for guarded calls in flight
// (DefaultReleaseWait otherwise; 0 or less means do not wait at all).
func WithReleaseWait(d time.Duration) Option {
	return func(g *Guard, _ *state) {
		g.releaseWait = d
		g.releaseWaitSet = true
	}
}

// WithKeepHandles makes release leave open the files and connections made
// through its scope, for hosts that hand results on (an open file returned
// to the caller of a tool). Calls that need the scope still fail after
// release, children are still killed and the scope's own root handles are
// still closed; only TrackHandle-d resources survive, and from then on they
// are the host's to close.
func WithKeepHandles() Option {
	return func(g *Guard, _ *state) { g.keepHandles = true }
}

// lifetime is what a scope's release ends: the calls in flight it waits for
// and the resources it closes.
type lifetime struct {
	inflight atomic.Int64

	mu      sync.Mutex
	drained chan struct{} // made by a waiting release; closed when inflight reaches 0
	ended   bool          // resources closed: anything tracked now is closed at once
	res     map[io.Closer]bool
}

// Begin marks a guarded call in flight in s. Release waits for its End
// (up to the guard's release wait) before it closes the scope's files and
// connections and kills its children, so a call that passed its check
// finishes before release returns. Begin returns s.Err() when the scope
// cannot be used; End must be called only after a nil Begin.
//
// Facades call Begin at the top of every call that acts (fsguard methods,
// Dial, an HTTP round trip, a command's Start).
func (s *Scope) Begin() error {
	if s == nil {
		return noScopeError("")
	}
	s.life.inflight.Add(1)
	if err := s.Err(); err != nil {
		s.End()
		return err
	}
	return nil
}

// End marks the end of a call Begin started.
func (s *Scope) End() {
	if s.life.inflight.Add(-1) == 0 && s.closed.Load() {
		s.life.mu.Lock()
		if d := s.life.drained; d != nil {
			s.life.drained = nil
			close(d)
		}
		s.life.mu.Unlock()
	}
}

// TrackHandle registers a file or connection made through s: release
// closes it (unless the guard keeps handles, WithKeepHandles). c must be
// comparable (a pointer). When the scope has already ended, c is closed at
// once and the scope's error is returned. Untrack it when it is closed by
// its owner.
func (s *Scope) TrackHandle(c io.Closer) error { return s.track(c, true) }

// TrackCleanup registers something release must always end, after the
// calls in flight have finished: a child to kill, a root handle to close.
// Like TrackHandle otherwise.
func (s *Scope) TrackCleanup(c io.Closer) error { return s.track(c, false) }

func (s *Scope) track(c io.Closer, handle bool) error {
	if s == nil {
		return noScopeError("")
	}
	s.life.mu.Lock()
	if !s.life.ended {
		if s.life.res == nil {
			s.life.res = map[io.Closer]bool{}
		}
		s.life.res[c] = handle
		s.life.mu.Unlock()
		return nil
	}
	s.life.mu.Unlock()
	if !handle || !s.g.keepHandles {
		c.Close()
	}
	if err := s.Err(); err != nil {
		return err
	}
	return ErrScopeClosed
}

// Untrack forgets c: its owner closed it.
func (s *Scope) Untrack(c io.Closer) {
	if s == nil {
		return
	}
	s.life.mu.Lock()
	delete(s.life.res, c)
	s.life.mu.Unlock()
}

// release ends the scope and every scope nested in it:
//
//  1. they are marked closed: every new guarded call is denied with
//     ErrScopeClosed, and procguard's watchers see Done;
//  2. calls already in flight are waited for, up to the guard's release
//     wait (one deadline for the whole tree);
//  3. everything tracked is closed: handles (unless WithKeepHandles), then
//     cleanups (children killed, root handles closed). A call still in
//     flight after the deadline that makes something new has it closed at
//     once.
//
// It is idempotent; a second call returns after the first finished.
func (s *Scope) release() {
	s.releaseMu.Lock()
	defer s.releaseMu.Unlock()
	tree := s.collect(nil)
	for _, x := range tree {
		x.closed.Store(true)
	}
	s.finish()

	wait := DefaultReleaseWait
	if s.g.releaseWaitSet {
		wait = s.g.releaseWait
	}
	deadline := time.Now().Add(wait)
	var late int64
	for _, x := range tree {
		if !x.drain(deadline) {
			late += x.life.inflight.Load()
		}
	}
	if late > 0 {
		s.g.logger.LogAttrs(context.Background(), slog.LevelWarn,
			"auditguard: release went on with guarded calls still in flight; what they do from now on happens after release",
			slog.Uint64("scope", s.id), slog.Int64("calls", late), slog.Duration("waited", wait))
	}
	var errs []error
	for _, x := range tree {
		errs = append(errs, x.endResources())
	}
	if err := errors.Join(errs...); err != nil {
		s.g.logger.LogAttrs(context.Background(), slog.LevelWarn, "auditguard: closing what the scope made failed",
			slog.Uint64("scope", s.id), slog.String("error", err.Error()))
	}
	if s.parent != nil {
		s.parent.mu.Lock()
		delete(s.parent.children, s)
		s.parent.mu.Unlock()
	}
}

// collect appends s and every scope nested in it, outermost first.
func (s *Scope) collect(out []*Scope) []*Scope {
	out = append(out, s)
	s.mu.Lock()
	kids := make([]*Scope, 0, len(s.children))
	for k := range s.children {
		kids = append(kids, k)
	}
	s.mu.Unlock()
	for _, k := range kids {
		out = k.collect(out)
	}
	return out
}

// drain waits until no call is in flight in s, or until deadline; it
// reports whether the calls drained.
func (s *Scope) drain(deadline time.Time) bool {
	s.life.mu.Lock()
	if s.life.inflight.Load() == 0 {
		s.life.mu.Unlock()
		return true
	}
	if s.life.drained == nil {
		s.life.drained = make(chan struct{})
	}
	d := s.life.drained
	s.life.mu.Unlock()
	left := time.Until(deadline)
	if left <= 0 {
		return false
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-d:
		return true
	case <-t.C:
		return s.life.inflight.Load() == 0
	}
}

// endResources closes what s tracked: handles first (a child's pipes,
// a connection), then cleanups.
func (s *Scope) endResources() error {
	s.life.mu.Lock()
	s.life.ended = true
	res := s.life.res
	s.life.res = nil
	s.life.mu.Unlock()
	var errs []error
	for _, handles := range []bool{true, false} {
		for c, h := range res {
			if h != handles || (h && s.g.keepHandles) {
				continue
			}
			if err := c.Close(); err != nil && !errors.Is(err, fs.ErrClosed) && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
