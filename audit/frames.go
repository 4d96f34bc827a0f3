package audit

import (
	"context"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

func isLibraryFrame(f *runtime.Frame, skip []string) bool {
	return isSkipped(f, skip) || inLibrary(f)
}

// isSkipped reports whether f's function starts with one of skip.
func isSkipped(f *runtime.Frame, skip []string) bool {
	for _, p := range skip {
		if strings.HasPrefix(f.Function, p) {
			return true
		}
	}
	return false
}

// inLibrary reports whether f is the library's own frame (not one of its
// _test.go files).
func inLibrary(f *runtime.Frame) bool {
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

// pipelineEntry is the frame every guarded call passes through: every
// entry (Check, CheckDecided, Decide, DryRun) runs the pipeline through
// it. When a host callback asks for frames, the callback's own frames sit
// above it; the caller is found below it. Were it missed, a denial's
// caller walk could not stop early and would unwind the whole stack.
const pipelineEntry = "github.com/auditguard/auditguard/audit.(*Scope).check"

// callerStack returns the frames outside the library that lead to the
// guarded call: below the pipeline entry when it is on the stack, else below
// the first library frames. Library frames further down (a Walk calling
// back into generated code) are skipped as well.
func callerStack(skip ...string) []runtime.Frame {
	var pcs [64]uintptr
	n, physical := takeStack(pcs[:])
	return callerFrames(pcs[:n], skip, physical)
}

// takeStack fills pcs with the return addresses of its caller's callers,
// innermost first, by frame pointers where fpWalkOK allows and the chain
// holds. physical says which walk took them (see firstCaller).
func takeStack(pcs []uintptr) (n int, physical bool) {
	if fpWalkOK() {
		if n, complete := fpCallers(pcs); complete {
			return n, true
		}
	}
	return runtime.Callers(3, pcs), false
}

// callerFrames symbolizes pcs and keeps the caller's frames, as callerStack
// describes. physical is as for firstCaller.
func callerFrames(pcs []uintptr, skip []string, physical bool) []runtime.Frame {
	var all []runtime.Frame
	entry := -1
	for _, pc := range pcs {
		for _, f := range framesAt(pc, physical).frames {
			if entry < 0 && f.Function == pipelineEntry {
				entry = len(all)
			}
			all = append(all, f)
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
		case isLibraryFrame(&f, skip):
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
func callerFrame() runtime.Frame { return frameOf(callerOf(nil)) }

// frameOf is *f, or the zero Frame for nil.
func frameOf(f *runtime.Frame) runtime.Frame {
	if f == nil {
		return runtime.Frame{}
	}
	return *f
}

// callerOf finds the caller on the current goroutine's stack, with the
// frames skip names passed over: the first frame outside the library, as
// callerStack finds it. Where frame pointers can be trusted (fpWalkOK) it
// walks them, the whole bounded stack at once, a few nanoseconds a frame:
// a denial's caller then costs tens of nanoseconds instead of
// microseconds. Otherwise runtime.Callers unwinds, first only 16 frames
// deep, since most stacks reach the caller within a few frames of the
// pipeline.
// The frame returned is shared (the frame caches) and must not be modified.
func callerOf(skip []string) *runtime.Frame {
	f, _ := callerSiteOf(skip)
	return f
}

// callerSiteOf is callerOf with the frame's FormatFrame, kept beside it in
// the frame cache (so a record names its caller without allocating).
func callerSiteOf(skip []string) (*runtime.Frame, string) {
	var pcs [64]uintptr
	if fpWalkOK() {
		if n, complete := fpCallers(pcs[:]); complete {
			f, site, _ := firstCaller(pcs[:n], skip, false, true)
			return f, site
		}
	}
	n := runtime.Callers(2, pcs[:16])
	if f, site, ok := firstCaller(pcs[:n], skip, n == 16, false); ok {
		return f, site
	}
	n = runtime.Callers(2, pcs[:])
	f, site, _ := firstCaller(pcs[:n], skip, false, false)
	return f, site
}

// firstCaller is callerFrames(pcs, skip)[0] (the zero Frame when there is
// none) without symbolizing the whole stack: a denial needs only the
// caller. The walk stops at the caller once it has passed the pipeline
// entry (the pipeline asks with only library frames above the entry). A
// caller found above the entry is a host callback's own frame when the
// entry is still to come, so the walk goes on and starts over at the
// entry, as callerFrames does; without an entry on the stack the frame
// found first stands. truncated says pcs may not reach the bottom of the
// stack; ok is false when the answer may lie below it. physical says pcs
// came from fpCallers (one per stack frame) rather than runtime.Callers
// (one per logical frame). site is FormatFrame(*f) ("" for nil).
func firstCaller(pcs []uintptr, skip []string, truncated, physical bool) (f *runtime.Frame, site string, ok bool) {
	var found *runtime.Frame
	foundSite := ""
	seenLib, pastEntry := false, false
	for _, pc := range pcs {
		e := framesAt(pc, physical)
		for i := range e.frames {
			f := &e.frames[i]
			switch {
			case f.Function == pipelineEntry:
				found, foundSite, seenLib, pastEntry = nil, "", true, true
			case found != nil:
				// A frame found above the entry; looking for the entry only.
			case f.Function == "runtime.goexit":
			case e.lib[i] || isSkipped(f, skip):
				seenLib = true
			case seenLib:
				found, foundSite = f, e.sites[i]
				if pastEntry {
					return found, foundSite, true
				}
			}
		}
	}
	return found, foundSite, !truncated
}

// The frame caches map return addresses to their logical frames, so that
// finding the caller of a denial made again from the same place costs no
// symbolization (file and line lookups are most of a walk's cost). They
// are set-associative and lock-free: a pc hashes to a set of frameWays
// slots, a miss replaces one of them, so their size bounds the memory
// whatever the program does. (Direct-mapped, two return addresses of one
// stack that hashed to the same slot evicted each other on every call:
// a denial made from such a stack symbolized its frames afresh each time,
// ten allocations and a few microseconds.) A pc from runtime.Callers
// stands for one logical frame, a pc from fpCallers for a stack frame and
// the calls inlined into it, hence two caches.
var pcFrames, fpFrames [1024]atomic.Pointer[pcEntry]

// frameWays is the number of slots of a frame cache's set.
const frameWays = 4

// frameVictim picks the slot a miss replaces in a full set: misses are
// rare (a new call site), so one shared counter is no contention.
var frameVictim atomic.Uint32

type pcEntry struct {
	pc     uintptr
	frames []runtime.Frame
	lib    []bool   // lib[i]: frames[i] is the library's own (inLibrary)
	sites  []string // sites[i]: FormatFrame(frames[i]), what a record names as its caller
}

// frameSet is the set of a frame cache that pc belongs to.
func frameSet(pc uintptr) int {
	const sets = len(pcFrames) / frameWays
	h := uint64(pc) * 0x9e3779b97f4a7c15 // Fibonacci hashing: the high bits mix every bit of pc
	return int(h>>32) % sets
}

// framesAt returns the cache entry of return address pc: its logical
// frames, innermost first. For a pc from runtime.Callers that is what
// runtime.CallersFrames gives for it (Callers lists inlined calls as
// frames of their own). For a physical pc (fpCallers) it is every call
// inlined at that address and the function holding them, without the
// wrapper frames runtime.Callers leaves out: runtime.CallersFrames expands
// a pc's inlined calls when another pc follows it, so a zero pc (no
// function: skipped) is put after it.
func framesAt(pc uintptr, physical bool) *pcEntry {
	cache := &pcFrames
	if physical {
		cache = &fpFrames
	}
	set := cache[frameSet(pc)*frameWays:][:frameWays]
	free := -1
	for i := range set {
		e := set[i].Load()
		if e == nil {
			if free < 0 {
				free = i
			}
			continue
		}
		if e.pc == pc {
			return e
		}
	}
	e := &pcEntry{pc: pc}
	pcs := []uintptr{pc}
	if physical {
		pcs = append(pcs, 0)
	}
	it := runtime.CallersFrames(pcs)
	for {
		f, more := it.Next()
		if !physical || !isWrapperFrame(&f) {
			e.frames = append(e.frames, f)
			e.lib = append(e.lib, inLibrary(&f))
			e.sites = append(e.sites, FormatFrame(f))
		}
		if !more {
			break
		}
	}
	if free < 0 {
		free = int(frameVictim.Add(1) % frameWays)
	}
	set[free].Store(e)
	return e
}

// isWrapperFrame reports whether f is a frame that runtime.Callers leaves
// out: a method wrapper (its file is "<autogenerated>"), the closure a go
// or defer statement runs ("pkg.f.gowrap1", "pkg.f.deferwrap1"), or
// runtime.deferreturn running a deferred call (when defers are not
// open-coded, as under -race).
func isWrapperFrame(f *runtime.Frame) bool {
	if f.File == "<autogenerated>" || f.Function == "runtime.deferreturn" {
		return true
	}
	i := strings.LastIndexByte(f.Function, '.')
	return i >= 0 && (strings.HasPrefix(f.Function[i:], ".gowrap") || strings.HasPrefix(f.Function[i:], ".deferwrap"))
}

// fpWalkOK reports whether the caller walks may follow frame pointers:
// the architecture has the walk, a probe found it gives the same logical
// frames as runtime.Callers (inlined calls expanded, wrappers left out),
// and no test has switched it off (fpWalkOff) to compare the two. Were a
// Go release to change how frames are expanded, the probe fails and the
// walks fall back to runtime.Callers.
func fpWalkOK() bool { return !fpWalkOff.Load() && fpWalkAgrees() }

// fpWalkOff switches the frame-pointer walk off, for tests that compare it
// with runtime.Callers.
var fpWalkOff atomic.Bool

var fpWalkAgrees = sync.OnceValue(func() bool {
	if !haveFPWalk {
		return false
	}
	fp, rc, _ := fpProbeOuter()
	return slices.Equal(fp, rc)
})

//go:noinline
func fpProbeOuter() (fp, rc []string, pc0 uintptr) { return fpProbeInlined() }

// fpProbeInlined is small enough to be inlined into fpProbeOuter, so the
// probe's stack holds a frame with an inlined call.
func fpProbeInlined() (fp, rc []string, pc0 uintptr) { return fpProbeLeaf() }

// fpProbeLeaf lists its callers' logical frames both ways, up to and
// including fpProbeOuter; pc0 is the first address the frame-pointer walk
// found (the test checks it lies in fpProbeOuter's frame).
//
//go:noinline
func fpProbeLeaf() (fp, rc []string, pc0 uintptr) {
	var pcs [8]uintptr
	n, _ := fpCallers(pcs[:]) // a walk cut short lists fewer frames: the probe fails
	fp = probeNames(pcs[:n], true)
	if n > 0 {
		pc0 = pcs[0]
	}
	n = runtime.Callers(2, pcs[:])
	return fp, probeNames(pcs[:n], false), pc0
}

// probeNames names the logical frames of pcs down to fpProbeOuter.
func probeNames(pcs []uintptr, physical bool) (names []string) {
	const outer = "github.com/auditguard/auditguard/audit.fpProbeOuter"
	for _, pc := range pcs {
		for _, f := range framesAt(pc, physical).frames {
			if names = append(names, f.Function); f.Function == outer {
				return names
			}
		}
	}
	return names
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
	pcs      []uintptr
	skip     []string
	physical bool // taken by frame pointers (see firstCaller)
}

// WithCallerStack records the current goroutine's caller stack in ctx, for
// facades whose guarded call runs on another goroutine on this one's behalf
// (net/http dials from its connection pool). Events checked with the
// returned context report these frames as the caller's. Frames whose
// function starts with one of skip ("net/http.") are passed over like the
// library's own. Only the program counters are taken here; they are turned
// into frames when a denial or a callback needs them.
func WithCallerStack(ctx context.Context, skip ...string) context.Context {
	var pcs [64]uintptr
	n, physical := takeStack(pcs[:])
	return context.WithValue(ctx, callerKey{}, &callerPCs{pcs: slices.Clone(pcs[:n]), skip: skip, physical: physical})
}

func callerPCsFrom(ctx context.Context) *callerPCs {
	cp, _ := ctx.Value(callerKey{}).(*callerPCs)
	return cp
}
