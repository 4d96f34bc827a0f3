// Package proctest is the scripted exec fake for host tests. A Fake holds
// scripts (an exact argv, an argv prefix, or a matcher function, each with
// its stdout, stderr, exit code, delay and stdin expectation) and records
// every command it is asked to play.
//
// Installed on a guard with procguard.WithDouble (audittest does it for
// you), it serves every procguard.CommandContext(ctx, ...) made from that
// guard's scopes, after the policy allowed it: a denied command never
// reaches the fake, and nothing is spawned. It also implements
// procguard.Runner for host code written against that interface.
//
// A command no script matches fails Start with an *exec.Error wrapping
// ErrUnexpected, and is recorded (Unexpected); a script used fewer times
// than expected is reported by Unused. Verify joins every problem into
// one error for tests that do not use audittest.
//
// # Not guaranteed
//
//   - The fake plays the script; it does not run the program, so it cannot
//     tell whether the real program would accept the arguments.
//   - A faked command has no Process (Cmd.Process is nil); its
//     ProcessState comes from a stand-in process that exited with the
//     scripted code (see procguard.Double). Cancel the context to stop it.
//   - Without a Do function the whole of stdin is read before anything is
//     written: interactive exchanges need Do.
//   - Env is what the caller set, before the policy's filter.
package proctest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/procguard"
)

// ErrUnexpected is the cause of a command no script matched.
var ErrUnexpected = errors.New("proctest: unexpected command")

// Fake is a scripted exec double. The zero value is ready to use and
// refuses every command. It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	scripts []*Script
	calls   []*Call
}

var (
	_ procguard.Double = (*Fake)(nil)
	_ procguard.Runner = (*Fake)(nil)
)

type matchKind uint8

const (
	matchExact matchKind = iota
	matchPrefix
	matchFunc
)

// Script is the scripted outcome of the commands it matches. Its methods
// set it up and return it, for chaining; set it up before the code under
// test runs.
type Script struct {
	f     *Fake
	kind  matchKind
	argv  []string
	match func(argv []string) bool
	desc  string
	site  string

	stdout, stderr string
	exit           int
	delay          time.Duration
	stdin          *string
	fail           error
	do             func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int

	min, max int // expected uses; max < 0: no upper bound
	used     int
}

// Expect scripts the command whose argv (program name as given first) is
// exactly argv. It is expected once unless Times or AnyTimes says
// otherwise.
func (f *Fake) Expect(argv ...string) *Script {
	return f.add(&Script{kind: matchExact, argv: slices.Clone(argv)})
}

// ExpectPrefix scripts every command whose argv starts with prefix.
func (f *Fake) ExpectPrefix(prefix ...string) *Script {
	return f.add(&Script{kind: matchPrefix, argv: slices.Clone(prefix)})
}

// ExpectFunc scripts every command match accepts; desc names it in
// reports ("any git read command").
func (f *Fake) ExpectFunc(desc string, match func(argv []string) bool) *Script {
	return f.add(&Script{kind: matchFunc, match: match, desc: desc})
}

func (f *Fake) add(s *Script) *Script {
	s.f, s.min, s.max = f, 1, 1
	if _, file, line, ok := runtime.Caller(2); ok {
		s.site = shortFile(file) + ":" + strconv.Itoa(line)
	}
	f.mu.Lock()
	f.scripts = append(f.scripts, s)
	f.mu.Unlock()
	return s
}

// set changes the script under the fake's lock.
func (s *Script) set(change func()) *Script {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	change()
	return s
}

// Stdout sets what the command writes to its standard output.
func (s *Script) Stdout(out string) *Script { return s.set(func() { s.stdout = out }) }

// Stderr sets what the command writes to its standard error.
func (s *Script) Stderr(out string) *Script { return s.set(func() { s.stderr = out }) }

// Exit sets the exit code (0-255). Wait then returns an *exec.ExitError
// for a non-zero code, as for a real child.
func (s *Script) Exit(code int) *Script { return s.set(func() { s.exit = code }) }

// Delay makes the command run for d before it writes its output and
// exits; a kill (context, timeout, scope release) ends it early.
func (s *Script) Delay(d time.Duration) *Script {
	return s.set(func() { s.delay = d })
}

// Stdin expects the command to be given exactly want on its standard
// input; anything else is a mismatch (Mismatches), and the script still
// plays.
func (s *Script) Stdin(want string) *Script {
	return s.set(func() { s.stdin = &want })
}

// Fail makes Start fail with err (wrapped in *exec.Error, as a missing
// program would be); nothing is played.
func (s *Script) Fail(err error) *Script { return s.set(func() { s.fail = err }) }

// Do plays the command with fn instead of the fixed output: fn reads
// stdin as it comes (for interactive exchanges), writes stdout and stderr,
// and returns the exit code; it should return when ctx is done. Stdin
// expectations do not apply.
func (s *Script) Do(fn func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int) *Script {
	return s.set(func() { s.do = fn })
}

// Times expects exactly n uses; a further matching command is unexpected
// unless a later script matches it.
func (s *Script) Times(n int) *Script { return s.set(func() { s.min, s.max = n, n }) }

// AnyTimes allows any number of uses, none included: the script is never
// reported unused.
func (s *Script) AnyTimes() *Script { return s.set(func() { s.min, s.max = 0, -1 }) }

// String says what the script matches and where it was written:
// `Expect("git", "status") at tool_test.go:31`.
func (s *Script) String() string {
	var m string
	switch s.kind {
	case matchExact:
		m = "Expect(" + quoteList(s.argv) + ")"
	case matchPrefix:
		m = "ExpectPrefix(" + quoteList(s.argv) + ")"
	default:
		m = "ExpectFunc(" + strconv.Quote(s.desc) + ")"
	}
	if s.site != "" {
		m += " at " + s.site
	}
	return m
}

// Used returns how many commands the script served.
func (s *Script) Used() int {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return s.used
}

// Expected says how many uses the script expects, as "1", "3" or "0 or
// more".
func (s *Script) Expected() string {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	switch {
	case s.max < 0 && s.min == 0:
		return "0 or more"
	case s.max < 0:
		return strconv.Itoa(s.min) + " or more"
	}
	return strconv.Itoa(s.min)
}

func (s *Script) matches(argv []string) bool {
	switch s.kind {
	case matchExact:
		return slices.Equal(s.argv, argv)
	case matchPrefix:
		return len(argv) >= len(s.argv) && slices.Equal(s.argv, argv[:len(s.argv)])
	}
	return s.match != nil && s.match(argv)
}

// Call is one command the fake was asked to play.
type Call struct {
	Argv []string
	Dir  string
	Env  []string
	// Caller is the call site in the code under test.
	Caller runtime.Frame
	// Script is the script that served it, nil when none matched.
	Script *Script
	// Err is what Start returned: ErrUnexpected (wrapped), or the
	// script's Fail error.
	Err error
	// Stdin is what the command was given (not kept for Do scripts).
	Stdin []byte
	// Mismatch says how the call differed from its script ("stdin: want
	// ..., got ..."), "" when it did not.
	Mismatch string
	// ExitCode is the code the play returned, Done whether it has.
	ExitCode int
	Done     bool
}

// Command implements procguard.Double: it finds the first script that
// matches inv.Argv and still has uses left.
func (f *Fake) Command(inv *procguard.Invocation) (procguard.Behavior, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := &Call{Argv: slices.Clone(inv.Argv), Dir: inv.Dir, Env: slices.Clone(inv.Env), Caller: inv.Caller, ExitCode: -1}
	f.calls = append(f.calls, call)
	var spent *Script
	for _, s := range f.scripts {
		if !s.matches(inv.Argv) {
			continue
		}
		if s.max >= 0 && s.used >= s.max {
			if spent == nil {
				spent = s
			}
			continue
		}
		s.used++
		call.Script = s
		if s.fail != nil {
			call.Err, call.Done = s.fail, true
			return nil, s.fail
		}
		return &play{f: f, s: s, call: call}, nil
	}
	msg := quoteList(inv.Argv)
	if spent != nil {
		msg += " (it matches " + spent.String() + ", already used " + strconv.Itoa(spent.used) + " times)"
	}
	call.Err = fmt.Errorf("%w: %s", ErrUnexpected, msg)
	call.Done = true
	return nil, call.Err
}

// play is one accepted command being played.
type play struct {
	f    *Fake
	s    *Script
	call *Call
}

func (p *play) Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	p.f.mu.Lock()
	s := *p.s // the script as it is now; plays do not race with its setters
	p.f.mu.Unlock()
	code := -1
	defer func() {
		p.f.mu.Lock()
		p.call.ExitCode, p.call.Done = code, true
		p.f.mu.Unlock()
	}()
	if s.do != nil {
		code = s.do(ctx, stdin, stdout, stderr)
		return code
	}
	in, ok := readAll(ctx, stdin)
	p.f.mu.Lock()
	p.call.Stdin = in
	if s.stdin != nil && *s.stdin != string(in) {
		p.call.Mismatch = "stdin: want " + strconv.Quote(*s.stdin) + ", got " + strconv.Quote(string(in))
	}
	p.f.mu.Unlock()
	if !ok {
		return code
	}
	if s.delay > 0 {
		t := time.NewTimer(s.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return code
		}
	}
	io.WriteString(stdout, s.stdout)
	io.WriteString(stderr, s.stderr)
	code = s.exit
	return code
}

// readAll reads r to its end, or until ctx is done (then false).
func readAll(ctx context.Context, r io.Reader) ([]byte, bool) {
	if br, ok := r.(*bytes.Reader); ok && br.Len() == 0 {
		return nil, true // no stdin: nothing to wait for
	}
	type result struct{ b []byte }
	ch := make(chan result, 1)
	go func() {
		b, _ := io.ReadAll(r)
		ch <- result{b}
	}()
	select {
	case res := <-ch:
		return res.b, true
	case <-ctx.Done():
		return nil, false
	}
}

// Run implements procguard.Runner without spawning anything. When ctx
// carries a guard scope, the policy decides first (procguard's Check, which
// runs the whole pipeline) and a denial is returned as is; then the command
// is played as the fake scripted it.
func (f *Fake) Run(ctx context.Context, req procguard.Request) (procguard.Result, error) {
	argv := append([]string{req.Name}, req.Args...)
	inv := &procguard.Invocation{Argv: argv, Dir: req.Dir, Env: req.Env}
	if audit.From(ctx) != nil {
		c := procguard.CommandContext(ctx, req.Name, req.Args...)
		c.Dir, c.Env = req.Dir, req.Env
		d := c.Check()
		if d.Err != nil {
			return procguard.Result{ExitCode: -1}, d.Err
		}
		inv.Dir, inv.Decision = d.Dir, d.Decision
		inv.Program = d.Program
	}
	inv.Caller = audit.CallerFrame(ctx)
	b, err := f.Command(inv)
	if err != nil {
		return procguard.Result{ExitCode: -1}, &exec.Error{Name: req.Name, Err: err}
	}
	stdin := req.Stdin
	if stdin == nil {
		stdin = bytes.NewReader(nil)
	}
	var out, errb bytes.Buffer
	code := b.Run(ctx, stdin, &out, &errb)
	return procguard.Result{Stdout: out.Bytes(), Stderr: errb.Bytes(), ExitCode: code,
		Confinement: procguard.Confinement{SandboxNote: procguard.NoteDouble}}, nil
}

// Calls returns every command so far, in order.
func (f *Fake) Calls() []Call { return f.filter(func(*Call) bool { return true }) }

// Unexpected returns the commands no script matched.
func (f *Fake) Unexpected() []Call {
	return f.filter(func(c *Call) bool { return c.Script == nil })
}

// Mismatches returns the commands that differed from their script.
func (f *Fake) Mismatches() []Call {
	return f.filter(func(c *Call) bool { return c.Mismatch != "" })
}

// Running returns the commands still being played.
func (f *Fake) Running() []Call { return f.filter(func(c *Call) bool { return !c.Done }) }

func (f *Fake) filter(keep func(*Call) bool) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if keep(c) {
			cc := *c
			cc.Argv, cc.Env, cc.Stdin = slices.Clone(c.Argv), slices.Clone(c.Env), slices.Clone(c.Stdin)
			out = append(out, cc)
		}
	}
	return out
}

// Unused returns the scripts used fewer times than they expect.
func (f *Fake) Unused() []*Script {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*Script
	for _, s := range f.scripts {
		if s.used < s.min {
			out = append(out, s)
		}
	}
	return out
}

// Verify returns every problem so far, joined: unexpected commands,
// mismatches, unused scripts and commands still running. Nil means the
// fake saw exactly what it was scripted for.
func (f *Fake) Verify() error {
	var errs []error
	for _, c := range f.Unexpected() {
		errs = append(errs, fmt.Errorf("unexpected command %s at %s", quoteList(c.Argv), audit.FormatFrame(c.Caller)))
	}
	for _, c := range f.Mismatches() {
		errs = append(errs, fmt.Errorf("command %s at %s: %s", quoteList(c.Argv), audit.FormatFrame(c.Caller), c.Mismatch))
	}
	for _, s := range f.Unused() {
		errs = append(errs, fmt.Errorf("%s was used %d times, expected %s", s, s.Used(), s.Expected()))
	}
	for _, c := range f.Running() {
		errs = append(errs, fmt.Errorf("command %s at %s is still running", quoteList(c.Argv), audit.FormatFrame(c.Caller)))
	}
	return errors.Join(errs...)
}

func quoteList(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, ", ")
}

func shortFile(file string) string {
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		return file[i+1:]
	}
	return file
}
