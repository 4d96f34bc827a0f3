package policy

import "strconv"

// Protected names come in classes, by what their contents do
// (docs/policy.md, "Protected names by class", is this table in prose):
//
//   - ClassRuns: names whose contents run later, or redirect a tool to
//     other programs or configuration: shell start-up files, git
//     configuration, editor and agent settings, files a shell or tool
//     loads on its own, package-manager configuration that can name a
//     program. They are protected at any depth, before they exist, in
//     dependency trees too.
//   - ClassCredential: names that hold secrets. An existing one is never
//     overwritten, moved or removed, and one cannot be created, except
//     inside a dependency tree (DefaultDependencyTrees): a package
//     install, a module download or an unpacked archive writes CA bundles
//     and test keys there, which are the package's files, not the user's
//     secrets. Reading is read-deny's business, unchanged by the class.
//   - ClassGit: a repository's metadata, held as one object (gitmeta.go).
//
// Entries a host adds with Spec.Protected (Builder.Protect) are ClassRuns;
// with Spec.Credentials (Builder.Credential) ClassCredential.

// ProtectClass says why a name is protected, and so where.
type ProtectClass uint8

const (
	ClassRuns       ProtectClass = iota + 1 // its contents run later or redirect a tool: protected everywhere
	ClassCredential                         // it holds secrets: protected outside dependency trees
	ClassGit                                // git metadata: one object, changed only as git's own commands change it
)

var classNames = [...]string{ClassRuns: "runs", ClassCredential: "credential", ClassGit: "git"}

func (c ProtectClass) String() string {
	if int(c) < len(classNames) && classNames[c] != "" {
		return classNames[c]
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// ProtectedName is one built-in protected entry with its class, what it
// does and where that is documented.
type ProtectedName struct {
	Pattern string
	Class   ProtectClass
	What    string
	Source  string
}

// Sources of the table, by tool.
const (
	srcBash      = "bash(1) INVOCATION"
	srcZsh       = "zsh(1) STARTUP/SHUTDOWN FILES"
	srcGitFiles  = "git-config(1) FILES"
	srcGitLayout = "gitrepository-layout(5)"
	srcSSHFiles  = "ssh_config(5) ProxyCommand, LocalCommand, Match exec; sshd(8) AUTHORIZED_KEYS command="
	srcNpmrc     = "npmrc(5), npm config script-shell, git, node-options"
)

// protectedTable is every built-in protected entry. DefaultProtected and
// DefaultCredentials are its patterns by class.
var protectedTable = []ProtectedName{
	// Shell and login start-up files: run by every new shell.
	{".bashrc", ClassRuns, "run by interactive bash", srcBash},
	{".bash_profile", ClassRuns, "run by login bash", srcBash},
	{".bash_login", ClassRuns, "run by login bash", srcBash},
	{".bash_logout", ClassRuns, "run when login bash exits", srcBash},
	{".profile", ClassRuns, "run by login sh and bash", srcBash + "; dash(1)"},
	{".zshrc", ClassRuns, "run by interactive zsh", srcZsh},
	{".zshenv", ClassRuns, "run by every zsh", srcZsh},
	{".zprofile", ClassRuns, "run by login zsh", srcZsh},
	{".zlogin", ClassRuns, "run by login zsh", srcZsh},
	{".zlogout", ClassRuns, "run when login zsh exits", srcZsh},
	{".kshrc", ClassRuns, "run by interactive ksh (ENV)", "ksh(1) Invocation"},
	{".cshrc", ClassRuns, "run by every csh", "csh(1) Startup and shutdown"},
	{".tcshrc", ClassRuns, "run by every tcsh", "tcsh(1) Startup and shutdown"},
	{".inputrc", ClassRuns, "readline key bindings, which can insert and run commands", "readline(3) INITIALIZATION FILE"},
	{".config/fish", ClassRuns, "fish's config.fish and conf.d, run by every fish", "fish-doc Initialization files"},
	{".envrc", ClassRuns, "run by direnv's shell hook when a shell enters the directory", "direnv(1)"},
	// Git: configuration names programs (core.pager, core.fsmonitor,
	// aliases, filters, hooksPath) that run on the next git command.
	{".gitconfig", ClassRuns, "user configuration: programs git runs", srcGitFiles},
	{".config/git", ClassRuns, "XDG user configuration and attributes: programs git runs", srcGitFiles + "; gitattributes(5)"},
	{".gitmodules", ClassRuns, "submodule URLs and paths git fetches and checks out", "gitmodules(5)"},
	{GitEntry, ClassGit, "a repository's metadata: created as a directory only; never moved, removed, linked or made a pointer file; inside, only what git's own commands write", srcGitLayout},
	{GitConfigEntry, ClassGit, "config, config.worktree, worktrees/*/config.worktree, info/attributes, and their modules/ copies: programs git runs", srcGitLayout + "; " + srcGitFiles},
	{GitHooksEntry, ClassGit, "hooks/: programs git runs (the empty directory may be created)", srcGitLayout + "; githooks(5)"},
	{GitRedirectEntry, ClassGit, "commondir, worktrees/*/commondir and gitdir, a .git pointer file, objects/info/alternates and http-alternates, info/grafts, branches/, remotes/: where git reads a repository from", srcGitLayout + "; gitglossary(7) gitfile"},
	// Programs and configuration of other tools that run on their own.
	{".npmrc", ClassRuns, "npm configuration: script-shell, git, node-options name programs; also auth tokens", srcNpmrc},
	{".yarnrc", ClassRuns, "yarn 1 configuration: yarn-path runs another yarn", "yarnrc (classic yarn docs)"},
	{".yarnrc.yml", ClassRuns, "yarn 2+ configuration: yarnPath runs a script, plugins load code", "yarnrc.yml (yarnpkg.com configuration)"},
	{".pnpmfile.cjs", ClassRuns, "loaded and run by every pnpm install", "pnpm .pnpmfile.cjs"},
	{".cargo/config", ClassRuns, "cargo configuration: target runner, rustc-wrapper run programs", "The Cargo Book, Configuration"},
	{".cargo/config.toml", ClassRuns, "cargo configuration: target runner, rustc-wrapper run programs", "The Cargo Book, Configuration"},
	{"pip.conf", ClassRuns, "pip configuration (also in a venv): index URLs pip installs from", "pip User Guide, Configuration"},
	{".curlrc", ClassRuns, "curl's default options: output files, proxies, URLs", "curl(1) --config"},
	{".wgetrc", ClassRuns, "wget's default options: output files, proxies", "wget(1) Startup File"},
	{".ssh", ClassRuns, "ssh config runs commands; authorized_keys command=; keys", srcSSHFiles},
	{".gnupg", ClassRuns, "gpg-agent.conf pinentry-program runs a program; keys", "gpg-agent(1) --pinentry-program"},
	{".aws", ClassRuns, "config credential_process runs a program; credentials", "AWS CLI User Guide, credential_process"},
	{".kube", ClassRuns, "kubeconfig users[].exec runs a program; credentials", "Kubernetes docs, client-go credential plugins"},
	{".docker", ClassRuns, "config.json credsStore and credHelpers run docker-credential-* programs; auths", "docker-login(1) Credential stores"},
	// Editors and agents: settings that run tools or change what an agent may do.
	{".vscode", ClassRuns, "workspace settings and tasks: programs the editor runs", "VS Code docs, Workspace settings, Tasks"},
	{".idea", ClassRuns, "JetBrains project settings: run configurations, external tools", "IntelliJ IDEA docs, Project files"},
	{".mcp.json", ClassRuns, "MCP servers an agent starts", "Claude Code docs, MCP"},
	{".claude", ClassRuns, "agent settings: hooks and permissions", "Claude Code docs, Settings, Hooks"},
	{".codex", ClassRuns, "agent configuration", "Codex CLI docs, config"},
	{".cursor", ClassRuns, "editor agent rules and MCP servers", "Cursor docs, MCP"},
	{".gemini", ClassRuns, "agent settings and MCP servers", "Gemini CLI docs, configuration"},
	{".aider.conf.yml", ClassRuns, "agent configuration: lint and test commands it runs", "aider docs, YAML config file"},
	{".continue", ClassRuns, "agent configuration and MCP servers", "Continue docs, config"},
	// Credentials: secrets, protected outside dependency trees.
	{".netrc", ClassCredential, "logins and passwords for curl, git, ftp", "netrc(5)"},
	{".pypirc", ClassCredential, "package index upload credentials", "Python Packaging User Guide, .pypirc"},
	{".git-credentials", ClassCredential, "git's stored passwords", "git-credential-store(1)"},
	{".pgpass", ClassCredential, "PostgreSQL passwords", "PostgreSQL docs, The Password File"},
	{".azure", ClassCredential, "Azure CLI tokens", "Azure CLI docs, configuration"},
	{".config/gcloud", ClassCredential, "Google Cloud CLI credentials", "gcloud docs, credentials"},
	{".env", ClassCredential, "environment files: API keys and passwords loaded by dotenv libraries and compose", "dotenv; Docker Compose docs, env file"},
	{".env.*", ClassCredential, "per-environment variants of .env", "dotenv; Vite docs, env files"},
	{"*.pem", ClassCredential, "PEM keys and certificates", "RFC 7468"},
	{"*.key", ClassCredential, "private keys", "openssl-genpkey(1) conventions"},
	{"id_rsa", ClassCredential, "SSH private key", "ssh-keygen(1) FILES"},
	{"id_ed25519", ClassCredential, "SSH private key", "ssh-keygen(1) FILES"},
	{"id_ecdsa", ClassCredential, "SSH private key", "ssh-keygen(1) FILES"},
	{"id_dsa", ClassCredential, "SSH private key", "ssh-keygen(1) FILES"},
}

// DependencyTree is one built-in dependency tree: a directory whose
// contents a package manager, module download or unpacked archive writes,
// where credential-class names are the package's files.
type DependencyTree struct {
	Pattern string
	What    string
	Source  string
}

// dependencyTable is every built-in dependency tree.
var dependencyTable = []DependencyTree{
	{"node_modules", "npm, yarn and pnpm install packages here", "npm docs, folders"},
	{"site-packages", "pip and ensurepip install packages here (venvs included)", "Python docs, sysconfig installation paths; site"},
	{"dist-packages", "Debian's Python packages and pip installs into system Python", "Debian Python Policy, module path"},
	{".venv", "a virtual environment: python -m venv .venv, uv's default", "Python docs, venv; uv docs"},
	{"venv", "a virtual environment: python -m venv venv", "Python docs, venv"},
	{"pkg/mod", "the Go module cache at GOPATH/pkg/mod (the go profile adds its own GOMODCACHE)", "go help gopath; go help modules, GOMODCACHE"},
	{"vendor", "go mod vendor, Composer and Bundler install dependencies here", "go help mod vendor; Composer docs, vendor-dir; Bundler docs, bundle install --path"},
	{"target", "cargo and maven build output", "The Cargo Book, build cache; Maven docs, standard directory layout"},
	{".cargo/registry", "cargo unpacks crate sources here", "The Cargo Book, Cargo home"},
	{".cargo/git", "cargo checks out git dependencies here", "The Cargo Book, Cargo home"},
}

// The git entries. With any of GitConfigEntry, GitHooksEntry and
// GitRedirectEntry in the protected list, the git metadata model
// (gitmeta.go) holds every repository's .git: each names a class inside it
// that stays refused, and a tool creation (ToolCreation) drops one of them
// for one command. GitEntry is not an entry of the list but the pattern of
// the model's own rule (the .git entry itself, and what git does not
// write); a protected entry ".git" a host lists is a plain name, which
// keeps the whole directory read-only and its creation refused.
const (
	GitEntry         = ".git"
	GitConfigEntry   = ".git/config"
	GitHooksEntry    = ".git/hooks"
	GitRedirectEntry = ".git/commondir"
)

// DefaultProtected is the built-in list of ClassRuns and ClassGit entries
// (GitEntry excepted: it is the git model's own rule).
// Entries without a leading "/" or "~" are name patterns matched at any
// depth, case-insensitively, even before the path exists: ".bashrc"
// protects every directory's .bashrc and, for a directory, everything
// under it. "*" may open or close a single-component pattern.
var DefaultProtected = patternsOf(ClassRuns, ClassGit)

// DefaultCredentials is the built-in list of ClassCredential entries.
var DefaultCredentials = patternsOf(ClassCredential)

// DefaultDependencyTrees are the built-in dependency trees: name patterns
// (one to four components, no "*") matched at any depth.
var DefaultDependencyTrees = func() []string {
	out := make([]string, len(dependencyTable))
	for i, d := range dependencyTable {
		out[i] = d.Pattern
	}
	return out
}()

func patternsOf(classes ...ProtectClass) []string {
	var out []string
	for _, c := range classes {
		for _, n := range protectedTable {
			if n.Class == c && n.Pattern != GitEntry {
				out = append(out, n.Pattern)
			}
		}
	}
	return out
}

// ProtectedNames returns the built-in protected entries with their class,
// what they do and the source that says so.
func ProtectedNames() []ProtectedName { return append([]ProtectedName(nil), protectedTable...) }

// DependencyTrees returns the built-in dependency trees with their sources.
func DependencyTrees() []DependencyTree { return append([]DependencyTree(nil), dependencyTable...) }

// systemWriteDeny are trees no guarded call may write, whatever the roots
// say: kernel interfaces where a write is a configuration change.
var systemWriteDeny = []string{"/proc", "/sys"}
