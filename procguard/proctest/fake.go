// Package proctest provides a scripted procguard.Runner for host tests:
// responses per argv, an error on any unexpected command, and a record of
// every call. It spawns nothing. A real process is not used because the
// point is to test host code without the programs it would run.
package proctest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/auditguard/auditguard/procguard"
)

// ErrUnexpected is returned for a command no response was scripted for.
var ErrUnexpected = errors.New("proctest: unexpected command")

// Response is the scripted outcome of one argv.
type Response struct {
	Stdout, Stderr string
	ExitCode       int
	Err            error // returned instead of a result
	// Times limits how often the response may be used (0: any number).
	Times int
	used  int
}

// Call is one recorded Run.
type Call struct {
	Argv []string
	Dir  string
	Env  []string
	// Err is what Run returned (a denial, ErrUnexpected, or a scripted Err).
	Err error
}

// Fake is a scripted procguard.Runner. The zero value is ready to use and
// answers every command with ErrUnexpected.
type Fake struct {
	// Guard makes Run ask the guard scope in ctx first (procguard's Check,
	// which spawns nothing), so host tests see the same denials.
	Guard bool

	mu        sync.Mutex
	responses map[string]*Response
	calls     []Call
}

var _ procguard.Runner = (*Fake)(nil)

func key(argv []string) string { return strings.Join(argv, "\x00") }

// On scripts the response for an exact argv (program name first).
func (f *Fake) On(argv []string, r Response) *Fake {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.responses == nil {
		f.responses = map[string]*Response{}
	}
	f.responses[key(argv)] = &r
	return f
}

// Run implements procguard.Runner.
func (f *Fake) Run(ctx context.Context, req procguard.Request) (procguard.Result, error) {
	argv := append([]string{req.Name}, req.Args...)
	call := Call{Argv: argv, Dir: req.Dir, Env: req.Env}
	res, err := f.run(ctx, argv, req)
	call.Err = err
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
	return res, err
}

func (f *Fake) run(ctx context.Context, argv []string, req procguard.Request) (procguard.Result, error) {
	if f.Guard {
		c := procguard.CommandContext(ctx, req.Name, req.Args...)
		c.Dir, c.Env = req.Dir, req.Env
		if d := c.Check(); d.Err != nil {
			return procguard.Result{ExitCode: -1}, d.Err
		}
	}
	f.mu.Lock()
	r := f.responses[key(argv)]
	if r != nil && r.Times > 0 && r.used >= r.Times {
		r = nil
	}
	if r != nil {
		r.used++
	}
	f.mu.Unlock()
	if r == nil {
		return procguard.Result{ExitCode: -1}, fmt.Errorf("%w: %q", ErrUnexpected, argv)
	}
	if r.Err != nil {
		return procguard.Result{ExitCode: -1}, r.Err
	}
	return procguard.Result{Stdout: []byte(r.Stdout), Stderr: []byte(r.Stderr), ExitCode: r.ExitCode}, nil
}

// Calls returns every Run so far, in order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Unused returns the argvs scripted but never run, for a final assertion.
func (f *Fake) Unused() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]string
	for k, r := range f.responses {
		if r.used == 0 {
			out = append(out, strings.Split(k, "\x00"))
		}
	}
	return out
}
