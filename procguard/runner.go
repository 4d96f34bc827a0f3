package procguard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
)

// Runner runs one command to completion. Host code that takes a Runner can
// be tested with proctest.Fake instead of spawning processes; Guarded is
// the real, guarded implementation.
type Runner interface {
	Run(ctx context.Context, req Request) (Result, error)
}

// Request is one command for a Runner.
type Request struct {
	Name  string
	Args  []string
	Dir   string
	Env   []string
	Stdin io.Reader
}

// Result is what a command produced.
type Result struct {
	Stdout, Stderr []byte
	ExitCode       int // -1 when the command did not exit normally
	Truncated      bool
	Confinement    Confinement
}

// Guarded is the Runner that checks and runs commands with CommandContext.
var Guarded Runner = guarded{}

type guarded struct{}

// Run implements Runner. A non-zero exit is reported in ExitCode with a nil
// error; denials, start failures and kills are errors.
func (guarded) Run(ctx context.Context, req Request) (Result, error) {
	c := CommandContext(ctx, req.Name, req.Args...)
	c.Dir, c.Env, c.Stdin = req.Dir, req.Env, req.Stdin
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	res := Result{Stdout: out.Bytes(), Stderr: errb.Bytes(), ExitCode: -1,
		Truncated: c.StdoutTruncated() || c.StderrTruncated(), Confinement: c.Confinement}
	if c.ProcessState != nil {
		res.ExitCode = c.ProcessState.ExitCode()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		var ke *KilledError
		if !errors.As(err, &ke) {
			err = nil
		}
	}
	return res, err
}
