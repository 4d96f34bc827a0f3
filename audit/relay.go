package audit

import (
	"context"
	"log/slog"
	"runtime"
	"time"
)

// A guard can decide on behalf of a scope of another process: isolate runs
// a host tool call in a sandboxed child of the same binary, whose guard is
// rebuilt from the caller's scope (policies, modes, data) and decides its
// calls there, purely. The host callbacks never run in the child: the
// child asks the host's scope (AskOnCall, AskBeforeDeny), and every record
// the child makes is replayed into the host's logger and Recorder
// (Replay), so the host sees the child's calls as its own.

// Settings is how a guard decides beyond its policy and data: what a guard
// built for another process needs to decide the same way.
type Settings struct {
	// Modes is the mode of each protocol, indexed by Protocol (FS, Exec,
	// Net).
	Modes []Mode
	// LogAllows and RescueHard are the options of the same names.
	LogAllows, RescueHard bool
	// OnCall and BeforeDeny say whether the callbacks are set; a child
	// asks the host only for those that are.
	OnCall, BeforeDeny bool
	// ChildFileCalls is WithChildFileCalls: a sandbox sends the host the
	// file calls it allows, not only its refusals.
	ChildFileCalls bool
}

// Settings returns g's current modes and options.
func (g *Guard) Settings() Settings {
	st := g.state.Load()
	return Settings{
		Modes:          append([]Mode(nil), st.modes[:]...),
		LogAllows:      g.logAllows,
		RescueHard:     g.rescueHard,
		OnCall:         g.onCall != nil,
		BeforeDeny:     g.beforeDeny != nil,
		ChildFileCalls: g.childCalls,
	}
}

// Options returns the options that make a guard decide as s says:
// modes, WithLogAllows, WithRescueHard, WithChildFileCalls. Callbacks are
// not among them.
func (s Settings) Options() []Option {
	var opts []Option
	for p, m := range s.Modes {
		if Protocol(p) < numProtocols {
			opts = append(opts, WithMode(Protocol(p), m))
		}
	}
	if s.LogAllows {
		opts = append(opts, WithLogAllows())
	}
	if s.RescueHard {
		opts = append(opts, WithRescueHard())
	}
	if s.ChildFileCalls {
		opts = append(opts, WithChildFileCalls())
	}
	return opts
}

// WithRecordHook calls fn with every record the guard makes, after the
// Recorder and before the logger, on the goroutine of the guarded call;
// fn must not block for long and must not make guarded calls. isolate's
// child uses it to send its records to the host.
func WithRecordHook(fn func(context.Context, Record)) Option {
	return func(g *Guard, _ *state) { g.recordHook = fn }
}

// relayed prepares an event decided elsewhere for this scope's callbacks:
// the scope, the host data in force, the tool call ctx carries, and the
// caller's frames as the other process captured them.
func (s *Scope) relayed(ctx context.Context, ev *Event, frames []runtime.Frame) {
	ev.scope = s
	ev.Data = s.g.state.Load().data
	ev.Call = CallFrom(ctx)
	ev.frames, ev.captured = frames, true
}

// AskOnCall runs the guard's OnCall for an event another process is
// deciding on this scope's behalf; frames are the caller's stack there.
// It returns Continue when no OnCall is set or the scope is closed
// (the other process then decides by policy, and a closed scope's
// decisions are denied by it anyway). A panicking callback gives a
// *CallbackPanic, logged here as the pipeline logs it.
func (s *Scope) AskOnCall(ctx context.Context, ev *Event, frames []runtime.Frame) (Verdict, error) {
	if s.Err() != nil || s.g.onCall == nil {
		return Continue, nil
	}
	s.relayed(ctx, ev, frames)
	v, fault := s.g.callOnCall(ctx, ev)
	if fault != nil {
		s.g.logFault(ctx, fault)
	}
	return v, fault
}

// AskBeforeDeny runs the guard's BeforeDeny for a rescuable denial another
// process made on this scope's behalf (ev.Decision says why). It returns
// false when no BeforeDeny is set or the scope is closed.
func (s *Scope) AskBeforeDeny(ctx context.Context, ev *Event, frames []runtime.Frame) (bool, error) {
	if s.Err() != nil || s.g.beforeDeny == nil {
		return false, nil
	}
	s.relayed(ctx, ev, frames)
	ok, fault := s.g.callBeforeDeny(ctx, ev)
	if fault != nil {
		s.g.logFault(ctx, fault)
	}
	return ok, fault
}

// Replay writes a record made by a guard in another process on this
// scope's behalf to this guard's Recorder, record hook and logger, as its
// own: ScopeID becomes this scope's; rec.Remote should say where it was
// made. It is written even after the scope was released, since the
// decision was made while it was open.
func (s *Scope) Replay(ctx context.Context, rec Record) {
	rec.ScopeID = s.id
	if rec.Outcome == Allowed && !s.g.logAllows {
		return
	}
	s.g.emit(ctx, &rec, s.g.logger.Enabled(ctx, outcomeLevel(rec.Outcome)), time.Now())
}

func (g *Guard) logFault(ctx context.Context, fault error) {
	if cp, ok := fault.(*CallbackPanic); ok {
		g.logger.LogAttrs(ctx, slog.LevelError, "auditguard callback panicked; the call is denied",
			slog.String("callback", cp.Callback), slog.Any("value", cp.Value), slog.String("stack", cp.Stack))
	}
}
