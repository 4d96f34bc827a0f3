package isolate

import (
	"encoding/json"
	"runtime"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// The host and the child speak JSON, one value per line: the host writes
// the request, then answers, on the child's stdin; the child writes asks,
// records, captured stdout and, last, its outcome on its stdout (the
// function's own stdout is captured and framed, so nothing it prints can
// be taken for a message). The child's stderr is its own.

// request is what the child needs to run one call as the host would.
type request struct {
	Input json.RawMessage `json:"input"`
	// Policies are the scope's policies: the guard's first, then each
	// restriction (audit.Restrict).
	Policies []*policy.Policy `json:"policies"`
	Settings audit.Settings   `json:"settings"`
	// Data is the host data snapshot, when it encodes as JSON.
	Data json.RawMessage `json:"data,omitempty"`
	// CallName and CallArgs are the tool call the decisions are
	// attributed to (audit.WithCall).
	CallName string          `json:"call_name"`
	CallArgs json.RawMessage `json:"call_args,omitempty"`
}

// Message types from the child.
const (
	msgReady  = "ready" // the child waits for its request
	msgAsk    = "ask"
	msgRecord = "record"
	msgStdout = "stdout"
	msgResult = "result" // the function returned a value
	msgError  = "error"  // the function returned an error
	msgPanic  = "panic"
	msgFail   = "fail" // the child's own failure: Fail says which
)

// Ask kinds.
const (
	askOnCall     = "oncall"
	askBeforeDeny = "beforedeny"
)

// message is one line from the child.
type message struct {
	T string `json:"t"`

	// ask
	ID     uint64      `json:"id,omitempty"`
	Kind   string      `json:"kind,omitempty"`
	Event  *wireEvent  `json:"event,omitempty"`
	Frames []wireFrame `json:"frames,omitempty"`

	// record
	Record *audit.Record `json:"record,omitempty"`

	// stdout
	Data []byte `json:"data,omitempty"`

	// result, error, panic, fail
	Out    json.RawMessage `json:"out,omitempty"`
	Msg    string          `json:"msg,omitempty"`
	Denied bool            `json:"denied,omitempty"`
	Stack  string          `json:"stack,omitempty"`
	Fail   Kind            `json:"fail,omitempty"`
}

// answer is the host's reply to an ask.
type answer struct {
	ID      uint64        `json:"id"`
	Verdict audit.Verdict `json:"verdict,omitempty"`
	Allow   bool          `json:"allow,omitempty"`
	Fault   string        `json:"fault,omitempty"`
}

// wireEvent is the part of an audit.Event a host callback reads.
type wireEvent struct {
	Protocol  audit.Protocol  `json:"protocol"`
	Op        policy.Op       `json:"op"`
	Target    string          `json:"target,omitempty"`
	Target2   string          `json:"target2,omitempty"`
	Resolved  string          `json:"resolved,omitempty"`
	Resolved2 string          `json:"resolved2,omitempty"`
	Argv      []string        `json:"argv,omitempty"`
	Program   string          `json:"program,omitempty"`
	Detail    string          `json:"detail,omitempty"`
	Decision  policy.Decision `json:"decision"`
}

func eventToWire(ev *audit.Event) *wireEvent {
	return &wireEvent{Protocol: ev.Protocol, Op: ev.Op, Target: ev.Target, Target2: ev.Target2,
		Resolved: ev.Resolved, Resolved2: ev.Resolved2, Argv: ev.Argv, Program: ev.Program,
		Detail: ev.Detail, Decision: ev.Decision}
}

func (w *wireEvent) event() *audit.Event {
	return &audit.Event{Protocol: w.Protocol, Op: w.Op, Target: w.Target, Target2: w.Target2,
		Resolved: w.Resolved, Resolved2: w.Resolved2, Argv: w.Argv, Program: w.Program,
		Detail: w.Detail, Decision: w.Decision}
}

// wireFrame is a caller frame; the host and child are one binary, so the
// function names and files are the host's own.
type wireFrame struct {
	Function string `json:"fn"`
	File     string `json:"file"`
	Line     int    `json:"line"`
}

func framesToWire(fs []runtime.Frame) []wireFrame {
	out := make([]wireFrame, len(fs))
	for i, f := range fs {
		out[i] = wireFrame{Function: f.Function, File: f.File, Line: f.Line}
	}
	return out
}

func framesFromWire(ws []wireFrame) []runtime.Frame {
	out := make([]runtime.Frame, len(ws))
	for i, w := range ws {
		out[i] = runtime.Frame{Function: w.Function, File: w.File, Line: w.Line}
	}
	return out
}
