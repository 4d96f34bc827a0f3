package policy

import "strings"

// Protected names a tool writes from its own defaults. The built-in
// protected list keeps `.git/config` from being created or changed inside
// write roots, because git runs what a repository's configuration names on
// the next git command. `git init` must create that file, and writes it
// only from git's defaults when nothing else can reach it: with the git
// profile, a command that is exactly `git init` with options that choose
// no template or configuration (-q, --bare, -b/--initial-branch,
// --object-format, --shared, one directory), run directly (no shell,
// wrapper, redirection or assignment), may create a new repository's
// `.git/config`, with variables forced so that no template or user
// configuration feeds it. `.git/hooks` stays protected (the empty
// template creates none).

// ToolCreation says which protected entries one command may create, and
// the variables forced so that the tool writes them from its defaults.
type ToolCreation struct {
	// Protected are the protected entries the command may create
	// (".git/config").
	Protected []string
	// Env are variables set for the command, beating every other source.
	Env []string
	// Why is the reason, for records and confinement reports.
	Why string
}

var gitInitCreation = &ToolCreation{
	Protected: []string{".git/config"},
	Env:       []string{"GIT_TEMPLATE_DIR=", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
	Why:       "git init writes a new repository's .git/config from its defaults (git profile; no template, no user or system configuration)",
}

// ToolCreation returns what the planned command may create among the
// protected names, nil when nothing. Only a policy that uses the git
// profile lets `git init` create `.git/config`.
func (p *Policy) ToolCreation(pl *ExecPlan) *ToolCreation {
	if p == nil {
		return nil
	}
	if len(pl.Commands) != 1 || len(pl.Wrappers) != 0 || pl.Opaque != "" || len(pl.Redirects) != 0 ||
		len(pl.Assigns) != 0 || pl.OpaqueRedirect {
		return nil
	}
	c := &pl.Commands[0]
	if c.Program == "" || !p.profileProgram("git@", c.Program) {
		return nil
	}
	if !plainGitInit(c.Argv) {
		return nil
	}
	return gitInitCreation
}

// profileProgram reports whether program (a real path) is a program rule
// of a profile whose ID starts with prefix.
func (p *Policy) profileProgram(prefix, program string) bool {
	for _, r := range p.exec.all {
		if r.prog == program && r.rule.Under == "" && !r.rule.Deny && strings.Contains(r.rule.Source, "profile "+prefix) {
			return true
		}
	}
	return false
}

// plainGitInit reports whether argv is `git init` with only options that
// choose no template and no configuration (git-init(1), git 2.39).
func plainGitInit(argv []string) bool {
	if len(argv) < 2 || argv[1] != "init" {
		return false
	}
	operands := 0
	for i := 2; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-q" || a == "--quiet" || a == "--bare" || a == "--shared" || strings.HasPrefix(a, "--shared="):
		case a == "-b" || a == "--initial-branch" || a == "--object-format":
			i++
			if i >= len(argv) {
				return false
			}
		case strings.HasPrefix(a, "--initial-branch=") || strings.HasPrefix(a, "--object-format=") ||
			(strings.HasPrefix(a, "-b") && len(a) > 2):
		case a == "--":
		case a != "" && a[0] != '-':
			operands++
		default:
			return false
		}
	}
	return operands <= 1
}
