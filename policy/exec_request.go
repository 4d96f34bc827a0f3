package policy

import "errors"

// ExecRequest asks whether a planned command may start; it satisfies
// audit.Request. Everything in it was resolved beforehand (PlanExec, Resolve),
// so Decide makes no system call.
type ExecRequest struct {
	Plan ExecPlan
	// Dir is the child's resolved working directory.
	Dir string
	// Cwd is the host's resolved working directory (the "." root).
	Cwd string
	// Invalid, when set, says why the facade found the call malformed
	// (a relative PATH entry in the command's Env...): denied, never rescued.
	Invalid string
	// ExecJudged says every program the command starts is judged when it
	// starts (a sandbox traps exec, see Started): what the plan cannot
	// read ahead (an opaque script, a computed redirection target, the
	// arguments xargs and find -exec add) is left to that judgement
	// instead of refused, and options whose only risk is a program they
	// start are not refused. What the plan can read is still judged now.
	ExecJudged bool
	// Started says the request is a program a process inside a sandboxed
	// command started, judged at its exec (ExecJudged holds too): its
	// working directory is not judged (what it writes is judged call by
	// call, and toolchains run helpers in directories outside the write
	// roots: go build compiles the standard library in GOROOT), Dir and
	// Cwd may be empty, and Assigns are the loader variables and options
	// the command's processes set (IsLoaderVar).
	Started bool
}

var (
	ruleEnvInjection = &Rule{Kind: KindExec, Pattern: "no loader, interpreter or secret variables through wrappers", Source: "builtin",
		Hint: "name the variable in ExecSpec.Env or in the command's ExecRule.Env"}
	ruleExecDir = &Rule{Kind: KindExec, Pattern: "commands run inside a write root", Source: "builtin",
		Hint: "set Cmd.Dir to a directory inside a write root (or a read root with ExecSpec.DirInReadRoots)"}
	ruleOpaque = &Rule{Kind: KindExec, Pattern: "scripts that cannot be read whole are refused where deny rules apply", Source: "builtin",
		Hint: "write the script with literal commands and arguments (no variables, substitutions, eval or control flow), or run the programs directly"}
	ruleOpaqueRedirect = &Rule{Kind: KindExec, Pattern: "computed redirection targets could name a protected file", Source: "builtin",
		Hint: "redirect to a literal path inside a write root"}
	ruleBuiltins = &Rule{Kind: KindExec, Pattern: "shell builtins run no program", Source: "builtin",
		Hint: "the script runs only builtins such as :, true, exit, echo, printf, test"}
	ruleOpenArgs = &Rule{Kind: KindExec, Pattern: "arguments from input cannot pass deny rules", Source: "builtin",
		Hint: "xargs and find -exec {} append arguments the policy cannot see; the program has deny rules, so run it directly"}
)

// Decide implements audit.Request: the strictest decision over every
// command, wrapper, variable, redirection and the working directory.
func (r *ExecRequest) Decide(p *Policy) Decision {
	if r.Invalid != "" {
		return Deny(TierInvalid, ruleExecInvalid, r.Invalid)
	}
	judged := r.ExecJudged || r.Started
	if len(r.Plan.Commands) == 0 && !r.Plan.Builtins {
		return Deny(TierInvalid, ruleExecInvalid, "nothing to run")
	}
	var out Decision
	have := false
	worse := func(d Decision, where string) {
		if !have || (!d.Allowed && (out.Allowed || d.Tier > out.Tier)) {
			if !d.Allowed && d.Detail == "" {
				d.Detail = where
			}
			out, have = d, true
		}
	}
	inner := ""
	if len(r.Plan.Commands) > 1 || len(r.Plan.Wrappers) > 0 {
		inner = "in a command the call would run"
	}
	for i := range r.Plan.Commands {
		c := &r.Plan.Commands[i]
		d := p.checkCommand(c, judged)
		if !d.Allowed && inner != "" {
			d.Command = c
		}
		worse(d, inner)
	}
	if len(r.Plan.Commands) == 0 {
		worse(Allow(ruleBuiltins), "")
	}
	for i := range r.Plan.Wrappers {
		c := &r.Plan.Wrappers[i]
		if d := p.checkExec(c.Program, c.Argv, judged); !d.Allowed && d.Tier >= TierHard {
			d.Command = c
			worse(d, "in a shell or wrapper the call runs through")
		}
	}
	if r.Plan.Opaque != "" && p.exec.hasDeny && !judged {
		// Like xargs: what cannot be read cannot be held to deny rules.
		worse(Deny(TierHard, ruleOpaque, r.Plan.Opaque), "")
	}
	if r.Plan.OpaqueRedirect && !judged {
		// Where exec is judged a sandbox holds the files too: the
		// supervisor judges the redirection's open when the shell makes it.
		worse(Deny(TierHard, ruleOpaqueRedirect, r.Plan.Opaque), "")
	}
	for _, name := range r.Plan.Assigns {
		switch {
		case r.Started && !p.envNamed(name, nil, true):
			worse(Deny(TierHard, ruleEnvInjection, "a process of the command set the loader variable "+name), "")
		case !r.Started && !p.envPasses(name, nil):
			worse(Deny(TierHard, ruleEnvInjection, "a wrapper sets a loader, interpreter or secret variable"), "")
		}
	}
	for i := range r.Plan.Redirects {
		rd := &r.Plan.Redirects[i]
		if isStdDevice(rd.Path) {
			continue
		}
		op, where := OpRead, "a redirection source"
		if rd.Write {
			op, where = OpWrite, "a redirection target"
		}
		d := p.CheckPath(op, rd.Path, r.Cwd)
		if !d.Allowed && d.Tier == TierSoft {
			// Outside the roots: the script is judged as the shell itself.
			d = p.CheckExec(rd.Shell.Program, rd.Shell.Argv)
			where = "a redirection outside the roots: judged as the shell"
		}
		if !d.Allowed && d.Detail != "" {
			// The path's own detail (git metadata) says why, after where.
			where, d.Detail = where+": "+d.Detail, ""
		}
		worse(d, where)
	}
	if !r.Started {
		worse(p.CheckExecDir(r.Dir, r.Cwd), "the working directory")
	}
	if out.Allowed {
		// Report the rule that allowed the first command, not the directory.
		if len(r.Plan.Commands) == 0 {
			return Allow(ruleBuiltins)
		}
		return p.checkCommand(&r.Plan.Commands[0], judged)
	}
	return out
}

func (p *Policy) checkCommand(c *ExecCommand, judged bool) Decision {
	if c.Program == "" {
		if errors.Is(c.Err, ErrRelativeName) {
			return Deny(TierInvalid, ruleExecInvalid, "relative program name")
		}
		return Deny(TierSoft, ruleExecNotFound, "")
	}
	d := p.checkExec(c.Program, c.Argv, judged)
	if d.Allowed && c.OpenArgs && !judged {
		if pr := p.exec.programs[c.Program]; pr != nil && pr.anyDeny {
			return Deny(TierHard, ruleOpenArgs, "")
		}
	}
	return d
}

func isStdDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/zero":
		return true
	}
	return false
}

// CheckExecDir decides whether a command may run in dir (resolved): inside
// a write root, or a read root when ExecSpec.DirInReadRoots is set. cwd is
// the host's working directory, the "." root.
func (p *Policy) CheckExecDir(dir, cwd string) Decision {
	if p == nil {
		return denyNoPolicy
	}
	if len(dir) == 0 || dir[0] != '/' {
		return Deny(TierInvalid, ruleNotResolved, "working directory not resolved")
	}
	d := p.CheckPath(OpChdir, dir, cwd)
	if d.Allowed || d.Tier != TierSoft {
		return d
	}
	if p.exec.spec.DirInReadRoots && p.hasReadRoots {
		var m match
		p.ix.walk(dir, &m)
		if m.read != nil {
			return Allow(m.read)
		}
	}
	return Deny(TierSoft, ruleExecDir, "")
}
