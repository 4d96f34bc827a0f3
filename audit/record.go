package audit

import (
	"context"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/auditguard/auditguard/policy"
)

// Outcome is what happened to a guarded call.
type Outcome uint8

const (
	Allowed Outcome = iota + 1 // the call went ahead
	Denied                     // the call was refused
	Rescued                    // the policy denied it; a host callback allowed it
	Warned                     // the policy denied it; Warn mode let it through
)

var outcomeNames = [...]string{Allowed: "allowed", Denied: "denied", Rescued: "rescued", Warned: "would-deny"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && outcomeNames[o] != "" {
		return outcomeNames[o]
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Decider says who decided a call: the fact a host branches on, on
// DenyError.By, Record.DecidedBy and Result.By. It is rendered to text
// only in records and error messages.
type Decider uint8

const (
	// ByPolicy: the policy in force (and every Restrict-ed one) decided;
	// for a denial, no callback rescued it. It is the zero value.
	ByPolicy Decider = iota
	// ByOnCall: the OnCall callback allowed (Allow) or denied (Deny) it.
	ByOnCall
	// ByTrustSite: OnCall trusted the call site (TrustSite) in this scope.
	ByTrustSite
	// ByBeforeDeny: the BeforeDeny callback rescued a denial.
	ByBeforeDeny
	// ByWarnMode: the protocol's Warn mode let a denial through.
	ByWarnMode
	// ByOffMode: the protocol's mode is Off; nothing was checked.
	ByOffMode
	// ByFault: a host callback panicked, so the call was denied.
	ByFault
	// ByScope: the scope rules: no scope, a released scope, or
	// re-configuration from inside a scope. DenyError.Err says which
	// (ErrNoScope, ErrScopeClosed, ErrSelfProtection).
	ByScope
)

var deciderNames = [...]string{
	ByPolicy: "policy", ByOnCall: "OnCall", ByTrustSite: "OnCall TrustSite", ByBeforeDeny: "BeforeDeny",
	ByWarnMode: "mode warn", ByOffMode: "mode off", ByFault: "callback fault", ByScope: "scope rules",
}

func (d Decider) String() string {
	if int(d) < len(deciderNames) {
		return deciderNames[d]
	}
	return "decider(" + strconv.Itoa(int(d)) + ")"
}

// Record is one decision as logged: what was asked, what decided, and how.
type Record struct {
	Time      time.Time
	ScopeID   uint64
	Protocol  Protocol
	Op        policy.Op
	Target    string
	Target2   string
	Resolved  string
	Resolved2 string
	Argv      []string
	Program   string
	Detail    string
	Child     *Child // exec: what the kernel holds the child to
	Outcome   Outcome
	DecidedBy Decider
	Rule      string // the deciding rule, rendered
	Source    string // the deciding rule's provenance
	Tier      policy.Tier
	Caller    string // "file.go:42 pkg.Func"
	Tool      string // the running host tool call, if any
	Err       string // the denial or fault message, if any
	// Remote names the process the decision was made in when it was not
	// this one ("isolate fetch#3 pid 4242"): an isolated call's child
	// decides with its own guard and the host replays its records here.
	Remote string
}

// Recorder keeps records in memory, for tests and hosts that want to show
// or persist them. It is safe for concurrent use.
type Recorder struct {
	mu   sync.Mutex
	recs []Record
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Add appends a record.
func (r *Recorder) Add(rec Record) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

// Records returns a copy of every record so far.
func (r *Recorder) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

// Reset forgets every record.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.recs = nil
	r.mu.Unlock()
}

// record writes one decision to the logger and the recorder. The record
// is built only when something will take it: a Recorder, a record hook,
// or a logger enabled at the outcome's level. A dry run records nothing.
func (g *Guard) record(ctx context.Context, ev *Event, out Outcome, by Decider, err error) {
	if ev.DryRun || (out == Allowed && !g.logAllows) {
		return
	}
	logOn := g.logger.Enabled(ctx, outcomeLevel(out))
	if g.recorder == nil && g.recordHook == nil && !logOn {
		return
	}
	rec := Record{
		Time: time.Now(), ScopeID: ev.ScopeID(), Protocol: ev.Protocol, Op: ev.Op,
		Target: ev.Target, Target2: ev.Target2, Resolved: ev.Resolved, Resolved2: ev.Resolved2,
		Argv: ev.Argv, Program: ev.Program, Detail: ev.Detail, Child: ev.Child,
		Outcome: out, DecidedBy: by, Tier: ev.Decision.Tier,
		Caller: ev.callerText(),
	}
	if r := ev.Decision.Rule; r != nil {
		rec.Rule = ruleText(r)
		rec.Source = r.Source
	}
	if ev.Call != nil {
		rec.Tool = ev.Call.Name
	}
	if err != nil && (g.recorder != nil || g.recordHook != nil) {
		// The logger does not print the error (the record's fields say
		// it all); its text, the teaching message, is made only for
		// those who keep the record.
		rec.Err = err.Error()
	}
	g.emit(ctx, &rec, logOn, rec.Time)
}

// ruleTexts caches the rendering a record gives a rule (`kind "pattern"`),
// so the records of a rule that decides again allocate nothing for it.
// Rules never change once made (policy.Rule); an entry still checks the
// rule's kind and pattern, and holds the rule, so its address is not
// reused while it is cached. Direct-mapped by the rule's address: the
// size bounds the memory whatever rules a host makes, and a miss costs
// what rendering it always cost.
var ruleTexts [256]atomic.Pointer[ruleTextEntry]

type ruleTextEntry struct {
	r       *policy.Rule
	kind    policy.RuleKind
	pattern string
	text    string
}

// ruleText is r's rendering in a record: its kind and quoted pattern.
func ruleText(r *policy.Rule) string {
	h := uint64(uintptr(unsafe.Pointer(r))) * 0x9e3779b97f4a7c15
	slot := &ruleTexts[h>>56]
	if e := slot.Load(); e != nil && e.r == r && e.kind == r.Kind && e.pattern == r.Pattern {
		return e.text
	}
	e := &ruleTextEntry{r: r, kind: r.Kind, pattern: r.Pattern, text: r.Kind.String() + " " + strconv.Quote(r.Pattern)}
	slot.Store(e)
	return e.text
}

// emit writes one record to the recorder, the record hook and, when logOn
// (the logger is enabled at the record's level), the logger, with now as
// the time it is logged at: record logs a record at its own Time, so a
// decision reads the clock once.
func (g *Guard) emit(ctx context.Context, rec *Record, logOn bool, now time.Time) {
	if g.recorder != nil {
		g.recorder.Add(*rec)
	}
	if g.recordHook != nil {
		g.recordHook(ctx, *rec)
	}
	if !logOn {
		return
	}
	level := outcomeLevel(rec.Outcome)
	attrs := make([]slog.Attr, 0, 17)
	attrs = append(attrs,
		slog.String("outcome", rec.Outcome.String()),
		slog.String("protocol", rec.Protocol.String()),
		slog.String("op", rec.Op.String()),
		slog.String("target", rec.Target),
	)
	if rec.Target2 != "" {
		attrs = append(attrs, slog.String("target2", rec.Target2))
	}
	if rec.Resolved != "" {
		attrs = append(attrs, slog.String("resolved", rec.Resolved))
	}
	if rec.Resolved2 != "" {
		attrs = append(attrs, slog.String("resolved2", rec.Resolved2))
	}
	if len(rec.Argv) > 0 {
		attrs = append(attrs, slog.Any("argv", rec.Argv))
	}
	if rec.Program != "" {
		attrs = append(attrs, slog.String("program", rec.Program))
	}
	if rec.Detail != "" {
		attrs = append(attrs, slog.String("detail", rec.Detail))
	}
	attrs = append(attrs,
		slog.String("decided_by", rec.DecidedBy.String()),
		slog.String("rule", rec.Rule),
		slog.String("source", rec.Source),
	)
	if rec.Tier != policy.TierNone {
		attrs = append(attrs, slog.String("tier", rec.Tier.String()))
	}
	attrs = append(attrs, slog.String("caller", rec.Caller), slog.Uint64("scope", rec.ScopeID))
	if rec.Tool != "" {
		attrs = append(attrs, slog.String("tool", rec.Tool))
	}
	if rec.Remote != "" {
		attrs = append(attrs, slog.String("remote", rec.Remote))
	}
	// What Logger.LogAttrs does, without its runtime.Callers for the
	// record's source: a stack walk of about 2 µs on the VM of
	// docs/bench.md, for a PC that is always the same one in this
	// function (the source a handler with AddSource prints: this line).
	r := slog.NewRecord(now, level, "auditguard decision", emitPC())
	r.AddAttrs(attrs...)
	if ctx == nil {
		ctx = context.Background() // as LogAttrs does
	}
	_ = g.logger.Handler().Handle(ctx, r)
}

// emitSite is the PC emit's records name as their source, found once.
var emitSite atomic.Uintptr

// emitPC returns emitSite, finding it on first use: the return address
// of this call in emit, as Logger.LogAttrs would have found its own.
//
//go:noinline
func emitPC() uintptr {
	if pc := emitSite.Load(); pc != 0 {
		return pc
	}
	var pcs [1]uintptr
	runtime.Callers(2, pcs[:])
	emitSite.Store(pcs[0])
	return pcs[0]
}

// outcomeLevel is the slog level a record of out is logged at.
func outcomeLevel(out Outcome) slog.Level {
	if out == Allowed || out == Rescued {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}
