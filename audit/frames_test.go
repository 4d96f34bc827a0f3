package audit

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/auditguard/auditguard/policy"
)

// TestPipelineEntryNamesTheEntry: the caller walk stops early only at the
// frame named pipelineEntry; were it renamed away, every denial would
// unwind the whole stack again (correct, but twice the cost).
func TestPipelineEntryNamesTheEntry(t *testing.T) {
	got := runtime.FuncForPC(reflect.ValueOf((*Scope).check).Pointer()).Name()
	if got != pipelineEntry {
		t.Fatalf("pipelineEntry = %q, the entry every check runs through is %q", pipelineEntry, got)
	}
}

// TestFramePointerWalkProbe: on amd64 the caller walk follows frame
// pointers; the probe that allows it must pass, and must have exercised a
// frame with an inlined call (the case the walk's expansion is for).
func TestFramePointerWalkProbe(t *testing.T) {
	if !haveFPWalk {
		t.Skip("no frame-pointer walk on " + runtime.GOARCH + ": runtime.Callers is used")
	}
	if !fpWalkAgrees() {
		fp, rc, _ := fpProbeOuter()
		t.Fatalf("the frame-pointer walk disagrees with runtime.Callers:\nfp      %q\nCallers %q", fp, rc)
	}
	// A goroutine's own chain ends cleanly at its bottom frame.
	var pcs [64]uintptr
	if n, complete := fpCallers(pcs[:]); !complete || n == 0 || n == len(pcs) {
		t.Fatalf("walk of this goroutine: %d frames, complete %v", n, complete)
	}
	_, _, pc0 := fpProbeOuter()
	if pc0 == 0 {
		t.Fatal("fpCallers found no frame")
	}
	f := runtime.FuncForPC(pc0 - 1)
	outer := reflect.ValueOf(fpProbeOuter).Pointer()
	if f == nil || f.Entry() != outer || !strings.HasSuffix(f.Name(), ".fpProbeInlined") {
		t.Skipf("fpProbeInlined was not inlined into fpProbeOuter (built without inlining?): the probe did not test expansion")
	}
}

// denier makes a denied call from its own methods, for the shapes below.
type denier struct{ ctx context.Context }

func (d denier) deny() error { return denyWrite(d.ctx) }

type checker interface{ deny() error }

// callDeny calls c.deny through the interface, out of sight of the
// compiler's devirtualization, so a method set's wrappers stay on the
// stack.
//
//go:noinline
func callDeny(c checker) error { return c.deny() }

// promoted has denier's method as its own, through a wrapper the compiler
// makes; big makes the wrapper copy its receiver rather than jump.
type promoted struct {
	big [8]int
	denier
}

func denyGeneric[T any](ctx context.Context) error { return denyWrite(ctx) }

func denyInto(ctx context.Context, ch chan<- error) { ch <- denyWrite(ctx) }

// denyWrite asks the pipeline for a write no policy allows. It is in a
// _test.go file, so it is the caller the walks look for.
func denyWrite(ctx context.Context) error {
	return Check(ctx, &Event{Protocol: FS, Op: policy.OpWrite, Target: "/nowhere/f"},
		&policy.PathRequest{Op: policy.OpWrite, Path: "/nowhere/f"})
}

// TestCallerWalksAgree: a denial names the same caller whether the stack
// is walked by frame pointers or by runtime.Callers, whatever the shape of
// the call: through an interface, a compiler-made method wrapper, a method
// value, a generic function, a goroutine, a deferred call.
func TestCallerWalksAgree(t *testing.T) {
	if !haveFPWalk || !fpWalkAgrees() {
		t.Skip("the caller walk uses runtime.Callers here: nothing to compare")
	}
	// A denial names its caller from callerOf; with a callback set, from
	// the whole stack the callback asks for (callerStack).
	plain := enter(t, newGuard(t, newPolicy(t, policy.Spec{})))
	var frames []string
	hooked := enter(t, newGuard(t, newPolicy(t, policy.Spec{}), WithOnCall(func(_ context.Context, ev *Event) Verdict {
		frames = frames[:0]
		for _, f := range ev.Frames() {
			frames = append(frames, FormatFrame(f)+" "+f.Function)
		}
		return Continue
	})))
	viaChan := func(start func(chan<- error)) error {
		ch := make(chan error, 1)
		start(ch)
		return <-ch
	}
	shapes := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"direct", func(ctx context.Context) error {
			return Check(ctx, &Event{Protocol: FS, Op: policy.OpWrite, Target: "/nowhere/f"},
				&policy.PathRequest{Op: policy.OpWrite, Path: "/nowhere/f"})
		}},
		{"helper", denyWrite},
		{"interface", func(ctx context.Context) error { return callDeny(denier{ctx}) }},
		{"pointer wrapper", func(ctx context.Context) error { return callDeny(&denier{ctx}) }},
		{"method value", func(ctx context.Context) error { f := denier{ctx}.deny; return f() }},
		{"promoted method", func(ctx context.Context) error { return callDeny(promoted{denier: denier{ctx}}) }},
		{"promoted method by pointer", func(ctx context.Context) error { return callDeny(&promoted{denier: denier{ctx}}) }},
		{"promoted method value", func(ctx context.Context) error { f := (&promoted{denier: denier{ctx}}).deny; return f() }},
		{"generic", func(ctx context.Context) error { return denyGeneric[int](ctx) }},
		{"goroutine", func(ctx context.Context) error {
			return viaChan(func(ch chan<- error) { go func() { ch <- denyWrite(ctx) }() })
		}},
		{"go statement", func(ctx context.Context) error { return viaChan(func(ch chan<- error) { go denyInto(ctx, ch) }) }},
		{"deferred closure", func(ctx context.Context) (err error) {
			defer func() { err = denyWrite(ctx) }()
			return nil
		}},
		{"deferred call", func(ctx context.Context) error {
			return viaChan(func(ch chan<- error) { defer denyInto(ctx, ch) })
		}},
	}
	callerOfDenial := func(t *testing.T, ctx context.Context, call func(context.Context) error) string {
		var de *DenyError
		if err := call(ctx); !errors.As(err, &de) {
			t.Fatalf("err = %v, want a denial", err)
		}
		return FormatFrame(de.Caller) + " " + de.Caller.Function
	}
	bothWalks := func(t *testing.T, what string, walk func() string) {
		// Both walks from the same line, so the stacks can be compared
		// whole.
		var got [2]string
		for i, useFP := range []bool{true, false} {
			fpWalkOff.Store(!useFP)
			got[i] = walk()
		}
		fpWalkOff.Store(false)
		if fp, rc := got[0], got[1]; strings.TrimSpace(fp) == "" || fp != rc {
			t.Fatalf("%s by frame pointers %q, by runtime.Callers %q", what, fp, rc)
		}
	}
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			bothWalks(t, "caller", func() string { return callerOfDenial(t, plain, s.call) })
			bothWalks(t, "stack", func() string {
				callerOfDenial(t, hooked, s.call)
				return strings.Join(frames, "\n")
			})
		})
	}

	// A go statement on the library itself: no caller's frame is on the
	// goroutine's stack, only the wrapper the compiler made for the
	// statement, which runtime.Callers leaves out.
	t.Run("go statement on the library", func(t *testing.T) {
		rec := NewRecorder()
		ctx := enter(t, newGuard(t, newPolicy(t, policy.Spec{}), WithRecorder(rec)))
		// The record is the only trace of the call: wait for it.
		callers := func() string {
			n := len(rec.Records())
			go Check(ctx, &Event{Protocol: FS, Op: policy.OpWrite, Target: "/nowhere/f"},
				&policy.PathRequest{Op: policy.OpWrite, Path: "/nowhere/f"})
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if r := rec.Records(); len(r) > n {
					return r[n].Caller
				}
			}
			t.Fatal("the denial was never recorded")
			return ""
		}
		fp := callers()
		fpWalkOff.Store(true)
		rc := callers()
		fpWalkOff.Store(false)
		if fp != rc {
			t.Fatalf("caller by frame pointers %q, by runtime.Callers %q", fp, rc)
		}
	})
}

// TestFramePointerWalkStopsAtImplausibleFrames runs the walk on chains
// built in a heap array: it follows frame pointers that climb by a frame,
// ends cleanly at a zero one, and is cut short (complete false, so the
// caller walks with runtime.Callers) at one that goes down, jumps more
// than 1 MiB or is misaligned: what a chain running into the C frames of
// a cgo callback may hold.
func TestFramePointerWalkStopsAtImplausibleFrames(t *testing.T) {
	if !haveFPWalk {
		t.Skip("no frame-pointer walk on " + runtime.GOARCH)
	}
	// Three frames of four words: [saved frame pointer, return address, ...].
	stack := make([]uintptr, 12)
	at := func(i int) uintptr { return uintptr(unsafe.Pointer(&stack[i])) }
	chain := func(second, third uintptr) {
		stack[0], stack[1] = at(4), 0x1111
		stack[4], stack[5] = second, 0x2222
		stack[8], stack[9] = third, 0x3333
	}
	for _, tc := range []struct {
		name          string
		second, third uintptr
		want          []uintptr
		complete      bool
	}{
		{"ends at zero", at(8), 0, []uintptr{0x1111, 0x2222, 0x3333}, true},
		{"goes down", at(0), 0, []uintptr{0x1111, 0x2222}, false},
		{"stays put", at(4), 0, []uintptr{0x1111, 0x2222}, false},
		{"jumps over 1 MiB", at(4) + 2<<20, 0, []uintptr{0x1111, 0x2222}, false},
		{"misaligned", at(8) + 3, 0, []uintptr{0x1111, 0x2222}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chain(tc.second, tc.third)
			var pcs [8]uintptr
			n, complete := fpWalkFrom(at(0), pcs[:])
			runtime.KeepAlive(stack)
			if !slices.Equal(pcs[:n], tc.want) || complete != tc.complete {
				t.Fatalf("walk = %#x, complete %v; want %#x, complete %v", pcs[:n], complete, tc.want, tc.complete)
			}
		})
	}
	// A full buffer is a complete walk of what fits.
	chain(at(8), 0)
	var two [2]uintptr
	if n, complete := fpWalkFrom(at(0), two[:]); n != 2 || !complete {
		t.Fatalf("walk into 2 slots = %d, complete %v; want 2, true", n, complete)
	}
}
