package audit

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// TestRelay plays both sides in one process: a "child" guard rebuilt from
// the host's settings, with callbacks that ask the host's scope and a
// record hook that replays into it. The host's callbacks see the child's
// frames, its Recorder and logger get the child's records, attributed.
func TestRelay(t *testing.T) {
	root := tempDir(t)
	pol := newPolicy(t, policy.Spec{WriteRoots: []string{root}})
	hostRec := NewRecorder()
	var logs logBuffer
	var sawFrames []runtime.Frame
	host := newGuard(t, pol, WithRecorder(hostRec), WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
		WithMode(Net, Warn),
		WithOnCall(func(ctx context.Context, ev *Event) Verdict {
			sawFrames = ev.Frames()
			return Continue
		}),
		WithBeforeDeny(func(ctx context.Context, ev *Event) bool {
			return filepath.Base(ev.Target) == "rescue-me" && ev.Call != nil && ev.Call.Name == "tool"
		}))
	hctx := enter(t, host)
	hctx, done := WithCall(hctx, "tool", nil)
	defer done()
	scope := From(hctx)

	set := host.Settings()
	if !set.OnCall || !set.BeforeDeny || set.LogAllows || set.Modes[Net] != Warn {
		t.Fatalf("settings %+v", set)
	}
	relay := func(ev *Event) (*Event, []runtime.Frame) {
		// What travels: the call's fields and the child's frames.
		return &Event{Protocol: ev.Protocol, Op: ev.Op, Target: ev.Target, Resolved: ev.Resolved, Decision: ev.Decision}, ev.Frames()
	}
	opts := append(set.Options(), WithLogger(quiet),
		WithOnCall(func(ctx context.Context, ev *Event) Verdict {
			rev, frames := relay(ev)
			v, err := scope.AskOnCall(hctx, rev, frames)
			if err != nil {
				panic(err)
			}
			return v
		}),
		WithBeforeDeny(func(ctx context.Context, ev *Event) bool {
			rev, frames := relay(ev)
			ok, err := scope.AskBeforeDeny(hctx, rev, frames)
			if err != nil {
				panic(err)
			}
			return ok
		}),
		WithRecordHook(func(ctx context.Context, r Record) {
			r.Remote = "child"
			scope.Replay(hctx, r)
		}))
	child := newGuard(t, pol, opts...)
	cctx := enter(t, child)
	cctx, cdone := WithCall(cctx, "tool", nil)
	defer cdone()

	if err := fsCheck(cctx, policy.OpWrite, "/etc/x", root); !errors.Is(err, ErrDenied) {
		t.Fatalf("outside write: %v", err)
	}
	if len(sawFrames) == 0 || sawFrames[0].Function != "github.com/auditguard/auditguard/audit.fsCheck" {
		t.Errorf("host OnCall saw frames %v, want the child's caller first", sawFrames)
	}
	if err := fsCheck(cctx, policy.OpWrite, "/etc/rescue-me", root); err != nil {
		t.Fatalf("BeforeDeny in the host did not rescue: %v", err)
	}
	recs := hostRec.Records()
	if len(recs) != 2 {
		t.Fatalf("host records: %+v", recs)
	}
	want := []Outcome{Denied, Rescued}
	for i, r := range recs {
		if r.Outcome != want[i] || r.Remote != "child" || r.Tool != "tool" || r.ScopeID != scope.ID() {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	if n := len(logs.records(t)); n != 2 {
		t.Errorf("host logger got %d records, want 2", n)
	}
}

// TestRelayCallbackPanic: a host callback that panics while asked for a
// child returns the fault; the child's pipeline turns it into a denial.
func TestRelayCallbackPanic(t *testing.T) {
	host := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{tempDir(t)}}),
		WithOnCall(func(context.Context, *Event) Verdict { panic("boom") }))
	ctx := enter(t, host)
	v, err := From(ctx).AskOnCall(ctx, &Event{Protocol: FS, Op: policy.OpWrite, Target: "/x"}, nil)
	var cp *CallbackPanic
	if !errors.As(err, &cp) || v != Continue {
		t.Fatalf("verdict %v err %v", v, err)
	}
}

// TestSettingsOptionsRoundTrip: a guard built from another's
// Settings().Options() has the same settings, callbacks aside.
func TestSettingsOptionsRoundTrip(t *testing.T) {
	pol := newPolicy(t, policy.Spec{WriteRoots: []string{t.TempDir()}})
	for _, opts := range [][]Option{
		nil,
		{WithLogAllows()},
		{WithRescueHard(), WithMode(FS, Warn)},
		{WithChildFileCalls(), WithMode(Net, Off)},
	} {
		want := newGuard(t, pol, opts...).Settings()
		got := newGuard(t, pol, want.Options()...).Settings()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("from %+v: got %+v", want, got)
		}
	}
}
