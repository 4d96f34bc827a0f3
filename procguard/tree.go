package procguard

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// ProgramRun is one program the command's tree started: the command
// itself first, then, where the sandbox judges every exec when it happens
// (Confinement.ExecJudged), each program a process of the tree started,
// as it was judged.
type ProgramRun struct {
	// Pid is the process as the sandbox's pid namespace names it, PPid
	// its parent (0 for the command itself).
	Pid, PPid int
	// Program is the real path judged (a "#!" script itself, with its
	// interpreters in Interp; the program the dynamic loader maps when the
	// loader is run as one); Argv its argv; Dir the working directory.
	Program string
	Argv    []string
	Dir     string
	Interp  []string
	// Outcome is the pipeline's answer (Allowed, Rescued, Warned, Denied)
	// and Rule the rule that decided, if any.
	Outcome audit.Outcome
	Rule    *policy.Rule
	// Killed is set when the process was killed at its exec stop: the
	// kernel ran another program, argv or environment than the one judged.
	Killed bool
}

// String renders the run on one line ("pid 7 <- 3: /usr/bin/git [git status] allowed").
func (r ProgramRun) String() string {
	s := fmt.Sprintf("pid %d <- %d: %s %q %s", r.Pid, r.PPid, r.Program, r.Argv, r.Outcome)
	if r.Killed {
		s += " (killed: changed after it was judged)"
	}
	return s
}

// tree is the record of what a command's tree ran.
type tree struct {
	mu   sync.Mutex
	runs []ProgramRun
}

func (t *tree) add(r ProgramRun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.runs); n > 0 {
		last := &t.runs[n-1]
		if last.Pid == r.Pid && last.Program == r.Program && last.Outcome == r.Outcome && !r.Killed && slices.Equal(last.Argv, r.Argv) {
			return // a shell trying the next PATH entry after a refusal: one run
		}
	}
	t.runs = append(t.runs, r)
}

// root puts the command itself first: its processes' execs may be judged
// before Start has its pid.
func (t *tree) root(r ProgramRun) {
	t.mu.Lock()
	t.runs = append([]ProgramRun{r}, t.runs...)
	t.mu.Unlock()
}

// Tree returns what the command's tree ran so far, in the order it was
// judged: the command itself, then every program its processes started
// (only where Confinement.ExecJudged; elsewhere just the command). It may
// be called while the command runs.
func (c *Cmd) Tree() []ProgramRun {
	c.tree.mu.Lock()
	defer c.tree.mu.Unlock()
	return append([]ProgramRun(nil), c.tree.runs...)
}

// judgeExec runs a program a process of the command's sandbox starts
// through the scope's pipeline, as a Start would be judged: exec rules and
// option tables on its real path and argv, loader variables the tree set,
// OnCall and BeforeDeny, the exec mode. It is recorded (and logged) with
// the command's tool call, and kept in the command's Tree. The process
// waits meanwhile, at most sandbox.JudgeTimeout.
func (c *Cmd) judgeExec(ec *sandbox.ExecCall) bool {
	var detail strings.Builder
	fmt.Fprintf(&detail, "pid %d (parent %d) in the sandbox of %s; dir=%s", ec.Pid, ec.PPid, c.String(), ec.Dir)
	if len(ec.Interp) > 0 {
		detail.WriteString("; run by " + strings.Join(ec.Interp, " <- "))
	}
	if ec.InterpreterOf != "" {
		detail.WriteString("; the interpreter of " + ec.InterpreterOf)
	}
	if ec.Loader != "" {
		detail.WriteString("; mapped by the loader " + ec.Loader)
	}
	if ec.Changed {
		detail.WriteString("; killed at its exec: the kernel ran another program, argv or environment than this one")
	}
	if ec.Repeat {
		detail.WriteString("; a repeat of an allowed exec, let run by the sandbox")
	}
	ev := &audit.Event{Protocol: audit.Exec, Op: policy.OpExec, Target: argv0(ec.Argv), Argv: ec.Argv,
		Program: ec.Program, Resolved: ec.Program, Detail: detail.String()}
	scope := audit.From(c.ctx)
	var req audit.Request = childExecRequest{ec: ec}
	if pols := scope.Policies(); len(pols) > 0 {
		req = newChildExecRequest(ec, pols[0])
	}
	res := audit.Decide(c.ctx, ev, req)
	// Without OnCall, an allowed outcome is the policy's alone: the
	// sandbox may let this very call run again without asking, and
	// reports it (Repeat) to be recorded.
	ec.Cacheable = res.Outcome == audit.Allowed && !scope.AsksOnCall()
	c.tree.add(ProgramRun{Pid: ec.Pid, PPid: ec.PPid, Program: ec.Program, Argv: ec.Argv, Dir: ec.Dir,
		Interp: ec.Interp, Outcome: res.Outcome, Rule: res.Rule, Killed: ec.Changed})
	return res.Allowed
}

// childExecRequest decides a program started inside the sandbox as a
// Start decides a command (policy.ExecRequest with Started): the exec
// rules and option tables on its real path and argv; a shell or wrapper
// (sh -c, env, timeout...) unwrapped into what it runs, so that it needs
// no rule of its own when what it runs is allowed, and a literal denied
// command in its script is refused already; the loader variables and
// options the command's processes set. What a program starts in turn is
// judged when it starts, so nothing is refused for being unreadable. The
// working directory is not judged (see policy.ExecRequest.Started).
type childExecRequest struct {
	ec   *sandbox.ExecCall
	plan policy.ExecPlan
}

func newChildExecRequest(ec *sandbox.ExecCall, pol *policy.Policy) childExecRequest {
	r := &startedResolver{resolver: resolver{path: pol.ExecPath(), dir: ec.Dir}, first: ec.Program}
	req := childExecRequest{ec: ec, plan: policy.PlanExec(r, argv0(ec.Argv), ec.Argv)}
	for _, kv := range ec.Set {
		if name, _, _ := strings.Cut(kv, "="); policy.IsLoaderVar(name) {
			req.plan.Assigns = append(req.plan.Assigns, name)
		}
	}
	for _, o := range ec.LoaderOptions {
		req.plan.Assigns = append(req.plan.Assigns, loaderOptions[o])
	}
	return req
}

// startedResolver is the resolver of a command's plan with the program
// named first being the one the kernel is about to run (resolved by the
// supervisor in the caller's context), whatever the policy's PATH says.
type startedResolver struct {
	resolver
	first string
}

func (r *startedResolver) Program(name string) (string, error) {
	if r.first != "" {
		p := r.first
		r.first = ""
		return p, nil
	}
	return r.resolver.Program(name)
}

// ruleSandboxExec stands for the sandbox's own refusals of an exec.
var ruleSandboxExec = &policy.Rule{Kind: policy.KindExec, Source: "sandbox",
	Pattern: "programs run as judged",
	Hint:    "name the program the loader runs with a slash, and do not change a program's name, argv or environment while it starts"}

// ruleScriptInterpreter allows the program a script's "#!/usr/bin/env
// NAME" line names, run by env for a script that was allowed.
var ruleScriptInterpreter = &policy.Rule{Kind: policy.KindExec, Source: "sandbox",
	Pattern: "the \"#!/usr/bin/env NAME\" interpreter of an allowed script"}

// loaderOptions are the dynamic loader's options and the variables they
// stand for (ld.so(8)).
var loaderOptions = map[string]string{
	"--preload": "LD_PRELOAD", "--audit": "LD_AUDIT", "--library-path": "LD_LIBRARY_PATH",
	"--inhibit-rpath": "LD_LIBRARY_PATH", "--glibc-hwcaps-prepend": "LD_LIBRARY_PATH", "--glibc-hwcaps-mask": "LD_LIBRARY_PATH",
}

func (r childExecRequest) Decide(p *policy.Policy) policy.Decision {
	ec := r.ec
	switch {
	case ec.Changed:
		return policy.Deny(policy.TierHard, ruleSandboxExec, "the program, argv or environment changed after it was judged")
	case ec.Reason != "":
		return policy.Deny(policy.TierHard, ruleSandboxExec, ec.Reason)
	}
	req := policy.ExecRequest{Plan: r.plan, Started: true}
	d := req.Decide(p)
	if !d.Allowed && d.Tier == policy.TierSoft && ec.InterpreterOf != "" {
		// The script was allowed a moment ago, and this is its
		// interpreter, which runs it (deny rules on it still hold).
		return policy.Allow(ruleScriptInterpreter)
	}
	return d
}

func argv0(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	return argv[0]
}

// execJudgedPlanned reports whether a command started now under pol would
// run in a sandbox that judges every exec when it happens: the sandbox is
// on and works here, and so does exec judging (sandbox.ExecJudgeable). A
// sandbox that turns out unable to (Report.Exec false) is checked at
// Start, before the command runs.
func execJudgedPlanned(pol *policy.Policy) bool {
	if pol == nil || pol.Exec().NoSandbox || sandboxMissing.Load() != nil {
		return false
	}
	ok, _ := sandbox.ExecJudgeable()
	return ok
}
