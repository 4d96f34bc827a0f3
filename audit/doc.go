// Package audit is auditguard's guard: it holds a policy snapshot, host data,
// per-protocol modes and the host callbacks, scopes them on a
// context.Context, and runs the one decision pipeline every guarded call
// goes through.
//
// A host builds a Guard with New, enters it with Guard.Enter, and gives the
// generated-code runner handles made from the returned context (fsguard,
// procguard, netguard). Each handle translates its call into an Event and a
// pure Request and calls Check; it never decides by itself. The pipeline
// checks the scope, asks OnCall, asks the policy (and any Restrict-ed
// narrower ones), asks BeforeDeny for rescuable denials, applies the
// protocol's Mode, and records the outcome with log/slog and the Recorder.
//
// Denials are *DenyError values: errors.Is(err, fs.ErrPermission) and
// errors.Is(err, ErrDenied) hold, and the message says what was blocked,
// by which rule, from which caller, and how to allow it. Who decided is a
// Decider (DenyError.By, Record.DecidedBy): policy, OnCall, BeforeDeny,
// mode, a callback fault or the scope rules. A denial costs one short
// stack walk (to the first frame outside the library; on amd64 it follows
// frame pointers, tens of nanoseconds, checked once against
// runtime.Callers) and builds a record only when a Recorder, a record hook
// or a logger enabled at its level will take it.
//
// A dry run (DryRun, Event.DryRun, WithDryRun) is the whole decision with
// the act left out: callbacks are asked and can tell, the mode applies,
// nothing is recorded or logged. Every facade's Check is one.
//
// Scopes protect themselves: entering another guard, SetData, SetPolicy and
// SetMode are denied inside a scope whatever the callbacks say; Restrict can
// only narrow; releasing a scope revokes every handle made from it: new
// calls are denied, calls in flight are waited for (bounded), and the
// files, connections and children made through it are closed and killed
// before release returns (Scope.Begin, Scope.TrackHandle).
//
// WithDouble installs a test double a facade serves allowed calls from
// (procguard.WithDouble, netguard.WithDouble); the pipeline is the same, so
// a denied call never reaches a double. The audittest package builds a
// whole test firewall from this.
package audit
