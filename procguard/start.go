package procguard

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// Start checks the command against the guard scope and, when allowed,
// starts it confined and supervised. A denial is an *exec.Error wrapping
// the *audit.DenyError (errors.As finds both; errors.Is(err,
// fs.ErrPermission) holds) and nothing is spawned.
func (c *Cmd) Start() error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.started {
		return errors.New("procguard: already started")
	}
	c.started = true
	if s := audit.From(c.ctx); s.Begin() == nil {
		defer s.End() // release waits for a Start in flight, then kills what it started
	}
	if err := c.ctx.Err(); err != nil {
		c.closeAll(c.closeAfterStart, c.closeAfterWait)
		return err
	}
	if c.Err != nil {
		c.closeAll(c.closeAfterStart, c.closeAfterWait)
		return c.Err
	}
	pr := c.prepare()
	if pr.missing {
		// Not a policy matter: the program is not there to run.
		c.closeAll(c.closeAfterStart, c.closeAfterWait)
		return &exec.Error{Name: c.Args[0], Err: errNotFound}
	}
	if pr.err != nil {
		c.closeAll(c.closeAfterStart, c.closeAfterWait)
		return pr.err
	}
	if d := doubleOf(audit.From(c.ctx)); d != nil {
		return c.startDouble(d, pr) // a test double plays it (double.go)
	}
	if pr.path == "" || pr.program == "" {
		// Allowed (a rescue, or Off mode) but there is nothing to run.
		c.closeAll(c.closeAfterStart, c.closeAfterWait)
		_, err := policy.LookPath(c.Args[0], pr.pol.ExecPath())
		if err == nil || errors.Is(err, policy.ErrProgramNotFound) || errors.Is(err, fs.ErrNotExist) {
			err = errNotFound
		}
		return &exec.Error{Name: c.Args[0], Err: err}
	}
	c.Path, c.Program = pr.path, pr.program
	spec := pr.pol.Exec()

	home, tmp := spec.Home, spec.TmpDir
	for _, d := range []string{home, tmp} {
		if d == "" {
			continue // the command's directory, which the decision covered
		}
		rd, err := policy.Resolve(policy.OSFS{}, d, "/", true)
		if err == nil {
			if dec := pr.pol.CheckPath(policy.OpWrite, rd, pr.cwd); !dec.Allowed {
				err = fmt.Errorf("not inside a write root (%v)", dec.Rule)
			}
		}
		if err != nil {
			c.closeAll(c.closeAfterStart, c.closeAfterWait)
			return fmt.Errorf("procguard: the policy's exec Home/TmpDir %s: %w", d, err)
		}
	}
	if home == "" {
		home = pr.req.Dir
	}
	if tmp == "" {
		tmp = pr.req.Dir
	}
	var rules []*policy.Rule
	for _, p := range pr.pols {
		for i := range pr.req.Plan.Commands {
			cm := &pr.req.Plan.Commands[i]
			if cm.Program != "" {
				if d := p.CheckExec(cm.Program, cm.Argv); d.Allowed {
					rules = append(rules, d.Rule)
				}
			}
		}
	}
	env, dropped := pr.pol.ExecEnv(policy.ExecEnvInput{Host: os.Environ(), Set: c.Env, Home: home, Tmp: tmp, Rules: rules})
	c.Confinement.EnvDropped = dropped
	if tc := pr.pol.ToolCreation(&pr.req.Plan); tc != nil {
		env = overrideEnv(env, tc.Env)
		c.Confinement.Creation = tc
	}

	x := &exec.Cmd{Path: c.Program, Args: c.Args, Env: env, Dir: pr.req.Dir, Stdin: c.Stdin, ExtraFiles: c.ExtraFiles}
	limit := spec.OutputLimit
	if limit == 0 {
		limit = policy.DefaultOutputLimit
	}
	x.Stdout, c.outW = wrapOutput(c.Stdout, limit)
	if c.Stderr != nil && c.Stderr == c.Stdout && c.outW != nil {
		x.Stderr, c.errW = c.outW, c.outW
	} else {
		x.Stderr, c.errW = wrapOutput(c.Stderr, limit)
	}
	x.WaitDelay = c.WaitDelay
	if x.WaitDelay <= 0 {
		x.WaitDelay = DefaultWaitDelay
	}
	x.SysProcAttr = groupAttr()

	cg := c.makeCgroup(spec.Limits, spec.NoCgroup)
	if cg != nil {
		cg.attach(x.SysProcAttr)
	}
	proc, err := c.launch(pr, x, cg, env)
	if err != nil {
		cg.remove()
		c.closeAll(c.closeAfterStart, c.closeAfterWait)
		return err
	}
	c.Process = proc
	c.Confinement.ProcessGroup = proc.Pid
	c.closeAll(c.closeAfterStart)
	c.closeAfterStart = nil

	if c.sandbox == nil {
		c.Confinement.Rlimits = applyLimits(proc.Pid, spec.Limits)
	}

	timeout := commandTimeout(spec, c.Timeout)
	c.Confinement.Timeout = timeout
	c.sup = supervise(c.ctx, proc.Pid, c.keptLaunch(), cg, timeout, c.Cancel, x.WaitDelay)
	return nil
}

// errNotFound is exec.ErrNotFound with the policy's PATH named: a
// missing program is not a policy denial.
var errNotFound = fmt.Errorf("%w in the policy's PATH (ExecSpec.Path)", exec.ErrNotFound)

// Wait waits for the command's leader to exit, kills whatever is left of
// its group and cgroup, reaps it and waits for its I/O (bounded by
// WaitDelay).
func (c *Cmd) Wait() error {
	if c.double != nil {
		return c.waitDouble()
	}
	if !c.started || c.Process == nil {
		return errors.New("procguard: not started")
	}
	if c.waited {
		return errors.New("procguard: Wait was already called")
	}
	c.waited = true
	var err error
	switch {
	case c.sup.launch != nil:
		// A session's command ends with its program; the sandbox's
		// init goes on (Session).
		c.ProcessState, err = c.sandbox.Wait()
		c.sup.ended()
	case c.sandbox != nil:
		c.sup.beforeReap()
		c.ProcessState, err = c.sandbox.Wait()
	default:
		c.sup.beforeReap()
		err = c.x.Wait()
		c.ProcessState = c.x.ProcessState
	}
	if c.sandbox != nil {
		c.egress.close()
		if exit := c.sandbox.Exit(); exit != nil {
			c.Signal = exit.Signal
		}
	}
	c.sup.afterReap()
	c.sup.cg.drain()
	c.sup.cg.remove()
	c.closeAll(c.closeAfterWait)
	if cause := c.sup.cause(); cause != nil {
		return &KilledError{Cause: cause, Err: err, Limit: c.Confinement.Timeout}
	}
	return err
}

// commandTimeout is the hard timeout of a command: its own Timeout, else
// the policy's default, capped by the policy's MaxTimeout.
func commandTimeout(spec policy.ExecSpec, own time.Duration) time.Duration {
	timeout := spec.Timeout
	if own > 0 {
		timeout = own
	}
	if spec.MaxTimeout > 0 && (timeout == 0 || timeout > spec.MaxTimeout) {
		timeout = spec.MaxTimeout
	}
	return timeout
}

func (c *Cmd) closeAll(lists ...[]io.Closer) {
	for _, l := range lists {
		for _, cl := range l {
			cl.Close()
		}
	}
}

// wrapOutput caps w unless it is nil or a pipe made by StdoutPipe.
func wrapOutput(w io.Writer, limit int64) (io.Writer, *capWriter) {
	switch v := w.(type) {
	case nil:
		return nil, nil
	case pipeEnd:
		return v.File, nil
	}
	if limit < 0 {
		return w, nil
	}
	if sb, ok := w.(*safeBuffer); ok {
		sb.limit = limit // never grow Output's buffer past the cap
	}
	cw := &capWriter{w: w, limit: limit}
	return cw, cw
}

// overrideEnv sets each "NAME=VALUE" of set in env, replacing an earlier
// value of NAME.
func overrideEnv(env, set []string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(set, func(s string) bool { return strings.HasPrefix(s, k+"=") }) {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// keptLaunch is the command's launch when its sandbox outlives it (a
// Session's, or a recycled one): the command ends with its program, and
// killing it kills the sandbox only while the command runs. Nil otherwise.
func (c *Cmd) keptLaunch() *sandbox.Launch {
	if c.sandbox != nil && c.sandbox.InSession() {
		return c.sandbox
	}
	return nil
}
