package policy

// OptionRisk marks one option (or command word) of a tool table with what
// it can do, citing the manual that says so. Options the tables list and
// this list does not name are safe.
type OptionRisk struct {
	Tool    string // "git"
	Section string // git command ("clone"), "" for the tool's own options
	Option  string // any spelling ("-u" or "--upload-pack"), or a command word ("difftool")
	Risk    Risk
	Why     string // what it runs or reads
	Source  string // the manual page and version
}

const (
	srcGit   = "git 2.39 manual"
	srcTar   = "tar(1), GNU tar 1.34"
	srcSort  = "sort(1), GNU coreutils 9.1"
	srcRg    = "rg(1), ripgrep 15.2"
	srcSSH   = "ssh(1), ssh_config(5), OpenSSH 9.2"
	srcZip   = "zip(1), Zip 3.0"
	srcLess  = "less(1), less 590"
	srcRsync = "rsync(1), rsync 3.2.7"
	srcSed   = "sed(1), GNU sed 4.9"
	srcGo    = "go1.26.8"
)

// optionRisks are the options of the tool tables that run programs, read
// configuration that can, or write files the value names.
var optionRisks = []OptionRisk{
	// git: global options (git(1) OPTIONS).
	{"git", "-", "-c", RiskConfig, "sets any configuration (core.pager, core.sshCommand, core.fsmonitor, alias.*=!cmd run programs)", srcGit + ", git(1)"},
	{"git", "-", "--config-env", RiskConfig, "sets configuration from a variable (as -c)", srcGit + ", git(1)"},
	{"git", "-", "--exec-path", RiskRuns, "runs git's helper commands from the given directory", srcGit + ", git(1)"},
	{"git", "-", "--git-dir", RiskConfig, "uses another repository, whose configuration and hooks can run programs", srcGit + ", git(1)"},
	{"git", "-", "difftool", RiskRuns, "runs the configured diff tool", srcGit + ", git-difftool(1)"},
	{"git", "-", "mergetool", RiskRuns, "runs the configured merge tool", srcGit + ", git-mergetool(1)"},
	{"git", "-", "filter-branch", RiskRuns, "evaluates shell filters", srcGit + ", git-filter-branch(1)"},
	{"git", "-", "instaweb", RiskRuns, "starts a web server and a browser", srcGit + ", git-instaweb(1)"},
	{"git", "-", "web--browse", RiskRuns, "starts a browser", srcGit + ", git-web--browse(1)"},
	{"git", "-", "send-email", RiskRuns, "runs a sendmail program (--sendmail-cmd, --smtp-server=/path)", srcGit + ", git-send-email(1)"},
	{"git", "submodule", "foreach", RiskRuns, "runs a shell command in every submodule", srcGit + ", git-submodule(1)"},
	{"git", "bisect", "run", RiskRuns, "runs a script at every step", srcGit + ", git-bisect(1)"},
	// git commands.
	{"git", "clone", "--upload-pack", RiskRuns, "runs the given program as git-upload-pack (locally for a local or ssh remote)", srcGit + ", git-clone(1)"},
	{"git", "clone", "--template", RiskConfig, "copies hooks and configuration from a template directory", srcGit + ", git-clone(1)"},
	{"git", "clone", "--config", RiskConfig, "sets configuration in the new repository (as git -c)", srcGit + ", git-clone(1)"},
	{"git", "init", "--template", RiskConfig, "copies hooks and configuration from a template directory", srcGit + ", git-init(1)"},
	{"git", "fetch", "--upload-pack", RiskRuns, "runs the given program as git-upload-pack", srcGit + ", git-fetch(1)"},
	{"git", "pull", "--upload-pack", RiskRuns, "runs the given program as git-upload-pack", srcGit + ", git-pull(1)"},
	{"git", "ls-remote", "--upload-pack", RiskRuns, "runs the given program as git-upload-pack", srcGit + ", git-ls-remote(1)"},
	{"git", "push", "--receive-pack", RiskRuns, "runs the given program as git-receive-pack", srcGit + ", git-push(1)"},
	{"git", "send-pack", "--receive-pack", RiskRuns, "runs the given program as git-receive-pack", srcGit + ", git-send-pack(1)"},
	{"git", "archive", "--exec", RiskRuns, "runs the given program as git-upload-archive", srcGit + ", git-archive(1)"},
	{"git", "archive", "--output", RiskWrites, "writes the archive to the named file", srcGit + ", git-archive(1)"},
	{"git", "grep", "--open-files-in-pager", RiskRuns, "runs the given pager on the matching files", srcGit + ", git-grep(1)"},
	{"git", "rebase", "--exec", RiskRuns, "runs a shell command after each commit", srcGit + ", git-rebase(1)"},
	{"git", "rebase", "--interactive", RiskRuns, "runs the sequence editor", srcGit + ", git-rebase(1)"},
	{"git", "diff", "--ext-diff", RiskRuns, "runs the external diff program (diff.external, GIT_EXTERNAL_DIFF)", srcGit + ", git-diff(1)"},
	{"git", "diff", "--output", RiskWrites, "writes the diff to the named file", srcGit + ", git-diff(1)"},
	// go: flags that run a program the value names (the sandbox also
	// holds what they run to the approved programs).
	{"go", "", "-toolexec", RiskRuns, "runs every toolchain program (compile, link, vet...) through the named command", srcGo + ", go help build"},
	{"go", "", "-exec", RiskRuns, "runs the built program (go run) or test binary (go test) through the named command", srcGo + ", go help run, go help testflag"},
	{"go", "", "-vettool", RiskRuns, "runs the named program as the vet tool", srcGo + ", go help vet"},
	{"go", "", "-compiler", RiskRuns, "selects the compiler program (gccgo runs gccgo with -gccgoflags)", srcGo + ", go help build"},

	// tar.
	{"tar", "", "--to-command", RiskRuns, "pipes each extracted file to a command", srcTar},
	{"tar", "", "--checkpoint-action", RiskRuns, "exec=COMMAND runs a command at each checkpoint", srcTar},
	{"tar", "", "--use-compress-program", RiskRuns, "filters the archive through a program", srcTar},
	{"tar", "", "--info-script", RiskRuns, "runs a script at the end of each volume", srcTar},
	{"tar", "", "--rsh-command", RiskRuns, "runs the given remote shell", srcTar},
	{"tar", "", "--rmt-command", RiskRuns, "runs the given rmt program", srcTar},
	{"tar", "", "--index-file", RiskWrites, "writes verbose output to the named file", srcTar},
	// sort.
	{"sort", "", "--compress-program", RiskRuns, "compresses temporary files with a program", srcSort},
	{"sort", "", "--output", RiskWrites, "writes the result to the named file", srcSort},
	// ripgrep.
	{"rg", "", "--pre", RiskRuns, "runs a preprocessor on every file searched", srcRg},
	{"rg", "", "--search-zip", RiskRuns, "runs decompression programs found in PATH", srcRg},
	{"rg", "", "--hostname-bin", RiskRuns, "runs a program to learn the host name", srcRg},
	// sed.
	{"sed", "", "--in-place", RiskWrites, "rewrites the named files", srcSed},
	// ssh.
	{"ssh", "", "-o", RiskRuns, "sets any option (ProxyCommand, LocalCommand, KnownHostsCommand run programs)", srcSSH},
	{"ssh", "", "-F", RiskConfig, "reads another configuration file (which can run programs)", srcSSH},
	{"ssh", "", "-I", RiskRuns, "loads a PKCS#11 shared library", srcSSH},
	{"ssh", "", "-E", RiskWrites, "appends debug logs to the named file", srcSSH},
	// zip, less, rsync.
	{"zip", "", "-TT", RiskRuns, "runs the given command to test the archive", srcZip},
	{"less", "", "-k", RiskConfig, "reads key bindings (which can run commands) from a file", srcLess},
	{"less", "", "--lesskey-src", RiskConfig, "reads key bindings (which can run commands) from a file", srcLess},
	{"rsync", "", "-e", RiskRuns, "runs the given remote shell", srcRsync},
	{"rsync", "", "--rsync-path", RiskRuns, "runs the given program on the remote side (and locally for local copies through a shell)", srcRsync},
	{"rsync", "", "--config", RiskConfig, "reads a daemon configuration file", srcRsync},
}

// startedByExec are the options of optionRisks whose only risk is a
// program they start as a process of its own (an exec): where a sandbox
// judges every exec when it happens (ExecRequest.ExecJudged and
// Started), that program is judged with its real arguments when it
// starts, so the option itself is no longer refused. Options that load
// code into the tool's own process (ssh -I), set options of any kind
// (ssh -o, git -c) or read configuration (RiskConfig) stay refused.
var startedByExec = map[[3]string]bool{
	{"git", "bisect", "run"}: true, {"git", "submodule", "foreach"}: true, {"git", "-", "--exec-path"}: true,
	{"git", "rebase", "--exec"}: true, {"git", "-", "difftool"}: true, {"git", "-", "mergetool"}: true,
	{"git", "-", "filter-branch"}: true, {"git", "diff", "--ext-diff"}: true,
	{"git", "grep", "--open-files-in-pager"}: true,
	{"go", "", "-toolexec"}:                  true, {"go", "", "-exec"}: true, {"go", "", "-vettool"}: true,
	{"tar", "", "--to-command"}: true, {"tar", "", "--checkpoint-action"}: true,
	{"tar", "", "--use-compress-program"}: true, {"tar", "", "--info-script"}: true,
	{"sort", "", "--compress-program"}: true,
	{"rg", "", "--pre"}:                true, {"rg", "", "--search-zip"}: true, {"rg", "", "--hostname-bin"}: true,
	{"zip", "", "-TT"}: true,
}
