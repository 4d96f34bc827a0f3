package policy

import (
	"slices"
	"strings"
)

// Protected names a tool writes from its own defaults. The git metadata
// model (gitmeta.go) keeps a repository's configuration and its redirect
// files from being created or changed by children, because git runs what
// a repository's configuration names, and reads configuration and hooks
// from where a redirect file points, on the next git command. Three git
// commands must write them, and write them only from git's defaults when
// nothing else can reach them: with the git profile, a command run
// directly (no shell, wrapper, redirection or assignment) that is exactly
//
//   - `git init` with options that choose no template or configuration
//     (-q, --bare, -b/--initial-branch, --object-format, --shared, one
//     directory) may write configuration (GitConfigEntry);
//   - `git clone` of one repository into at most one directory, with
//     options that choose no template, configuration, other object store
//     or submodules (plainGitClone), may write configuration;
//   - `git worktree add|move|remove|prune|repair|lock|unlock` with its
//     plain options may write and remove redirect files (GitRedirectEntry:
//     the new worktree's .git pointer file, worktrees/<name>/commondir and
//     gitdir), which it fills with paths it computes itself;
//   - `git submodule update` of submodules already configured, with
//     options that initialise, register or re-point none (plainGitSubmoduleUpdate),
//     may write configuration: it sets core.worktree in each submodule's
//     .git/modules/<name>/config to the path it computes (git 2.39,
//     connect_work_tree_and_git_dir);
//
// init and clone run with variables forced so that no template (no sample
// hooks: an empty GIT_TEMPLATE_DIR makes git copy none) and no user or
// system configuration feeds them. Hooks stay protected for all three.

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

// gitDefaultsEnv makes git write a repository from its defaults: no
// template directory, no system or user configuration.
var gitDefaultsEnv = []string{"GIT_TEMPLATE_DIR=", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}

var (
	gitInitCreation = &ToolCreation{
		Protected: []string{GitConfigEntry},
		Env:       gitDefaultsEnv,
		Why:       "git init writes a new repository's .git/config from its defaults (git profile; no template, no user or system configuration)",
	}
	gitCloneCreation = &ToolCreation{
		Protected: []string{GitConfigEntry},
		Env:       gitDefaultsEnv,
		Why:       "git clone writes the new repository's .git/config from its defaults and the URL it was given (git profile; no template, no user or system configuration)",
	}
	gitSubmoduleCreation = &ToolCreation{
		Protected: []string{GitConfigEntry},
		Env:       gitDefaultsEnv, // a configured submodule not cloned yet is cloned: with no template hooks
		Why:       "git submodule update sets core.worktree in each submodule's configuration to the path it computes (git profile; submodules already configured)",
	}
	gitWorktreeCreation = &ToolCreation{
		Protected: []string{GitRedirectEntry},
		Why:       "git worktree writes a worktree's .git pointer file and its commondir and gitdir from the paths it computes (git profile)",
	}
)

// ToolCreation returns what the planned command may create among the
// protected names, nil when nothing. Only a policy that uses the git
// profile has tool creations: `git init` and `git clone` write
// configuration, `git worktree` writes its redirect files.
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
	switch {
	case plainGitInit(c.Argv):
		return gitInitCreation
	case plainGitClone(c.Argv):
		return gitCloneCreation
	case plainGitWorktree(c.Argv):
		return gitWorktreeCreation
	case plainGitSubmoduleUpdate(c.Argv):
		return gitSubmoduleCreation
	}
	return nil
}

// plainGitSubmoduleUpdate reports whether argv is `git submodule update`
// of submodules already configured: only -q/--quiet, --checkout,
// --no-fetch/-N, --force/-f, --recursive, --jobs/-j N and paths
// (git-submodule(1), git 2.39). --init and --remote (which write or
// follow configuration), --merge, --rebase, --reference, --depth and the
// rest are not plain.
func plainGitSubmoduleUpdate(argv []string) bool {
	i := 2
	if len(argv) < 3 || argv[1] != "submodule" {
		return false
	}
	for i < len(argv) && (argv[i] == "-q" || argv[i] == "--quiet") {
		i++
	}
	if i >= len(argv) || argv[i] != "update" {
		return false
	}
	for i++; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "-q" || a == "--quiet" || a == "--checkout" || a == "--no-fetch" || a == "-N" ||
			a == "--force" || a == "-f" || a == "--recursive" || a == "--":
		case a == "--jobs" || a == "-j":
			i++
			if i >= len(argv) {
				return false
			}
		case strings.HasPrefix(a, "--jobs=") || strings.HasPrefix(a, "-j") && len(a) > 2:
		case a != "" && a[0] != '-':
		default:
			return false
		}
	}
	return true
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

// plainGitClone reports whether argv is `git clone` of one repository into
// at most one directory with only options that choose no template,
// configuration, other object store, separate git directory or
// submodules (git-clone(1), git 2.39): --template, -c/--config,
// --reference, --shared, --separate-git-dir, --recurse-submodules,
// --upload-pack and the rest are not plain.
func plainGitClone(argv []string) bool {
	if len(argv) < 3 || argv[1] != "clone" {
		return false
	}
	withValue := []string{"-b", "--branch", "--depth", "--shallow-since", "--shallow-exclude", "-o", "--origin", "--filter", "-j", "--jobs"}
	operands := 0
	for i := 2; i < len(argv); i++ {
		a := argv[i]
		name, _, hasValue := strings.Cut(a, "=")
		switch {
		case a == "-q" || a == "--quiet" || a == "-v" || a == "--verbose" || a == "--progress" ||
			a == "-n" || a == "--no-checkout" || a == "--bare" || a == "--mirror" || a == "-l" || a == "--local" ||
			a == "--no-local" || a == "--no-hardlinks" || a == "--single-branch" || a == "--no-single-branch" ||
			a == "--no-tags" || a == "--sparse" || a == "--reject-shallow" || a == "--no-reject-shallow":
		case slices.Contains(withValue, a):
			i++
			if i >= len(argv) {
				return false
			}
		case hasValue && strings.HasPrefix(a, "--") && slices.Contains(withValue, name):
		case len(a) > 2 && (strings.HasPrefix(a, "-b") || strings.HasPrefix(a, "-o") || strings.HasPrefix(a, "-j")) && a[1] != '-':
		case a == "--":
			operands += len(argv) - i - 1
			i = len(argv)
		case a != "" && a[0] != '-':
			operands++
		default:
			return false
		}
	}
	return operands == 1 || operands == 2
}

// plainGitWorktree reports whether argv is `git worktree` with a
// subcommand that writes or removes worktree links (add, move, remove,
// prune, repair, lock, unlock) and only its plain options (git-worktree(1),
// git 2.39).
func plainGitWorktree(argv []string) bool {
	if len(argv) < 3 || argv[1] != "worktree" {
		return false
	}
	switch argv[2] {
	case "add", "move", "remove", "prune", "repair", "lock", "unlock":
	default:
		return false
	}
	withValue := []string{"-b", "-B", "--reason", "--expire"}
	for i := 3; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-f" || a == "--force" || a == "--detach" || a == "--checkout" || a == "--no-checkout" ||
			a == "--lock" || a == "-q" || a == "--quiet" || a == "--track" || a == "--no-track" ||
			a == "--guess-remote" || a == "--no-guess-remote" || a == "--orphan" || a == "-n" || a == "--dry-run" ||
			a == "-v" || a == "--verbose":
		case slices.Contains(withValue, a):
			i++
			if i >= len(argv) {
				return false
			}
		case strings.HasPrefix(a, "--reason=") || strings.HasPrefix(a, "--expire="):
		case a == "--":
			return true
		case a != "" && a[0] != '-':
		default:
			return false
		}
	}
	return true
}
