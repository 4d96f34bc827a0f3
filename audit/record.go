package audit

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

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

// What decided a call, as records report it.
const (
	ByPolicy     = "policy"
	ByOnCall     = "OnCall"
	ByTrustSite  = "OnCall TrustSite"
	ByBeforeDeny = "BeforeDeny"
	ByWarnMode   = "mode warn"
	ByScope      = "scope rules"
)

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
	Outcome   Outcome
	DecidedBy string // ByPolicy, ByOnCall, ByBeforeDeny, ...
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

// record writes one decision to the logger and the recorder.
func (g *Guard) record(ctx context.Context, ev *Event, out Outcome, by string, err error) {
	if out == Allowed && !g.logAllows {
		return
	}
	rec := Record{
		Time: time.Now(), ScopeID: ev.ScopeID(), Protocol: ev.Protocol, Op: ev.Op,
		Target: ev.Target, Target2: ev.Target2, Resolved: ev.Resolved, Resolved2: ev.Resolved2,
		Argv: ev.Argv, Program: ev.Program, Detail: ev.Detail,
		Outcome: out, DecidedBy: by, Tier: ev.Decision.Tier,
		Caller: FormatFrame(ev.Caller()),
	}
	if r := ev.Decision.Rule; r != nil {
		rec.Rule = r.Kind.String() + " " + strconv.Quote(r.Pattern)
		rec.Source = r.Source
	}
	if ev.Call != nil {
		rec.Tool = ev.Call.Name
	}
	if err != nil {
		rec.Err = err.Error()
	}
	g.emit(ctx, &rec)
}

// emit writes one record to the recorder, the record hook and the logger.
func (g *Guard) emit(ctx context.Context, rec *Record) {
	if g.recorder != nil {
		g.recorder.Add(*rec)
	}
	if g.recordHook != nil {
		g.recordHook(ctx, *rec)
	}
	level := slog.LevelWarn
	switch rec.Outcome {
	case Allowed, Rescued:
		level = slog.LevelInfo
	}
	if !g.logger.Enabled(ctx, level) {
		return
	}
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
		slog.String("decided_by", rec.DecidedBy),
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
	g.logger.LogAttrs(ctx, level, "auditguard decision", attrs...)
}
