package audit

import (
	"context"
	"reflect"
	"runtime"
	"strings"
)

// libraryPackages are the packages whose frames are never "the caller".
// Frames from their _test.go files count as callers, so tests see themselves.
var libraryPackages = []string{
	"github.com/auditguard/auditguard/audit.",
	"github.com/auditguard/auditguard/policy.",
	"github.com/auditguard/auditguard/fsguard.",
	"github.com/auditguard/auditguard/procguard.",
	"github.com/auditguard/auditguard/netguard.",
	// The sandbox's host side (port forwarding, the egress proxy's
	// hand-over) decides on its own goroutines on behalf of a child.
	"github.com/auditguard/auditguard/procguard/sandbox.",
	"github.com/auditguard/auditguard/procguard/internal/",
	// The test doubles and the test harness stand between the code under
	// test and the pipeline like the facades do.
	"github.com/auditguard/auditguard/procguard/proctest.",
	"github.com/auditguard/auditguard/netguard/nettest.",
	"github.com/auditguard/auditguard/audittest.",
	"github.com/auditguard/auditguard/isolate.",
}

func isLibraryFrame(f runtime.Frame, skip []string) bool {
	for _, p := range skip {
		if strings.HasPrefix(f.Function, p) {
			return true
		}
	}
	if strings.HasSuffix(f.File, "_test.go") {
		return false
	}
	for _, p := range libraryPackages {
		if strings.HasPrefix(f.Function, p) {
			return true
		}
	}
	return false
}

const maxFrames = 32

// pipelineEntry is the frame every guarded call passes through. When a host
// callback asks for frames, the callback's own frames sit above it; the
// caller is found below it.
const pipelineEntry = "github.com/auditguard/auditguard/audit.(*Scope).Check"

// callerStack returns the frames outside the library that lead to the
// guarded call: below the pipeline entry when it is on the stack, else below
// the first library frames. Library frames further down (a Walk calling
// back into generated code) are skipped as well.
func callerStack(skip ...string) []runtime.Frame {
	var pcs [64]uintptr
	n := runtime.Callers(2, pcs[:])
	return callerFrames(pcs[:n], skip)
}

// callerFrames symbolizes pcs and keeps the caller's frames, as callerStack
// describes.
func callerFrames(pcs []uintptr, skip []string) []runtime.Frame {
	var all []runtime.Frame
	it := runtime.CallersFrames(pcs)
	entry := -1
	for {
		f, more := it.Next()
		if entry < 0 && f.Function == pipelineEntry {
			entry = len(all)
		}
		all = append(all, f)
		if !more {
			break
		}
	}
	start := 0
	if entry >= 0 {
		start = entry
	}
	var out []runtime.Frame
	seenLib := false
	for _, f := range all[start:] {
		switch {
		case f.Function == "runtime.goexit":
			// The bottom of a goroutine the library started (a proxy or
			// forwarding goroutine): no caller's code is on the stack.
		case isLibraryFrame(f, skip):
			seenLib = true
		case seenLib:
			out = append(out, f)
			if len(out) == maxFrames {
				return out
			}
		}
	}
	return out
}

// callerFrame returns the first frame outside the library.
func callerFrame() runtime.Frame {
	if fs := callerStack(); len(fs) > 0 {
		return fs[0]
	}
	return runtime.Frame{}
}

func callerSite() string { return FormatFrame(callerFrame()) }

// funcName returns the runtime name of a function value, or fn itself when
// it is a string.
func funcName(fn any) string {
	if s, ok := fn.(string); ok {
		return s
	}
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return ""
	}
	f := runtime.FuncForPC(v.Pointer())
	if f == nil {
		return ""
	}
	// Method values are wrapped in a "-fm" closure.
	return strings.TrimSuffix(f.Name(), "-fm")
}

type callerKey struct{}

// callerPCs is a stack recorded by WithCallerStack, symbolized only when an
// event's frames are asked for.
type callerPCs struct {
	pcs  []uintptr
	skip []string
}

// WithCallerStack records the current goroutine's caller stack in ctx, for
// facades whose guarded call runs on another goroutine on this one's behalf
// (net/http dials from its connection pool). Events checked with the
// returned context report these frames as the caller's. Frames whose
// function starts with one of skip ("net/http.") are passed over like the
// library's own. Only the program counters are taken here; they are turned
// into frames when a denial or a callback needs them.
func WithCallerStack(ctx context.Context, skip ...string) context.Context {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	return context.WithValue(ctx, callerKey{}, &callerPCs{pcs: pcs[:n], skip: skip})
}

func callerPCsFrom(ctx context.Context) *callerPCs {
	cp, _ := ctx.Value(callerKey{}).(*callerPCs)
	return cp
}
