package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/shellguard"
)

// Options configure a Set. Only Workspace is required.
type Options struct {
	// Workspace is the directory relative paths are taken from and paths
	// are shown relative to. It must exist. It grants nothing: what the
	// tools may read, write, run and reach is the guard's policy alone.
	Workspace string
	// MaxOutput caps the text of one result, in bytes (default 64 KiB);
	// a longer result is cut and says how much was cut.
	MaxOutput int
	// MaxReadLines is how many lines read returns when no limit is given
	// (default 2000).
	MaxReadLines int
	// MaxFileBytes is the largest file read, edit and grep take in whole
	// (default 10 MiB). read pages through bigger files by line.
	MaxFileBytes int64
	// MaxFetchBytes caps a fetched body (default 1 MiB); a call may ask
	// for less, never more.
	MaxFetchBytes int64
	// FetchTimeout bounds one fetch, redirects included (default 30 s).
	FetchTimeout time.Duration
	// Shell, when set, adds the bash tool: a guarded shell session
	// (shellguard.Session) started by New and ended by Close. Dir
	// defaults to the workspace; Timeout and MaxOutput bound each call.
	Shell *shellguard.Options
	// Logger receives what is for the host, not the model: a tool's panic
	// with its stack (slog.Default() when nil).
	Logger *slog.Logger
}

// Result is what a tool call gives the model.
type Result struct {
	// Text is the answer, for a model to read: file contents with line
	// numbers, matches, a listing, a fetched body, a shell call's output.
	Text string
}

// Kind says why a tool call failed.
type Kind uint8

const (
	// KindInput: the call's input was wrong (a missing or mistyped
	// argument, a path that does not exist, an edit whose old text is
	// absent or ambiguous, a binary file read as text, a script that does
	// not parse). Nothing was changed.
	KindInput Kind = iota + 1
	// KindDenied: the guard refused the call; Error's text is the
	// audit.DenyError's message and errors.As finds the DenyError.
	// Nothing was changed.
	KindDenied
	// KindFailed: the call was allowed but failed (an I/O or network
	// error, a server's error status).
	KindFailed
	// KindPanic: the tool panicked; the host's logger has the stack. What
	// the call did before it panicked is not undone.
	KindPanic
)

var kindNames = [...]string{KindInput: "input", KindDenied: "denied", KindFailed: "failed", KindPanic: "panic"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Error is a failed tool call. Its message is written for the model that
// made the call: what was wrong and what to do instead, never a stack
// trace.
type Error struct {
	Tool string // the tool's name
	ID   string // the call's id
	Kind Kind
	Msg  string // the text for the model
	Err  error  // the cause, if any (an *audit.DenyError for KindDenied)
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// inputErr is a KindInput error for the model.
func inputErr(format string, args ...any) error {
	return &Error{Kind: KindInput, Msg: fmt.Sprintf(format, args...)}
}

// Invocation is the argument of the audit.Call every tool call runs
// under (audit.Event.Call.Args, a *Invocation): which tool, which call,
// with what input. The Call's Name is "tool#id" (Record.Tool), so every
// record names the call that made it; a callback that decides by tool
// reads Tool here.
type Invocation struct {
	Tool  string
	ID    string
	Input any // the tool's typed input (ReadInput, ...)
}

// InvocationOf returns the tool call c stands for, or nil when c is no
// tool call of this package (or nil).
func InvocationOf(c *audit.Call) *Invocation {
	if c == nil {
		return nil
	}
	inv, _ := c.Args.(*Invocation)
	return inv
}

type callIDKey struct{}

// WithCallID returns ctx carrying the id of the tool call it is made for
// (the model's tool_use id, an MCP request's number). Calls without one
// are numbered by their Set.
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// CallIDFrom returns the id WithCallID put on ctx, or "".
func CallIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// Set is a guarded tool set. Its methods are safe for concurrent use.
type Set struct {
	scope  context.Context // a context in a guard scope (audit.From)
	opts   Options
	ws     string // the workspace, absolute and resolved
	tools  []*Tool
	byName map[string]*Tool
	seq    atomic.Uint64
	shell  *shellguard.Session // nil without Options.Shell
}

// New returns the tool set for the guard scope ctx carries. Every call
// runs in a scope nested in it (so a call's files, connections and
// children end with the call), under an audit.Call naming the tool and
// the call (Invocation). With Options.Shell it starts the shell session
// too; Close ends it.
func New(ctx context.Context, opts Options) (*Set, error) {
	if audit.From(ctx) == nil {
		return nil, errors.New("toolset: ctx carries no guard scope; enter the guard (audit.Guard.Enter) and pass the context it returns")
	}
	if opts.Workspace == "" {
		return nil, errors.New("toolset: Options.Workspace is required")
	}
	ws, err := filepath.Abs(opts.Workspace)
	if err != nil {
		return nil, fmt.Errorf("toolset: workspace: %w", err)
	}
	if r, err := filepath.EvalSymlinks(ws); err == nil {
		ws = r
	}
	if fi, err := os.Stat(ws); err != nil {
		return nil, fmt.Errorf("toolset: workspace: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("toolset: workspace %s is not a directory", ws)
	}
	opts.Workspace = ws
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = 64 << 10
	}
	if opts.MaxReadLines <= 0 {
		opts.MaxReadLines = 2000
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = 10 << 20
	}
	if opts.MaxFetchBytes <= 0 {
		opts.MaxFetchBytes = 1 << 20
	}
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Set{scope: ctx, opts: opts, ws: ws, byName: map[string]*Tool{}}
	s.tools = s.fileTools()
	s.tools = append(s.tools, s.fetchTool())
	if opts.Shell != nil {
		if err := s.newShell(); err != nil {
			return nil, fmt.Errorf("toolset: shell session: %w", err)
		}
		s.tools = append(s.tools, s.bashTool())
	}
	for _, t := range s.tools {
		s.byName[t.Name] = t
	}
	return s, nil
}

// Workspace returns the workspace, absolute and with links resolved.
func (s *Set) Workspace() string { return s.ws }

// Tools returns the set's tools, in a fixed order.
func (s *Set) Tools() []*Tool { return append([]*Tool(nil), s.tools...) }

// Tool returns the tool named name, or nil.
func (s *Set) Tool(name string) *Tool { return s.byName[name] }

// Call runs the tool named name with a JSON input: Tool(name).Call.
func (s *Set) Call(ctx context.Context, name string, input json.RawMessage) (Result, error) {
	t := s.byName[name]
	if t == nil {
		names := make([]string, len(s.tools))
		for i, t := range s.tools {
			names[i] = t.Name
		}
		return Result{}, &Error{Tool: name, ID: CallIDFrom(ctx), Kind: KindInput,
			Msg: fmt.Sprintf("there is no tool %q; the tools are %s", name, strings.Join(names, ", "))}
	}
	return t.Call(ctx, input)
}

// Close ends the shell session, if any: a bash call in progress is ended
// and everything it started killed. The other tools hold nothing between
// calls. Close is safe to call more than once.
func (s *Set) Close() error {
	if s.shell != nil {
		return s.shell.Close()
	}
	return nil
}

// Tool is one tool of a Set: a name, a description and a JSON schema for
// its input, as a model is told about it, and Call to run it.
type Tool struct {
	Name        string
	Description string
	// InputSchema is a JSON Schema (draft 2020-12 subset) of an object:
	// the input's arguments, their types, which are required.
	InputSchema json.RawMessage

	run func(ctx context.Context, input json.RawMessage) (Result, error)
}

// Call decodes input as the tool's arguments and runs the tool. A
// missing, unknown or mistyped argument is a KindInput *Error naming it,
// and nothing runs. The call's id is taken from ctx (WithCallID). ctx
// gives the call its cancellation and deadline; its guard scope, when it
// carries one (a host's audit.Restrict for this call, say), is the one
// the call's scope is nested in, and the Set's otherwise (bash is the
// exception: its session decides in the Set's scope).
func (t *Tool) Call(ctx context.Context, input json.RawMessage) (Result, error) {
	if t == nil || t.run == nil {
		return Result{}, &Error{Kind: KindFailed, Msg: "this tool is not part of a tool set (make tools with toolset.New)"}
	}
	return t.run(ctx, input)
}

// env is what one running call has: its context (nested scope, audit.Call,
// the caller's cancellation) and its guarded filesystem.
type env struct {
	ctx  context.Context
	set  *Set
	tool string
	id   string
	fs   *fsguard.Fs
}

// call runs fn as one call of tool: under an audit.Call in a scope
// nested in the Set's, with panics turned into a KindPanic *Error and
// every error into an *Error for the model.
func call[In any](s *Set, ctx context.Context, tool string, in In, fn func(*env, In) (string, error)) (res Result, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	id := CallIDFrom(ctx)
	if id == "" {
		id = strconv.FormatUint(s.seq.Add(1), 10)
	}
	defer func() {
		if r := recover(); r != nil {
			s.opts.Logger.Error("toolset: tool panicked", "tool", tool, "call", id, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res, err = Result{}, &Error{Tool: tool, ID: id, Kind: KindPanic,
				Msg: fmt.Sprintf("internal error: the %s tool failed (%v); this is a fault of the tool, not of your input, and what it did before failing was not undone", tool, r)}
		}
	}()
	base := ctx
	if audit.From(ctx) == nil {
		base = valuesFrom{Context: ctx, scope: s.scope}
	}
	g := audit.From(base).Guard()
	cctx, release, err := g.Enter(base)
	if err != nil {
		return Result{}, toolErr(tool, id, err)
	}
	defer release()
	cctx, done := audit.WithCall(cctx, tool+"#"+id, &Invocation{Tool: tool, ID: id, Input: in})
	defer done()
	e := &env{ctx: cctx, set: s, tool: tool, id: id}
	e.fs = fsguard.New(cctx, afero.NewOsFs(), fsguard.WithDir(s.ws))
	defer e.fs.Close()
	text, err := fn(e, in)
	if err != nil {
		return Result{}, toolErr(tool, id, err)
	}
	return Result{Text: capText(text, s.opts.MaxOutput)}, nil
}

// toolErr turns err into the *Error the model reads.
func toolErr(tool, id string, err error) error {
	var te *Error
	if errors.As(err, &te) {
		te.Tool, te.ID = tool, id
		return te
	}
	var de *audit.DenyError
	if errors.As(err, &de) {
		return &Error{Tool: tool, ID: id, Kind: KindDenied, Msg: de.Error(), Err: err}
	}
	return &Error{Tool: tool, ID: id, Kind: KindFailed, Msg: err.Error(), Err: err}
}

// valuesFrom is the caller's context (cancellation, deadline, values)
// that falls back on the Set's for values it lacks: the guard scope.
type valuesFrom struct {
	context.Context
	scope context.Context
}

func (c valuesFrom) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.scope.Value(key)
}

// capText cuts text to max bytes (on a rune boundary) and says so.
func capText(text string, max int) string {
	if len(text) <= max {
		return text
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + fmt.Sprintf("\n[output cut: %d of %d bytes not shown]", len(text)-cut, len(text))
}

// display is how a path is shown to the model: relative to the
// workspace when inside it, absolute otherwise.
func (s *Set) display(abs string) string {
	if rel, err := filepath.Rel(s.ws, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return rel
	}
	return abs
}

// abs makes a path the model gave absolute, from the workspace.
func (s *Set) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(s.ws, p)
}

// readAll reads r up to max bytes; more is an error.
func readAll(r io.Reader, max int64) ([]byte, bool, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if int64(len(b)) > max {
		return b[:max], true, err
	}
	return b, false, err
}

// isDenied reports whether err is the guard's refusal.
func isDenied(err error) bool { return err != nil && errors.Is(err, audit.ErrDenied) }
