package procguard

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// Decision is what Check says about a command without running it.
type Decision struct {
	// Result is the pipeline's answer: Allowed (Start would go ahead),
	// Outcome, By, the deciding rule, and Err, the error Start would
	// return for it (an *exec.Error wrapping the *audit.DenyError, or
	// exec.ErrNotFound's).
	audit.Result
	// Program is the real path of the program named; Dir the resolved
	// working directory.
	Program, Dir string
	// Plan is what the command would really run.
	Plan policy.ExecPlan
	// ExecJudged says the command would run where every program it
	// starts is judged when it starts (Confinement.ExecJudged), so the
	// decision refused only what the plan could read: an opaque script
	// is judged as the shell itself, and what it runs at its exec.
	ExecJudged bool
}

// Check is a dry run of CommandContext(ctx, name, args...).Start: see
// Cmd.Check. The working directory is the host's; use CheckIn, or
// Cmd.Check with Dir set, to judge another directory.
func Check(ctx context.Context, name string, args ...string) Decision {
	return CommandContext(ctx, name, args...).Check()
}

// CheckIn is Check for a command that would run in dir.
func CheckIn(ctx context.Context, dir, name string, args ...string) Decision {
	c := CommandContext(ctx, name, args...)
	c.Dir = dir
	return c.Check()
}

// Check is a dry run of Start: it takes Start's route (LookPath,
// EvalSymlinks, the working directory, the plan of what really runs, the
// same request) and stops before the spawn. The scope is checked, every
// policy is asked, OnCall and BeforeDeny are asked with Event.DryRun set,
// and the exec mode applies; nothing is spawned, recorded or logged.
func (c *Cmd) Check() Decision {
	if err := c.usable(); err != nil {
		return Decision{Result: audit.Result{Outcome: audit.Denied, Err: err}}
	}
	pr := c.prepareFor(true)
	d := Decision{Result: pr.res, Program: pr.program, Dir: pr.req.Dir, Plan: pr.req.Plan, ExecJudged: pr.req.ExecJudged}
	if pr.missing {
		d.Err = &exec.Error{Name: c.Args[0], Err: errNotFound}
		d.Allowed = false
	}
	return d
}

// prepared is everything gathered and decided before a spawn.
type prepared struct {
	pol     *policy.Policy
	pols    []*policy.Policy
	path    string // LookPath result
	program string // real path
	req     policy.ExecRequest
	ev      *audit.Event
	err     error        // what Start returns for the decision
	res     audit.Result // the pipeline's answer
	cwd     string
	// missing: the program named is not in the policy's PATH (or the
	// absolute path does not exist): Start reports exec.ErrNotFound.
	missing bool
}

// resolver implements policy.ExecResolver with the policy's PATH and the
// command's working directory.
type resolver struct {
	path  []string
	dir   string
	cache map[string]resolved
}

type resolved struct {
	found, real string
	err         error
}

// lookup finds name in the policy's PATH and resolves its symbolic links,
// once per name and prepare.
func (r *resolver) lookup(name string) resolved {
	if v, ok := r.cache[name]; ok {
		return v
	}
	var v resolved
	if name != "" && !filepath.IsAbs(name) && strings.ContainsRune(name, '/') {
		// "./bin/hello", "bin/x": the shell (and exec.Cmd) run it from the
		// command's working directory. Only a name that resolves to no
		// executable stays a relative name (invalid input).
		f := filepath.Join(r.dir, name)
		if fi, err := os.Stat(f); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			v.found = f
			v.real, v.err = filepath.EvalSymlinks(f)
		} else {
			v.err = policy.ErrRelativeName
		}
		if r.cache == nil {
			r.cache = map[string]resolved{}
		}
		r.cache[name] = v
		return v
	}
	v.found, v.err = policy.LookPath(name, r.path)
	if v.err == nil {
		v.real, v.err = filepath.EvalSymlinks(v.found)
	}
	if r.cache == nil {
		r.cache = map[string]resolved{}
	}
	r.cache[name] = v
	return v
}

func (r *resolver) Program(name string) (string, error) {
	v := r.lookup(name)
	return v.real, v.err
}

// ProgramIn looks name up in a PATH a wrapper sets (env PATH=/dir cmd,
// env -i cmd): the program that will really run.
func (r *resolver) ProgramIn(name string, path []string) (string, error) {
	found, err := policy.LookPath(name, path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(found)
}

func (r *resolver) Path(name string) (string, error) {
	if name == "/dev/null" || name == "/dev/stdout" || name == "/dev/stderr" || name == "/dev/zero" {
		return name, nil
	}
	return policy.Resolve(policy.OSFS{}, name, r.dir, true)
}

// prepare gathers the facts (LookPath, EvalSymlinks, directory, plan) and
// runs audit.Check. It spawns nothing.
func (c *Cmd) prepare() *prepared { return c.prepareFor(false) }

// prepareFor is prepare; dry makes the pipeline run a dry run (Check).
func (c *Cmd) prepareFor(dry bool) *prepared {
	pr := &prepared{}
	scope := audit.From(c.ctx)
	ev := &audit.Event{Protocol: audit.Exec, Op: policy.OpExec, Target: c.Args[0], Argv: c.Args}
	pr.ev = ev
	if err := scope.Err(); err != nil {
		pr.decide(c, dry)
		return pr
	}
	pr.pols = scope.Policies()
	pr.pol = pr.pols[0]
	name := c.Args[0]
	if c.Path != "" && c.Path != name {
		name = c.Path // the caller changed Path, as exec.Cmd allows
	}

	var invalid []string
	for _, kv := range c.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, e := range filepath.SplitList(v) {
				if !filepath.IsAbs(e) {
					invalid = append(invalid, "relative PATH entry "+quoteArg(e)+" in Env")
					break
				}
			}
		}
	}
	cwd, err := os.Getwd()
	if err == nil {
		cwd, err = policy.Resolve(policy.OSFS{}, cwd, "/", true)
	}
	if err != nil {
		cwd = "" // no "." root; only an absolute Dir can be judged
	}
	pr.cwd = cwd
	dir := c.Dir
	if dir == "" {
		dir = cwd
	}
	if dir == "" || (!filepath.IsAbs(dir) && cwd == "") {
		invalid = append(invalid, "the host working directory cannot be resolved; set an absolute Dir")
		dir = "/"
	}
	if rd, err := policy.Resolve(policy.OSFS{}, dir, cwd, true); err != nil {
		invalid = append(invalid, "working directory cannot be resolved: "+err.Error())
	} else {
		dir = rd
	}
	r := &resolver{path: pr.pol.ExecPath(), dir: dir}
	if v := r.lookup(name); v.err == nil {
		pr.path, pr.program = v.found, v.real
	} else if errors.Is(v.err, policy.ErrProgramNotFound) || errors.Is(v.err, os.ErrNotExist) {
		pr.missing = true
	}
	pr.req = policy.ExecRequest{Plan: policy.PlanExec(r, name, c.Args), Dir: dir, Cwd: cwd, Invalid: strings.Join(invalid, "; "),
		ExecJudged: execJudgedPlanned(pr.pol)}
	ev.Program = pr.program
	ev.Resolved = pr.program
	ev.Detail = "dir=" + dir
	if runs := planSummary(&pr.req.Plan); runs != "" {
		ev.Detail += "; runs: " + runs
	}
	if pr.req.Plan.Opaque != "" {
		ev.Detail += "; judged as itself: " + pr.req.Plan.Opaque
	}
	text, child := c.plannedConfinement(pr)
	ev.Detail += "; " + text
	ev.Child = child
	pr.decide(c, dry)
	return pr
}

// decide runs the pipeline (a dry run when dry) and gives a denial the
// shape of os/exec's errors: an *exec.Error naming the command, with the
// *audit.DenyError inside.
func (pr *prepared) decide(c *Cmd, dry bool) {
	pr.ev.DryRun = dry
	pr.res = audit.Decide(c.ctx, pr.ev, &pr.req)
	if pr.res.Err != nil {
		pr.res.Err = &exec.Error{Name: c.Args[0], Err: pr.res.Err}
	}
	pr.err = pr.res.Err
}

func quoteArg(s string) string { return `"` + s + `"` }

// planSummary lists what an unwrapped call runs ("[git status] [rm -rf x]"),
// or "" when it runs just the command named.
func planSummary(pl *policy.ExecPlan) string {
	if len(pl.Wrappers) == 0 && len(pl.Commands) <= 1 {
		return ""
	}
	parts := make([]string, 0, len(pl.Commands))
	for _, c := range pl.Commands {
		parts = append(parts, "["+strings.Join(c.Argv, " ")+"]")
	}
	return strings.Join(parts, " ")
}
