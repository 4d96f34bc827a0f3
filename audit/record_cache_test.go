package audit

import (
	"context"
	"log/slog"
	"reflect"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/auditguard/auditguard/policy"
)

// TestRuleTextCache checks the rendering records give rules: the cached
// text is what rendering the rule gives, for more rules than the cache has
// slots (so slots are shared and replaced), and a rule changed after it was
// rendered is rendered again.
func TestRuleTextCache(t *testing.T) {
	want := func(r *policy.Rule) string { return r.Kind.String() + " " + strconv.Quote(r.Pattern) }
	rules := make([]*policy.Rule, 3*len(ruleTexts))
	for i := range rules {
		rules[i] = &policy.Rule{Kind: policy.RuleKind(i % 4), Pattern: "/p/" + strconv.Itoa(i) + ` "q"`}
	}
	for range 2 {
		for _, r := range rules {
			if got := ruleText(r); got != want(r) {
				t.Fatalf("ruleText(%v) = %q, want %q", r, got, want(r))
			}
		}
	}
	r := &policy.Rule{Kind: policy.KindHost, Pattern: "one"}
	if got := ruleText(r); got != want(r) {
		t.Fatalf("ruleText = %q, want %q", got, want(r))
	}
	r.Pattern = "two"
	if got := ruleText(r); got != want(r) {
		t.Fatalf("ruleText of a changed rule = %q, want %q", got, want(r))
	}
	if n := testing.AllocsPerRun(100, func() { ruleText(r) }); n != 0 {
		t.Errorf("ruleText of a cached rule allocates %v times", n)
	}
}

// TestFrameCacheKeepsCollidingPCs checks that return addresses sharing a
// set of the frame caches stay cached together: a stack holding two of
// them must not evict one with the other on every walk (when the caches
// were direct-mapped, such a stack symbolized its frames on every denial).
func TestFrameCacheKeepsCollidingPCs(t *testing.T) {
	// Addresses inside some of the library's larger functions: any of
	// them symbolizes as a frame of its function.
	fns := []any{(*Guard).emit, (*Scope).run, callerFrames, firstCaller, framesAt, (*DenyError).Error}
	bySet := map[int][]uintptr{}
	var same []uintptr
	for _, fn := range fns {
		entry := reflect.ValueOf(fn).Pointer()
		f := runtime.FuncForPC(entry)
		for pc := entry + 1; f != nil && runtime.FuncForPC(pc) == f && same == nil; pc++ {
			s := frameSet(pc)
			if bySet[s] = append(bySet[s], pc); len(bySet[s]) == frameWays {
				same = bySet[s]
			}
		}
	}
	if same == nil {
		t.Skip("found no set of the frame caches that these functions' addresses fill")
	}
	for _, physical := range []bool{false, true} {
		first := make([]*pcEntry, len(same))
		for range 2 { // cached, whatever the set held before
			for i, pc := range same {
				first[i] = framesAt(pc, physical)
			}
		}
		for range 3 {
			for i, pc := range same {
				if e := framesAt(pc, physical); e != first[i] {
					t.Fatalf("physical %v: pc %#x, one of %d in one set, was evicted by the others", physical, pc, len(same))
				}
			}
		}
	}
}

// TestCallerWalkAllocatesNothingWarm checks that finding the caller of a
// call made again from the same place allocates nothing: its frames and
// their rendering come from the frame caches.
func TestCallerWalkAllocatesNothingWarm(t *testing.T) {
	ev := &Event{}
	f := ev.Caller()
	if f.Function == "" || ev.callerText() != FormatFrame(f) {
		t.Fatalf("Caller = %v, callerText %q; want this test and its FormatFrame", f, ev.callerText())
	}
	if n := testing.AllocsPerRun(100, func() {
		*ev = Event{}
		ev.callerText()
	}); n != 0 {
		t.Errorf("a warm caller walk allocates %v times", n)
	}
}

// timeHandler keeps the slog records it is handed.
type timeHandler struct{ recs []slog.Record }

func (h *timeHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *timeHandler) Handle(_ context.Context, r slog.Record) error {
	h.recs = append(h.recs, r.Clone())
	return nil
}
func (h *timeHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *timeHandler) WithGroup(string) slog.Handler      { return h }

// TestLoggedRecordMatchesRecord checks that a logged decision carries the
// record's own time and the same caller and rule as the Recorder's copy.
func TestLoggedRecordMatchesRecord(t *testing.T) {
	dir := tempDir(t)
	h := &timeHandler{}
	rec := NewRecorder()
	g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{dir}, Home: dir}), WithLogger(slog.New(h)), WithRecorder(rec))
	ctx := enter(t, g)
	before := time.Now()
	if err := fsCheck(ctx, policy.OpWrite, "/etc/passwd", dir); err == nil {
		t.Fatal("a write outside the root was allowed")
	}
	recs := rec.Records()
	if len(recs) != 1 || len(h.recs) != 1 {
		t.Fatalf("recorded %d, logged %d; want 1 each", len(recs), len(h.recs))
	}
	r, lr := recs[0], h.recs[0]
	if !lr.Time.Equal(r.Time) || r.Time.Before(before) {
		t.Errorf("logged at %v, recorded at %v (call made after %v)", lr.Time, r.Time, before)
	}
	attrs := map[string]string{}
	lr.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	if attrs["caller"] != r.Caller || r.Caller == "" || attrs["rule"] != r.Rule || r.Rule == "" {
		t.Errorf("logged caller %q rule %q; recorded %q, %q", attrs["caller"], attrs["rule"], r.Caller, r.Rule)
	}
}
