package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ExecSpec holds the rules for starting processes. With no rules, every
// program is denied.
type ExecSpec struct {
	// Rules allow or deny programs, optionally narrowed to argument
	// prefixes. Strictest wins: any matching deny rule beats every allow.
	Rules []ExecRule
	// Path is the search path for bare program names, for the policy's
	// rules and for every guarded command: the host's PATH is never used.
	// Every entry must be absolute. Empty means DefaultExecPath.
	Path []string
	// Env names host variables a child may receive (exact names, or a
	// prefix ending in "*"). Naming an injection or secret-looking variable
	// exactly lets it through; a prefix pattern never does.
	Env []string
	// Home and TmpDir are HOME and TMPDIR for children; each must lie inside
	// a write root. Empty means the command's working directory.
	Home, TmpDir string
	// Timeout is the default hard timeout of every command (0: none).
	// MaxTimeout, when set, caps per-command overrides and the default.
	Timeout, MaxTimeout time.Duration
	// Limits are rlimits applied to each child right after it starts.
	Limits ExecLimits
	// DirInReadRoots lets a command's working directory lie in a read root,
	// not only in a write root.
	DirInReadRoots bool
	// RequireLandlock makes a missing or partial Landlock an error at Start
	// instead of a recorded downgrade.
	RequireLandlock bool
	// NoLandlock turns kernel confinement of children off (recorded).
	NoLandlock bool
	// DenyNetwork keeps children from opening TCP connections or binding
	// TCP ports (Landlock ABI 4+). On an older ABI it is a Start error with
	// RequireLandlock and a recorded downgrade otherwise.
	DenyNetwork bool
	// NoSandbox runs children without the namespace sandbox (user, mount,
	// pid, ipc and net namespaces, masks, the file-call supervisor): only
	// Landlock and the cgroup confine them, as before the sandbox existed.
	NoSandbox bool
	// RequireSandbox makes a start fail, spawning nothing, when the
	// sandbox cannot be built on this host (no user namespaces) instead of
	// falling back to Landlock and cgroups.
	RequireSandbox bool
	// HostNetwork keeps sandboxed children in the host's network
	// namespace. By default they get an empty one: only loopback, plus the
	// loopback TCP ports net rules allow, forwarded and decided again per
	// connection.
	HostNetwork bool
	// NoCgroup skips the per-command cgroup v2: starts are cheaper, but a
	// child that left its process group (setsid) survives the kill.
	NoCgroup bool
	// LandlockExecAny widens the child's Landlock domain back to "execute
	// anything readable". By default (false) a child may execute only the
	// programs with an allow rule shared by every policy of the scope, the
	// programs the decision approved for that very command (its program,
	// the inner programs of an unwrapped shell script or wrapper, so a
	// command rescued by OnCall, BeforeDeny or Warn still runs) and the ELF
	// and "#!" interpreters they need; write roots lose the execute right,
	// so a child cannot run a program an opaque script names or one it just
	// wrote. Tools that run helper programs (git's git-core commands,
	// compilers, make) need rules for those, or this switch.
	LandlockExecAny bool
	// OutputLimit caps each captured stream (Stdout, Stderr, Output) in
	// bytes; the rest is drained and dropped. 0 means DefaultOutputLimit;
	// negative means no cap.
	OutputLimit int64
	// NoBuiltinDeny turns off the built-in denials of the option tables
	// (options that run programs or read configuration that can, Source
	// "builtin"). They are on by default; explicit deny rules still apply.
	NoBuiltinDeny bool
	// SetEnv are variables ("NAME=VALUE") the policy sets for every
	// child, after the host variables it lets through and before Cmd.Env.
	// Toolchain profiles put their cache variables here.
	SetEnv []string
	// Use names toolchain profiles ("git", "go@1"; profile.go) whose
	// programs, helper directories and variables are added when the policy
	// is built.
	Use []ProfileUse
	// CacheDir is where profiles keep their caches (GOCACHE, pip's, npm's);
	// it should lie inside a write root. Empty: Home's .cache, else
	// TmpDir's cache.
	CacheDir string
}

// ExecLimits are per-child resource limits; zero fields are left alone.
type ExecLimits struct {
	CPUSeconds   uint64 // RLIMIT_CPU
	FileSize     uint64 // RLIMIT_FSIZE, bytes
	AddressSpace uint64 // RLIMIT_AS, bytes
	OpenFiles    uint64 // RLIMIT_NOFILE
	// Processes caps the processes and threads alive at once in the
	// command's whole tree (the cgroup pids controller); a fork past it
	// fails with EAGAIN. The sandbox uses 512 when it is 0; there is no
	// "unlimited" value: a host that wants none sets ExecSpec.NoCgroup.
	Processes uint64
	// MemoryBytes caps the memory of the command's whole tree (the cgroup
	// memory controller; swap too where the kernel accounts it); past it
	// the kernel reclaims, then kills a member. 0: no limit.
	MemoryBytes uint64
}

// DefaultExecPath is the search path when ExecSpec.Path is empty.
var DefaultExecPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// DefaultOutputLimit caps each captured output stream when the policy does
// not say otherwise.
const DefaultOutputLimit = 16 << 20

// ExecRule allows or denies one program, optionally only for argument
// lists that start with Args.
type ExecRule struct {
	// Program is an absolute path or a bare name looked up in the policy's
	// Path when the policy is built. The rule applies to the program's real
	// path (symbolic links resolved), whatever name a command uses.
	Program string
	// Args is a token prefix of the arguments after the program name; empty
	// matches any arguments. A token "*" matches any one argument.
	//
	// Allow rules match at the start of the arguments. Deny rules match the
	// token sequence anywhere in the arguments, and a deny token "--flag"
	// also matches "--flag=value", "-f" also matches "-fvalue": deny
	// "git -c" denies "git -C dir -c x=y status" too.
	Args []string
	// Deny makes this a deny rule (a hard denial).
	Deny bool
	// Env names variables the matched command may receive even though they
	// are injection or secret-looking ("GIT_SSH_COMMAND", "GH_TOKEN"):
	// exact names for those, or prefixes ending in "*" for other host
	// variables to inherit.
	Env []string
	// Match and NoMatch are example argument lists (after the program name)
	// this rule must and must not match; Build fails otherwise.
	Match, NoMatch [][]string
	// Source is the provenance ("code" when empty).
	Source string
	// Under, instead of Program, makes the rule apply to every program
	// whose real path lies under this directory (absolute; symbolic links
	// of the part that exists resolved; it need not exist yet): programs
	// built or written in a workspace, test binaries in TMPDIR, a tool's
	// helper directory. Under a write root such programs may be executed
	// by children only inside the sandbox (procguard decides per file
	// otherwise; docs/exec.md).
	Under string
}

// execRules is the validated, indexed form of an ExecSpec.
type execRules struct {
	spec     ExecSpec
	path     []string
	programs map[string]*programRules // by real path
	env      nameSet
	all      []*execRule
	// hasDeny: some deny rule could match a command an opaque script
	// hides (a user deny rule, or a denied option of an allowed tool).
	hasDeny bool
	// under are the rules for programs under a directory (ExecRule.Under).
	under []*execRule
	// profiles is what ExecSpec.Use expanded to.
	profiles []ProfileItem
}

type programRules struct {
	allow, deny []*execRule
	anyDeny     bool
	// applets holds the rules of a multicall binary (busybox, toybox,
	// coreutils) by applet name: allowing "ls" that is a link to busybox
	// must not allow "wget" through the same file.
	applets map[string]*programRules
}

type execRule struct {
	rule ExecRule
	prog string // real path; for an Under rule, the directory
	r    *Rule
	env  nameSet
}

var (
	ruleNoExecRule = &Rule{Kind: KindExec, Pattern: "programs need an exec rule", Source: "builtin",
		Hint: "add an exec rule (policy.ExecRule) for the program and its arguments, or rescue the call in BeforeDeny"}
	ruleExecInvalid = &Rule{Kind: KindInvalid, Pattern: "exec needs an absolute, resolved program", Source: "builtin",
		Hint: "use a bare name found in the policy's PATH or an absolute path; relative names and relative PATH entries are refused"}
	ruleExecNotFound = &Rule{Kind: KindExec, Pattern: "the program is not in the policy's PATH", Source: "builtin",
		Hint: "install it in a directory of the policy's exec Path, or name it by absolute path"}
)

func (x *execRules) build(spec ExecSpec, p *Policy) error {
	var errs []error
	spec, x.profiles, errs = expandSpec(spec)
	spec.Rules = append([]ExecRule(nil), spec.Rules...)
	spec.Path = append([]string(nil), spec.Path...)
	spec.Env = append([]string(nil), spec.Env...)
	x.spec = spec
	x.programs = map[string]*programRules{}
	fail := func(field, value, src string, err error) {
		errs = append(errs, &EntryError{Field: field, Value: value, Source: src, Err: err})
	}
	x.path = spec.Path
	if len(x.path) == 0 {
		x.path = DefaultExecPath
	}
	for _, d := range x.path {
		if !filepath.IsAbs(d) {
			fail("exec path", d, "code", errors.New("PATH entries must be absolute"))
		}
	}
	x.path = append([]string(nil), x.path...)
	x.env = newNameSet(spec.Env)
	if spec.Timeout < 0 || spec.MaxTimeout < 0 {
		fail("exec timeout", spec.Timeout.String(), "code", errors.New("negative timeout"))
	}
	if (spec.RequireLandlock || spec.DenyNetwork) && spec.NoLandlock {
		fail("exec landlock", "NoLandlock", "code", errors.New("contradicts RequireLandlock or DenyNetwork"))
	}
	for i, r := range spec.Rules {
		src := r.Source
		if src == "" {
			src = "code"
		}
		r.Source = src
		if r.Under != "" {
			if err := x.buildUnder(r, src); err != nil {
				fail("exec rule", r.Under, src, err)
			} else {
				p.rules = append(p.rules, x.under[len(x.under)-1].r)
			}
			continue
		}
		prog, err := x.programPath(r.Program)
		if err != nil {
			fail("exec rule", r.Program, src, err)
			continue
		}
		for _, a := range r.Args {
			if a == "" || strings.IndexByte(a, 0) >= 0 {
				fail("exec rule", r.Program, src, fmt.Errorf("rule %d: empty or NUL argument token", i))
			}
		}
		pat := r.Program
		if len(r.Args) > 0 {
			pat += " " + strings.Join(r.Args, " ")
		}
		if r.Deny {
			pat = "deny " + pat
		}
		hint := "add an allow rule for this argument prefix, or rescue the call in BeforeDeny"
		if r.Deny {
			hint = "drop the deny rule, or opt in with audit.WithRescueHard and rescue it in BeforeDeny"
		}
		er := &execRule{rule: r, prog: prog, env: newNameSet(r.Env),
			r: &Rule{Kind: KindExec, Pattern: pat, Source: src, Hint: hint}}
		tool := toolForName(filepath.Base(prog))
		if isMulticall(prog) {
			tool = toolForName(filepath.Base(r.Program))
		}
		matches := er.matches
		if r.Deny {
			matches = func(args []string) bool { return er.matchesDeny(tool, args) }
		}
		for _, ex := range r.Match {
			if !matches(ex) {
				fail("exec rule", pat, src, fmt.Errorf("example %q does not match", ex))
			}
		}
		for _, ex := range r.NoMatch {
			if matches(ex) {
				fail("exec rule", pat, src, fmt.Errorf("counter-example %q matches", ex))
			}
		}
		pr := x.programs[prog]
		if pr == nil {
			pr = &programRules{}
			x.programs[prog] = pr
		}
		if isMulticall(prog) {
			applet := filepath.Base(r.Program)
			if applet == filepath.Base(prog) {
				applet = "" // the binary by its own name: every applet
			}
			if pr.applets == nil {
				pr.applets = map[string]*programRules{}
			}
			ap := pr.applets[applet]
			if ap == nil {
				ap = &programRules{}
				pr.applets[applet] = ap
			}
			pr = ap
		}
		if r.Deny {
			pr.deny = append(pr.deny, er)
			pr.anyDeny = true
			x.hasDeny = true
		} else if tool != nil && len(tool.DeniedOptions()) > 0 && !spec.NoBuiltinDeny {
			x.hasDeny = true
			pr.allow = append(pr.allow, er)
		} else {
			pr.allow = append(pr.allow, er)
		}
		x.all = append(x.all, er)
		p.rules = append(p.rules, er.r)
	}
	for _, kv := range spec.SetEnv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, "\x00*") || strings.IndexByte(v, 0) >= 0 {
			fail("exec set env", kv, "code", errors.New(`want "NAME=VALUE"`))
		} else if k == "PATH" || k == "HOME" || k == "TMPDIR" {
			fail("exec set env", kv, "code", errors.New("PATH, HOME and TMPDIR come from the policy's Path, Home and TmpDir"))
		}
	}
	for _, pair := range []struct{ name, v string }{{"exec home", spec.Home}, {"exec tmpdir", spec.TmpDir}, {"exec cache dir", spec.CacheDir}} {
		if pair.v != "" && !filepath.IsAbs(pair.v) {
			fail(pair.name, pair.v, "code", errors.New("not an absolute path"))
		}
	}
	return errors.Join(errs...)
}

// programPath resolves a rule's program at build time.
func (x *execRules) programPath(name string) (string, error) {
	switch {
	case name == "":
		return "", errors.New("empty program")
	case strings.IndexByte(name, 0) >= 0:
		return "", errors.New("contains a NUL byte")
	case !filepath.IsAbs(name) && strings.ContainsRune(name, '/'):
		return "", errors.New("relative program names are refused; use a bare name or an absolute path")
	}
	if !filepath.IsAbs(name) {
		found, err := LookPath(name, x.path)
		if err != nil {
			return "", err
		}
		name = found
	}
	real, err := filepath.EvalSymlinks(name)
	if err != nil {
		return "", err
	}
	return real, nil
}

// ErrRelativeName is returned by LookPath for names like "./tool" or
// "bin/tool": guarded commands name programs by bare name or absolute path.
var ErrRelativeName = errors.New("relative program names are refused")

// ErrProgramNotFound is returned by LookPath when no PATH entry holds an
// executable of that name.
var ErrProgramNotFound = errors.New("executable file not found in the policy's PATH")

// LookPath finds name in path (absolute entries only; relative ones are
// skipped, never searched) and returns the absolute, unresolved file. An
// absolute name is returned as is when it is an executable file.
func LookPath(name string, path []string) (string, error) {
	if filepath.IsAbs(name) {
		if err := isExecutable(name); err != nil {
			return "", err
		}
		return filepath.Clean(name), nil
	}
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return "", ErrRelativeName
	}
	for _, d := range path {
		if !filepath.IsAbs(d) {
			continue
		}
		f := filepath.Join(d, name)
		if isExecutable(f) == nil {
			return f, nil
		}
	}
	return "", ErrProgramNotFound
}

func isExecutable(f string) error {
	fi, err := os.Stat(f)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s: %w", f, errors.New("not an executable file"))
	}
	return nil
}

// matchesDeny is matches for a deny rule, reading the arguments as the
// tool does when it has a table: a deny token that is an option matches it
// in every spelling (prefix, "=value", cluster, old-style tar, a sibling
// spelling such as "-u" for "--upload-pack"). Without a table, "--flag"
// also matches any prefix "--fl" and "-f" any cluster holding f.
func (r *execRule) matchesDeny(t *Tool, args []string) bool {
	if r.matches(args) {
		return true
	}
	pre := r.rule.Args
	if len(pre) != 1 || len(pre[0]) < 2 || pre[0][0] != '-' {
		return false
	}
	if t != nil {
		return denyMatchesOption(t, args, pre[0])
	}
	for _, a := range args {
		if a == "--" {
			return false
		}
		if looseOption(pre[0], a) {
			return true
		}
	}
	return false
}

// matches reports whether the rule matches args (the arguments after the
// program name).
func (r *execRule) matches(args []string) bool {
	pre := r.rule.Args
	if len(pre) == 0 {
		return true
	}
	if !r.rule.Deny {
		return len(args) >= len(pre) && tokensMatch(pre, args[:len(pre)], false)
	}
	for i := 0; i+len(pre) <= len(args); i++ {
		if tokensMatch(pre, args[i:i+len(pre)], true) {
			return true
		}
	}
	return false
}

func tokensMatch(pat, args []string, loose bool) bool {
	for i, p := range pat {
		a := args[i]
		if p == "*" || p == a {
			continue
		}
		if loose && len(p) > 1 && p[0] == '-' && strings.HasPrefix(a, p) {
			if strings.HasPrefix(p, "--") {
				if a[len(p)] == '=' {
					continue
				}
			} else if len(p) == 2 {
				continue
			}
		}
		return false
	}
	return true
}

// CheckExec decides whether the program (its real, absolute path) may run
// with argv (argv[0] is the name as given and is not matched). It judges
// this one command only: shells and wrappers are unwrapped by PlanExec and
// judged command by command by ExecRequest. CheckExec makes no system call
// and does not allocate.
func (p *Policy) CheckExec(program string, argv []string) Decision {
	return p.checkExec(program, argv, false)
}

// checkExec is CheckExec; judged leaves out the built-in denials of
// options whose only risk is a program they start (startedByExec), for a
// command whose every exec is judged when it happens.
func (p *Policy) checkExec(program string, argv []string, judged bool) Decision {
	if p == nil {
		return denyNoPolicy
	}
	if len(program) == 0 || program[0] != '/' {
		return Deny(TierInvalid, ruleExecInvalid, "program not resolved to an absolute path")
	}
	var args []string
	if len(argv) > 1 {
		args = argv[1:]
	}
	name := filepath.Base(program)
	pr := p.exec.programs[program]
	if isMulticall(program) {
		var applet string
		applet, args = multicallApplet(name, argv)
		name = applet
		if pr != nil {
			all := pr.applets[""]
			pr = pr.applets[applet]
			if pr == nil {
				pr = all
			}
		}
	}
	tool := toolForName(name)
	if pr != nil {
		for _, r := range pr.deny {
			if r.matchesDeny(tool, args) {
				return Deny(TierHard, r.r, "")
			}
		}
	}
	for _, r := range p.exec.under {
		if r.rule.Deny && underDir(program, r.prog) && r.matchesDeny(tool, args) {
			return Deny(TierHard, r.r, "")
		}
	}
	var allow *execRule
	if pr != nil {
		for _, r := range pr.allow {
			if r.matches(args) {
				allow = r
				break
			}
		}
	}
	if allow == nil {
		for _, r := range p.exec.under {
			if !r.rule.Deny && underDir(program, r.prog) && r.matches(args) {
				allow = r
				break
			}
		}
	}
	if tool != nil && !p.exec.spec.NoBuiltinDeny {
		if r := builtinDeny(tool, args, allow, judged); r != nil {
			return Deny(TierHard, r, "")
		}
	}
	switch {
	case allow != nil:
		return Allow(allow.r)
	case pr == nil:
		return Deny(TierSoft, ruleNoExecRule, "")
	}
	return Deny(TierSoft, ruleNoExecRule, "no rule for the program allows these arguments")
}

// multicallNames are binaries that pick the program they act as from
// argv[0] or their first argument.
var multicallNames = map[string]bool{"busybox": true, "toybox": true, "coreutils": true}

func isMulticall(program string) bool { return multicallNames[filepath.Base(program)] }

// multicallApplet returns the applet a multicall binary runs and the
// arguments the applet reads: argv[0]'s base name ("ls" linked to
// busybox), or the first argument when the binary is called by its own
// name ("busybox wget URL", "coreutils --coreutils-prog=ls").
func multicallApplet(self string, argv []string) (string, []string) {
	if len(argv) == 0 {
		return "", nil
	}
	a0 := filepath.Base(argv[0])
	if a0 != self && a0 != "busybox" && a0 != "toybox" && a0 != "coreutils" {
		return a0, argv[1:]
	}
	if len(argv) < 2 {
		return "", nil
	}
	if v, ok := strings.CutPrefix(argv[1], "--coreutils-prog="); ok {
		return v, argv[2:]
	}
	return filepath.Base(argv[1]), argv[2:]
}

// toolForName returns the option table for a program name, nil when there
// is none. The tables are loaded on first use.
func toolForName(name string) *Tool {
	loadTools()
	return toolsByName[name]
}

// ExecPrograms returns the real paths of the programs some allow rule
// names, sorted.
func (p *Policy) ExecPrograms() []string {
	if p == nil {
		return nil
	}
	var out []string
	for prog, pr := range p.exec.programs {
		if len(pr.allow) > 0 {
			out = append(out, prog)
		}
	}
	sort.Strings(out)
	return out
}

// ExecDirs returns the directories of the allow rules for every program
// under a directory (ExecRule.Under, symbolic links resolved), sorted.
func (p *Policy) ExecDirs() []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, r := range p.exec.under {
		if !r.rule.Deny {
			out = appendUnique(out, r.prog)
		}
	}
	sort.Strings(out)
	return out
}

// ProfileItems returns what the toolchain profiles of ExecSpec.Use
// expanded to, with provenance, in the order they were added.
func (p *Policy) ProfileItems() []ProfileItem {
	if p == nil {
		return nil
	}
	return append([]ProfileItem(nil), p.exec.profiles...)
}

// underDir reports whether path lies strictly under dir.
func underDir(path, dir string) bool {
	if dir == "/" {
		return len(path) > 1 && path[0] == '/'
	}
	return len(path) > len(dir) && path[len(dir)] == '/' && path[:len(dir)] == dir
}

// ExecPath returns the policy's search path for programs.
func (p *Policy) ExecPath() []string {
	if p == nil {
		return nil
	}
	return append([]string(nil), p.exec.path...)
}

// Exec returns the exec settings the policy was built with (rules as given).
func (p *Policy) Exec() ExecSpec {
	if p == nil {
		return ExecSpec{}
	}
	return p.exec.spec
}

// envNamed reports whether the policy's Env or one of the rules that
// allowed the command names variable name. exact limits it to exact names:
// prefix patterns ("MY_*") never let an injection or secret-looking
// variable through.
func (p *Policy) envNamed(name string, rules []*Rule, exact bool) bool {
	if p.exec.env.match(name, exact) {
		return true
	}
	for _, er := range p.exec.all {
		for _, r := range rules {
			if er.r == r && er.env.match(name, exact) {
				return true
			}
		}
	}
	return false
}

// envPasses reports whether variable name may reach a child: injection and
// secret-looking names only when named exactly.
func (p *Policy) envPasses(name string, rules []*Rule) bool {
	if IsInjectionVar(name) || IsSecretVar(name) {
		return p.envNamed(name, rules, true)
	}
	return true
}

// nameSet matches variable names exactly or by a prefix ending in "*".
type nameSet struct {
	exact    map[string]bool
	prefixes []string
}

func newNameSet(names []string) nameSet {
	s := nameSet{exact: map[string]bool{}}
	for _, n := range names {
		if strings.HasSuffix(n, "*") {
			s.prefixes = append(s.prefixes, strings.TrimSuffix(n, "*"))
		} else if n != "" {
			s.exact[n] = true
		}
	}
	return s
}

func (s nameSet) match(name string, exact bool) bool {
	if s.exact[name] {
		return true
	}
	if exact {
		return false
	}
	for _, p := range s.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
