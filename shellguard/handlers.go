package shellguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/spf13/afero"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// Exit statuses the handlers give, as shells do.
const (
	// StatusDenied is the status of a program the guard refused (or that
	// could not be started): the shell's "cannot execute".
	StatusDenied = 126
	// StatusNotFound is the status of a program the policy's PATH does not
	// hold.
	StatusNotFound = 127
	// StatusKilled is the status of a program the policy's own exec
	// timeout killed, and of a call its Timeout ended (128+SIGKILL).
	StatusKilled = 137
	// StatusCancelled is the status of a call its context or Close ended
	// (128+SIGINT).
	StatusCancelled = 130
)

// Handlers route a mvdan.cc/sh interpreter's side effects through the
// guard scope of the context it was made from: every external program
// through procguard with its expanded argv, and the shell's own file
// work (redirections, source, globs, cd, test) through fsguard. A host
// that embeds mvdan.cc/sh itself passes Options to interp.New; Session
// does that for a whole guarded shell.
//
// Run the Runner with a context derived from the one given to
// NewHandlers: programs are decided by the scope the Run's context
// carries, files by the one NewHandlers was given.
//
// One Handlers serves one interp.Runner: the file handlers decide in the
// context of the handler call in progress (its audit.Call, so records
// name the tool call), so handler calls of two different tool calls must
// not overlap on one Handlers. The calls of one Run never do; background
// jobs a Run leaves running would be taken for the next Run's (a Session
// ends them with their call).
type Handlers struct {
	fctx  *handlerContext // the context fsguard decides in
	fs    *fsguard.Fs
	track *tracker // set by Session: handler calls in flight
	// procs is the sandbox the programs share, one at a time
	// (procguard.Session); Close swaps in a new one.
	procs atomic.Pointer[procguard.Session]
}

// NewHandlers returns handlers deciding in the guard scope ctx carries
// (audit.Guard.Enter). Programs are looked up in the policy's PATH, never
// the interpreter's; a program is decided with its expanded arguments,
// its working directory (the interpreter's) and its environment (the
// interpreter's exported variables, filtered by the policy).
func NewHandlers(ctx context.Context) *Handlers {
	h := &Handlers{fctx: &handlerContext{Context: ctx}}
	// Raw files: the interpreter hands a redirection's file to the
	// programs it starts as their descriptor, as a shell does, and closes
	// it when the statement ends. The open itself is decided and pinned
	// like every fsguard open.
	h.fs = fsguard.New(h.fctx, afero.NewOsFs(), fsguard.WithRawFiles())
	h.procs.Store(&procguard.Session{})
	return h
}

// shareSandbox: programs run one after another in one sandbox (tests turn
// it off to compare).
var shareSandbox = true

// Close releases the descriptors the file handlers keep on the write
// roots (fsguard.Fs.Close) and ends the sandbox the programs share; the
// handlers stay usable, reopening the descriptors on demand and building
// a new sandbox for the next program. The scope's release closes the
// descriptors too.
func (h *Handlers) Close() error {
	err := h.procs.Swap(&procguard.Session{}).Close()
	return errors.Join(h.fs.Close(), err)
}

// Options returns the interpreter options that install every handler:
// ExecHandlers (Exec), OpenHandler (Open), StatHandler (Stat),
// ReadDirHandler2 (ReadDir) and AccessHandler (Access).
func (h *Handlers) Options() []interp.RunnerOption {
	return []interp.RunnerOption{
		interp.ExecHandlers(h.Exec),
		interp.OpenHandler(h.Open),
		interp.StatHandler(h.Stat),
		interp.ReadDirHandler2(h.ReadDir),
		interp.AccessHandler(h.Access),
	}
}

// handlerContext is the context the session's fsguard handle decides in:
// the scope's context, with the values (the audit.Call above all) of the
// handler call in progress, so a file decision's record names the tool
// call that made it.
type handlerContext struct {
	context.Context
	cur atomic.Pointer[context.Context]
}

func (c *handlerContext) Value(key any) any {
	if p := c.cur.Load(); p != nil {
		return (*p).Value(key)
	}
	return c.Context.Value(key)
}

// enter marks the start of a handler call made in ctx: it refuses calls of
// a call that has ended (a background job outliving its call), counts the
// call for the session, and makes fsguard decide in ctx.
func (h *Handlers) enter(ctx context.Context) (func(), error) {
	end := func() {}
	if h.track != nil {
		var ok bool
		if end, ok = h.track.begin(); !ok {
			return nil, context.Canceled
		}
	}
	// Checked once counted: a call that ends from now on waits for this
	// one, and one that has ended is refused.
	if err := ctx.Err(); err != nil {
		end()
		return nil, err
	}
	h.fctx.cur.Store(&ctx)
	return end, nil
}

// Exec is an interp.ExecHandlers middleware that runs every program
// through procguard and never calls next: no program runs unguarded.
//
// A program the guard refuses prints the denial's teaching text on the
// interpreter's stderr and gives status 126 (StatusDenied); one the
// policy's PATH lacks gives 127; one the policy's own exec timeout killed
// gives 137; otherwise the program's status (128+N for a signal N). None
// of these stops the script. When the call's context ends (its timeout,
// a cancellation), the program's whole tree is killed and the script
// stops.
func (h *Handlers) Exec(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return h.exec
}

func (h *Handlers) exec(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	end, err := h.enter(ctx)
	if err != nil {
		return err
	}
	defer end()
	cmd := procguard.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = hc.Dir
	cmd.Env = exported(hc.Env)
	cmd.Stdin = hc.Stdin
	cmd.Stdout = hc.Stdout
	cmd.Stderr = hc.Stderr
	if shareSandbox {
		cmd.Session = h.procs.Load()
	}
	err = cmd.Run()
	if err == nil {
		return nil
	}
	where := position(hc.Pos)
	var de *audit.DenyError
	var ke *procguard.KilledError
	var ee *exec.ExitError
	var se *sandbox.ExitError
	switch {
	case errors.As(err, &de):
		fmt.Fprintf(hc.Stderr, "%s%s: %v\n", where, args[0], de)
		return interp.ExitStatus(StatusDenied)
	case errors.Is(err, exec.ErrNotFound):
		fmt.Fprintf(hc.Stderr, "%s%s: command not found (programs are looked up in the policy's PATH)\n", where, args[0])
		return interp.ExitStatus(StatusNotFound)
	case ctx.Err() != nil:
		// The call's timeout or cancellation killed it: stop the script.
		return ctx.Err()
	case errors.As(err, &ke):
		fmt.Fprintf(hc.Stderr, "%s%s: %v\n", where, args[0], ke)
		return interp.ExitStatus(StatusKilled)
	case errors.As(err, &ee):
		if cmd.Signal != 0 {
			return interp.ExitStatus(128 + int(cmd.Signal))
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return interp.ExitStatus(128 + int(ws.Signal()))
		}
		return interp.ExitStatus(uint8(ee.ExitCode()))
	case errors.As(err, &se): // a program of the shared sandbox
		if se.Signal != 0 {
			return interp.ExitStatus(128 + int(se.Signal))
		}
		return interp.ExitStatus(uint8(se.Code))
	}
	fmt.Fprintf(hc.Stderr, "%s%s: %v\n", where, args[0], err)
	return interp.ExitStatus(StatusDenied)
}

// position renders a script position as "line 3:5: ", "" when unknown.
func position(p syntax.Pos) string {
	if !p.IsValid() {
		return ""
	}
	return fmt.Sprintf("line %d:%d: ", p.Line(), p.Col())
}

// exported lists the interpreter's exported variables as K=V.
func exported(env expand.Environ) []string {
	list := []string{}
	for name, vr := range env.Each {
		if vr.Exported && vr.Kind == expand.String && vr.IsSet() {
			list = append(list, name+"="+vr.String())
		}
	}
	return list
}

// abs makes a handler's path absolute against the interpreter's directory.
func abs(ctx context.Context, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(interp.HandlerCtx(ctx).Dir, path)
}

// Open is an interp.OpenHandler: redirections and source open files
// through fsguard, so a write lands only inside a write root and never on
// a protected name, and a read never in a read-deny set. A denial is an
// *fs.PathError: the interpreter prints its teaching text and the
// statement fails with status 1. The standard devices (/dev/null,
// /dev/zero, /dev/stdin, /dev/stdout, /dev/stderr and /dev/fd/0-2) are
// served without a decision: they reach nothing.
func (h *Handlers) Open(ctx context.Context, path string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	end, err := h.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	hc := interp.HandlerCtx(ctx)
	switch path {
	case "/dev/null", "/dev/zero":
		return os.OpenFile(path, flag, perm)
	case "/dev/stdin", "/dev/fd/0":
		if hc.Stdin == nil {
			return os.Open(os.DevNull)
		}
		return readOnly{hc.Stdin}, nil
	case "/dev/stdout", "/dev/fd/1":
		return writeOnly{hc.Stdout}, nil
	case "/dev/stderr", "/dev/fd/2":
		return writeOnly{hc.Stderr}, nil
	}
	f, err := h.fs.OpenFile(abs(ctx, path), flag, perm)
	if err != nil {
		return nil, pathError("open", path, err)
	}
	if h.track != nil {
		h.track.keep(f)
	}
	return f, nil
}

// pathError gives the interpreter the *fs.PathError it prints (any other
// error would halt the script), naming the path as the script did.
func pathError(op, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if pe.Path == path {
			return pe
		}
		return &fs.PathError{Op: op, Path: path, Err: pe.Err}
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

type readOnly struct{ io.Reader }

func (readOnly) Write([]byte) (int, error) { return 0, os.ErrInvalid }
func (readOnly) Close() error              { return nil }

type writeOnly struct{ io.Writer }

func (writeOnly) Read([]byte) (int, error) { return 0, os.ErrInvalid }
func (writeOnly) Close() error             { return nil }

// Stat is an interp.StatHandler: test's file operators, cd and the
// interpreter's other stats ask fsguard (a read of the name: a name in a
// read-deny set is reported as not there to the script, and the denial
// is recorded).
func (h *Handlers) Stat(ctx context.Context, name string, followSymlinks bool) (fs.FileInfo, error) {
	end, err := h.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	name = abs(ctx, name)
	if followSymlinks {
		return h.fs.Stat(name)
	}
	info, _, err := h.fs.LstatIfPossible(name)
	return info, err
}

// ReadDir is an interp.ReadDirHandler2: globs list directories through
// fsguard, so a glob never lists a directory the policy keeps from reads.
// Entries are sorted by name, as os.ReadDir sorts them.
func (h *Handlers) ReadDir(ctx context.Context, path string) ([]fs.DirEntry, error) {
	end, err := h.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	f, err := h.fs.Open(abs(ctx, path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, ok := f.(interface {
		ReadDir(int) ([]fs.DirEntry, error)
	})
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: path, Err: errors.ErrUnsupported}
	}
	ents, err := d.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// Access is an interp.AccessHandler (test -r, -w, -x and cd's search
// check): the name is stat'ed through fsguard (a read, recorded when
// refused); -w also asks whether the policy would let the name be
// written (a dry run: fsguard's Check, not recorded), so a protected name
// tests as not writable; then the kernel answers for the user
// (access(2)).
func (h *Handlers) Access(ctx context.Context, path string, mode interp.AccessMode) error {
	end, err := h.enter(ctx)
	if err != nil {
		return err
	}
	defer end()
	path = abs(ctx, path)
	if _, err := h.fs.Stat(path); err != nil {
		return err
	}
	if mode&interp.AccessWrite != 0 {
		if d := h.fs.Check(policy.OpWrite, path); !d.Allowed {
			return d.Err
		}
	}
	return access(path, mode)
}

// tracker counts a session's handler calls in flight, so a call can wait
// for every program it started (background jobs included) to be gone, and
// refuses new ones once the call has ended.
//
// It also keeps the files the call's redirections opened: the interpreter
// closes a statement's files when the statement ends, but not those an
// exec redirection (exec >log) made the shell's own, so the call closes
// what is left when it ends.
type tracker struct {
	mu     sync.Mutex
	n      int
	closed bool
	zero   chan struct{} // closed when n drops to 0 after close
	files  []io.Closer
}

// open starts counting for a new call.
func (t *tracker) open() {
	t.mu.Lock()
	t.n, t.closed, t.zero = 0, false, nil
	t.mu.Unlock()
}

// keep remembers a file the call opened.
func (t *tracker) keep(f io.Closer) {
	t.mu.Lock()
	t.files = append(t.files, f)
	t.mu.Unlock()
}

// closeFiles closes the files the call opened (those the interpreter
// closed already just say so); call it once no handler call is in flight.
func (t *tracker) closeFiles() {
	t.mu.Lock()
	files := t.files
	t.files = nil
	t.mu.Unlock()
	for _, f := range files {
		f.Close()
	}
}

func (t *tracker) begin() (func(), bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, false
	}
	t.n++
	var once sync.Once
	return func() { once.Do(t.done) }, true
}

func (t *tracker) done() {
	t.mu.Lock()
	t.n--
	if t.n == 0 && t.zero != nil {
		close(t.zero)
		t.zero = nil
	}
	t.mu.Unlock()
}

// close refuses new handler calls and returns a channel closed once none
// is in flight.
func (t *tracker) close() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	ch := make(chan struct{})
	if t.n == 0 {
		close(ch)
	} else {
		t.zero = ch
	}
	return ch
}
