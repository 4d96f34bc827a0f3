package procguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/landlock"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// sandboxMissing remembers why this host cannot build the sandbox (no
// user namespaces), so later starts fall back without trying again.
var sandboxMissing atomic.Pointer[string]

// launch starts the command: inside the sandbox when the policy and host
// allow it (c.sandbox is set then), else x under Landlock alone. It returns
// the process it started.
func (c *Cmd) launch(pr *prepared, x *exec.Cmd, cg *cgroup, env []string) (*os.Process, error) {
	spec := pr.pol.Exec()
	rs, note, err := c.landlockRuleset(pr)
	c.Confinement.LandlockNote = note
	if err != nil {
		return nil, err
	}
	switch why := sandboxMissing.Load(); {
	case spec.NoSandbox:
		c.Confinement.SandboxNote = "disabled by the policy (ExecSpec.NoSandbox)"
	case why != nil:
		if spec.RequireSandbox {
			return nil, fmt.Errorf("procguard: the policy requires the sandbox: %s", *why)
		}
		c.Confinement.SandboxNote = *why
	default:
		srs := rs
		if pr.req.ExecJudged && !spec.LandlockExecAny && rs != nil {
			// Every exec is judged when it happens: Landlock's execute
			// right would refuse what that judgement allows.
			if srs, _, err = c.landlockRulesetFor(pr, true); err != nil {
				return nil, err
			}
		}
		err := c.startSandboxed(pr, x, cg, env, sandboxExecDirs(pr, srs))
		if err == nil {
			return c.sandbox.Process, nil
		}
		if !errors.Is(err, sandbox.ErrUnavailable) {
			return nil, err
		}
		why := err.Error()
		sandboxMissing.Store(&why)
		if spec.RequireSandbox {
			return nil, fmt.Errorf("procguard: the policy requires the sandbox: %w", err)
		}
		c.Confinement.SandboxNote = why
	}
	if err := c.unjudged(pr, "no sandbox: "+c.Confinement.SandboxNote); err != nil {
		return nil, err
	}
	if rs != nil {
		st, err := landlock.StartReused(rs, x.Start)
		c.Confinement.Landlock = st
		if err != nil {
			if x.Process == nil {
				// The event promised this confinement; never run without it.
				return nil, fmt.Errorf("procguard: %w", err)
			}
			return nil, err
		}
		c.x = x
		return x.Process, nil
	}
	if err := x.Start(); err != nil {
		return nil, err
	}
	c.x = x
	return x.Process, nil
}

// startSandboxed starts the command in the sandbox built from the scope's
// policies, with x's streams. The cgroup is joined by the sandbox's init
// before the target starts.
func (c *Cmd) startSandboxed(pr *prepared, x *exec.Cmd, cg *cgroup, env []string, rs *landlock.Ruleset) error {
	spec := c.sandboxSpec(pr, env, rs, pr.pol.Exec().Limits)
	stdio := sandbox.Stdio{Stdin: x.Stdin, Stdout: x.Stdout, Stderr: x.Stderr, ExtraFiles: x.ExtraFiles, WaitDelay: x.WaitDelay}
	if err := c.startInSandbox(spec, stdio, cg); err != nil {
		return err
	}
	if !c.Confinement.ExecJudged {
		err := c.unjudged(pr, fmt.Sprint(c.Confinement.Sandbox.Notes))
		if err == nil && pr.req.ExecJudged && !pr.pol.Exec().LandlockExecAny && rs != nil {
			// Landlock's execute right was widened for exec-time
			// judgement, which this sandbox does not do: never run so.
			err = &exec.Error{Name: c.Args[0], Err: fmt.Errorf("procguard: the sandbox could not judge the programs this command starts (%v)", c.Confinement.Sandbox.Notes)}
		}
		if err != nil {
			_ = c.sandbox.Process.Kill()
			_, _ = c.sandbox.Wait()
			c.sandbox = nil
			return err
		}
	}
	c.tree.root(ProgramRun{Pid: c.Confinement.Sandbox.Pid, Program: pr.program, Argv: c.Args, Dir: pr.req.Dir,
		Outcome: pr.res.Outcome, Rule: pr.res.Rule})
	return nil
}

// unjudged is asked when the command is about to run where its execs are
// not judged when they happen, although its decision counted on that
// (ExecRequest.ExecJudged: what the static reading could not read was left
// to that judgement). It decides again as where exec is not judged, and
// returns the refusal, if any, for the caller to stop the command before
// its first instruction.
func (c *Cmd) unjudged(pr *prepared, why string) error {
	if !pr.req.ExecJudged {
		return nil
	}
	req := pr.req
	req.ExecJudged = false
	for _, p := range pr.pols {
		if d := req.Decide(p); !d.Allowed {
			return &exec.Error{Name: c.Args[0], Err: fmt.Errorf("procguard: the programs this command starts cannot be judged when they start here (%s), and without that it is refused: %v: %s", why, d.Rule, d.Detail)}
		}
	}
	return nil
}

// sandboxSpec builds the sandbox's spec for c's program from the scope's
// policies: files, Landlock ruleset rs, rlimits from limits, and the
// network (host, or own namespace with forwarded loopback ports and, with
// net rules, the egress proxy, whose variables go into env).
func (c *Cmd) sandboxSpec(pr *prepared, env []string, rs *landlock.Ruleset, limits policy.ExecLimits) *sandbox.Spec {
	es := pr.pol.Exec()
	spec := &sandbox.Spec{
		Path:     c.Program,
		Args:     c.Args,
		Env:      env,
		Dir:      pr.req.Dir,
		Landlock: rs,
		Rlimits:  rlimitsOf(limits),
	}
	for _, p := range pr.pols {
		fs := p.FileSpec(pr.cwd)
		if c.Confinement.Creation != nil && p.ToolCreation(&pr.req.Plan) != nil {
			// git init may create the new repository's .git/config: it
			// writes it from its defaults (policy.ToolCreation).
			fs.Protected = slices.DeleteFunc(fs.Protected, func(e string) bool {
				return slices.Contains(c.Confinement.Creation.Protected, e)
			})
		}
		spec.Files = append(spec.Files, fs)
	}
	switch {
	case es.HostNetwork:
		spec.Net.Host = true
	case !es.DenyNetwork:
		spec.Net.Forward, _ = pr.pol.LoopbackPorts()
		if pr.pol.NetRuleCount() > 0 {
			c.egress = newEgress(c.ctx, c.String(), spec.Net.Forward)
			spec.Net.Forward = append(spec.Net.Forward, c.egress.port)
			spec.Net.Proxy = c.egress.port
			spec.Env = proxyEnv(spec.Env, c.egress.port)
		}
	}
	return spec
}

// startInSandbox starts spec with stdio, joining cg, and records what the
// sandbox enforced in c.Confinement.
func (c *Cmd) startInSandbox(spec *sandbox.Spec, stdio sandbox.Stdio, cg *cgroup) error {
	var join func(int) error
	if cg != nil {
		join = cg.joinAll
	}
	if spec.Judge == nil && !spec.NoSeccomp {
		spec.Judge = c.judgeFileCall
		// A guard that asks for them sees the child's allowed calls too:
		// each is decided again in the host, OnCall asked (a round trip
		// per trapped call).
		if g := audit.From(c.ctx).Guard(); g != nil && g.Settings().ChildFileCalls {
			spec.AskAllowed = true
		}
	}
	if spec.JudgeExec == nil && !spec.NoSeccomp && !c.hostRun {
		if ok, _ := sandbox.ExecJudgeable(); ok {
			spec.JudgeExec = c.judgeExec
		}
	}
	var l *sandbox.Launch
	var err error
	if c.Session != nil {
		if l, err = c.startInSession(spec, stdio, cg); errors.Is(err, sandbox.ErrSessionBusy) {
			l, err = nil, nil // another command of the session runs: one of its own
		}
	}
	if l == nil && err == nil && sandbox.EndsAfterWait() {
		// A sandbox a finished command left idle, kept for the next, or
		// one ended after the command's Wait (sandbox.StartRecycled):
		// init joins none of the command's cgroups, the target joins
		// them all before its first instruction.
		files, jerr := cg.sessionJoin()
		if jerr != nil {
			return &sandbox.SetupError{Step: "join cgroup", Err: jerr}
		}
		spec.TreeCgroups = files
		l, err = sandbox.StartRecycled(c.ctx, spec, stdio, c.dialForward)
		spec.TreeCgroups = nil
		for _, f := range files {
			f.Close() // init has its copies
		}
	}
	if l == nil && err == nil {
		// The target joins the pids cgroup before its first instruction;
		// init's threads do not count against the tree's process limit.
		initJoin, tree, terr := cg.treeJoin()
		if terr != nil {
			return &sandbox.SetupError{Step: "join cgroup", Err: terr}
		}
		if tree != nil {
			defer tree.Close() // init has its copy
			join, spec.TreeCgroups = initJoin, []*os.File{tree}
		}
		l, err = sandbox.Start(c.ctx, spec, stdio, join, c.dialForward)
	}
	if err != nil {
		c.egress.close()
		c.egress = nil
		return err
	}
	c.sandbox = l
	c.Process = l.Process
	c.Confinement.Sandbox = l.Report
	c.Confinement.ExecJudged = l.Report.Exec
	c.Confinement.Landlock = l.Report.Landlock
	c.Confinement.Rlimits = l.Report.Rlimits
	c.Confinement.LandlockNote = withoutProtectedNote(c.Confinement.LandlockNote)
	c.Confinement.ProcessGroup = l.Process.Pid
	return nil
}

// startInSession starts spec in the session's sandbox; the target joins
// every directory of cg itself.
func (c *Cmd) startInSession(spec *sandbox.Spec, stdio sandbox.Stdio, cg *cgroup) (*sandbox.Launch, error) {
	files, err := cg.sessionJoin()
	if err != nil {
		return nil, &sandbox.SetupError{Step: "join cgroup", Err: err}
	}
	defer func() {
		for _, f := range files {
			f.Close() // init has its copies
		}
	}()
	spec.TreeCgroups = files
	l, err := c.Session.sb.Start(c.ctx, spec, stdio, c.dialForward)
	spec.TreeCgroups = nil
	if err == nil {
		c.Session.track(audit.From(c.ctx))
	}
	return l, err
}

// dialForward dials a loopback port for the sandboxed child: one decision
// through the pipeline, like a netguard dial, then a dial of the approved
// literal. The egress port is served by the command's proxy instead,
// which decides each request the child makes through it.
func (c *Cmd) dialForward(ctx context.Context, network, addr string) (net.Conn, error) {
	if c.egress != nil {
		if _, port, err := net.SplitHostPort(addr); err == nil && port == strconv.Itoa(int(c.egress.port)) {
			return c.egress.conn()
		}
	}
	ev := &audit.Event{Protocol: audit.Net, Op: policy.OpConnect, Target: addr,
		Detail: "forwarded from the sandbox of " + c.String()}
	req, err := policy.ParseNetRequest(policy.OpConnect, network, addr)
	if err != nil {
		if cerr := audit.Check(c.ctx, ev, req); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	ev.Resolved = req.Host
	if err := audit.Check(c.ctx, ev, req); err != nil {
		return nil, err
	}
	if !req.IP.IsLoopback() {
		return nil, fmt.Errorf("procguard: forwarded address %s is not loopback", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, net.JoinHostPort(req.IP.String(), fmt.Sprint(req.Port)))
}

// judgeFileCall runs a file call the sandbox's supervisor refused through
// the scope's pipeline, as an fsguard call would be: it is recorded (and
// logged) with the command's tool call, BeforeDeny may rescue it and the
// file protocol's mode applies. It returns true to overturn the refusal.
// The child waits meanwhile, at most sandbox.JudgeTimeout.
func (c *Cmd) judgeFileCall(fc *sandbox.FileCall) bool {
	if len(fc.Paths) == 0 {
		return false
	}
	ev := &audit.Event{Protocol: audit.FS, Op: fc.Op, Target: fc.Paths[0], Resolved: fc.Paths[0],
		Detail: fmt.Sprintf("%s by pid %d in the sandbox of %s", fc.Call, fc.Pid, c.String())}
	if len(fc.Paths) > 1 {
		ev.Target2, ev.Resolved2 = fc.Paths[1], fc.Paths[1]
	}
	return audit.Check(c.ctx, ev, childFileRequest{fc}) == nil
}

// childFileRequest decides a child file call again with the scope's
// policies: a refused one, where a refusal no rule makes
// (FileCall.Reason) is a hard denial by ruleSandboxObject, or one the
// supervisor allowed (FileCall.Allowed, Spec.AskAllowed).
type childFileRequest struct{ fc *sandbox.FileCall }

// ruleSandboxObject stands for the supervisor's refusals by object.
var ruleSandboxObject = &policy.Rule{Kind: policy.KindReadDeny, Source: "sandbox",
	Hint: "the file is read-denied by another name, or the command may not read it"}

func (r childFileRequest) Decide(p *policy.Policy) policy.Decision {
	if r.fc.Reason != "" {
		return policy.Deny(policy.TierHard, ruleSandboxObject, r.fc.Reason)
	}
	op := r.fc.Op
	if op == policy.OpConnect {
		op = policy.OpWrite
	}
	var d policy.Decision
	for _, path := range r.fc.Paths {
		d = p.CheckPath(op, path, "")
		if !d.Allowed && r.fc.Allowed && op == policy.OpRead && (d.Rule == nil || d.Rule.Kind != policy.KindReadDeny) {
			// Read roots are held by Landlock in the sandbox, as there.
			d = policy.Allow(nil)
		}
		if !d.Allowed {
			return d
		}
	}
	if r.fc.Allowed {
		return d
	}
	// The host's policy allows what the sandbox refused (a reload in
	// between): the sandbox's answer stands.
	return policy.Deny(policy.TierHard, ruleSandboxObject, "refused in the sandbox")
}

// DefaultProcesses is the process-count limit of a command's tree when
// the policy sets none (ExecLimits.Processes).
const DefaultProcesses = 512

func cgroupLimitsOf(l policy.ExecLimits) cgroupLimits {
	pids := int64(l.Processes)
	if pids == 0 {
		pids = DefaultProcesses
	}
	return cgroupLimits{Pids: pids, MemoryBytes: int64(l.MemoryBytes)}
}
