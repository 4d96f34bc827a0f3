package policy

import "strings"

// Git configuration keys given on the command line (git -c KEY=VALUE,
// git --config-env=KEY=ENVVAR, git clone -c/--config KEY=VALUE) are judged
// by their key: a key that makes git run a program or read configuration
// from elsewhere is a hard denial, any other (user.name, user.email,
// init.defaultBranch, color.ui, core.autocrlf...) is harmless and allowed.
// So `git -c user.name=A commit` runs and `git -c core.fsmonitor=x status`
// does not.

// GitConfigRisk is one family of git configuration keys that runs a
// program or reads configuration that can.
type GitConfigRisk struct {
	// Section and Name match the key's first and last dot-separated parts,
	// ignoring case as git does; "*" matches any. A subsection in between
	// (diff.<driver>.textconv, credential.<url>.helper) is ignored:
	// Section "diff", Name "textconv" matches "diff.pdf.textconv" and
	// "diff.textconv".
	Section, Name string
	Risk          Risk
	Why, Source   string

	rule *Rule
}

// Key renders the family as documentation writes it ("diff.*.textconv",
// "alias.*", "*.helper").
func (g *GitConfigRisk) Key() string {
	switch {
	case g.Name == "*":
		return g.Section + ".*"
	case g.Section == "*":
		return "*." + g.Name
	}
	return g.Section + "." + g.Name
}

const srcGitConfig = "git-config(1), git 2.39"

// gitConfigRisks lists the key families of git-config(1) (git 2.39,
// section "Variables") whose value git runs as a program or shell command,
// or which make git read configuration, hooks or templates from elsewhere.
var gitConfigRisks = []*GitConfigRisk{
	{Section: "alias", Name: "*", Risk: RiskRuns, Why: "an alias starting with ! runs a shell command"},
	{Section: "core", Name: "pager", Risk: RiskRuns, Why: "runs the pager"},
	{Section: "pager", Name: "*", Risk: RiskRuns, Why: "pager.<cmd> runs a pager for that command"},
	{Section: "*", Name: "editor", Risk: RiskRuns, Why: "core.editor and sequence.editor run an editor"},
	{Section: "*", Name: "sshcommand", Risk: RiskRuns, Why: "runs the given ssh command"},
	{Section: "core", Name: "fsmonitor", Risk: RiskRuns, Why: "runs the file-system monitor hook"},
	{Section: "core", Name: "hookspath", Risk: RiskRuns, Why: "runs hooks from another directory"},
	{Section: "core", Name: "askpass", Risk: RiskRuns, Why: "runs a password prompt program"},
	{Section: "core", Name: "gitproxy", Risk: RiskRuns, Why: "runs a proxy command for git:// connections"},
	{Section: "core", Name: "alternaterefscommand", Risk: RiskRuns, Why: "runs a command to list alternate refs"},
	{Section: "core", Name: "attributesfile", Risk: RiskConfig, Why: "reads attributes that select filter and diff drivers"},
	{Section: "*", Name: "helper", Risk: RiskRuns, Why: "credential.helper and credential.<url>.helper run a helper program"},
	{Section: "*", Name: "textconv", Risk: RiskRuns, Why: "diff.<driver>.textconv runs a conversion program"},
	{Section: "*", Name: "command", Risk: RiskRuns, Why: "diff.<driver>.command and trailer.<token>.command run a command"},
	{Section: "*", Name: "cmd", Risk: RiskRuns, Why: "difftool, mergetool, browser, man and trailer <name>.cmd run a command"},
	{Section: "*", Name: "path", Risk: RiskRuns, Why: "include.path and includeIf.<cond>.path read configuration; <tool>.path runs a tool"},
	{Section: "*", Name: "program", Risk: RiskRuns, Why: "gpg.program and gpg.<format>.program run a signing program"},
	{Section: "*", Name: "driver", Risk: RiskRuns, Why: "merge.<driver>.driver runs a merge program"},
	{Section: "diff", Name: "external", Risk: RiskRuns, Why: "runs an external diff program"},
	{Section: "filter", Name: "*", Risk: RiskRuns, Why: "filter.<driver>.clean, smudge and process run programs"},
	{Section: "gpg", Name: "*", Risk: RiskRuns, Why: "gpg.ssh.defaultKeyCommand and the signing programs run commands"},
	{Section: "interactive", Name: "difffilter", Risk: RiskRuns, Why: "runs a filter on interactive diffs"},
	{Section: "sendemail", Name: "*", Risk: RiskRuns, Why: "sendemail.sendmailCmd and smtpServer run a mail program"},
	{Section: "imap", Name: "tunnel", Risk: RiskRuns, Why: "runs a tunnel command"},
	{Section: "web", Name: "browser", Risk: RiskRuns, Why: "runs a browser"},
	{Section: "help", Name: "browser", Risk: RiskRuns, Why: "runs a browser"},
	{Section: "man", Name: "viewer", Risk: RiskRuns, Why: "runs a manual viewer"},
	{Section: "instaweb", Name: "*", Risk: RiskRuns, Why: "instaweb.httpd runs a web server"},
	{Section: "difftool", Name: "*", Risk: RiskRuns, Why: "configures the diff tool git runs"},
	{Section: "mergetool", Name: "*", Risk: RiskRuns, Why: "configures the merge tool git runs"},
	{Section: "remote", Name: "uploadpack", Risk: RiskRuns, Why: "runs the given program as git-upload-pack"},
	{Section: "remote", Name: "receivepack", Risk: RiskRuns, Why: "runs the given program as git-receive-pack"},
	{Section: "remote", Name: "vcs", Risk: RiskRuns, Why: "runs the remote helper git-remote-<vcs>"},
	{Section: "protocol", Name: "*", Risk: RiskRuns, Why: "protocol.allow and protocol.<name>.allow can enable ext::, which runs a command"},
	{Section: "submodule", Name: "update", Risk: RiskRuns, Why: "submodule.<name>.update = !command runs a command"},
	{Section: "uploadpack", Name: "packobjectshook", Risk: RiskRuns, Why: "runs a hook in front of pack-objects"},
	{Section: "include", Name: "*", Risk: RiskConfig, Why: "reads another configuration file"},
	{Section: "includeif", Name: "*", Risk: RiskConfig, Why: "reads another configuration file"},
	{Section: "init", Name: "templatedir", Risk: RiskConfig, Why: "copies hooks and configuration from a template directory"},
	{Section: "safe", Name: "directory", Risk: RiskConfig, Why: "trusts repositories owned by others, with their configuration and hooks"},
}

// GitConfigRisks returns the table of dangerous git configuration keys.
func GitConfigRisks() []GitConfigRisk {
	out := make([]GitConfigRisk, len(gitConfigRisks))
	for i, g := range gitConfigRisks {
		out[i] = *g
		out[i].rule = nil
	}
	return out
}

func init() {
	for _, g := range gitConfigRisks {
		if g.Source == "" {
			g.Source = srcGitConfig
		}
	}
}

// gitConfigOptions are the options whose value is a configuration
// key (and value), judged by the key instead of denied outright.
var gitConfigOptions = []struct{ section, option string }{
	{"-", "-c"}, {"-", "--config-env"}, {"clone", "--config"},
}

// markGitConfigOptions makes the options of gitConfigOptions judge their
// value (called once the tables and risks are loaded).
func markGitConfigOptions() error {
	t := toolsByName["git"]
	if t == nil {
		return nil
	}
	for _, g := range gitConfigRisks {
		g.rule = &Rule{Kind: KindExec, Pattern: "deny git -c " + g.Key() + ": " + g.Why,
			Source: "builtin (" + g.Source + ")",
			Hint:   hintGitConfig}
	}
	for _, c := range gitConfigOptions {
		s := t.Main
		if c.section != "-" {
			s = t.Section(c.section)
		}
		if s == nil {
			continue
		}
		o := s.Option(c.option)
		if o == nil || o.rule == nil {
			continue
		}
		o.configKey = true
	}
	return nil
}

// gitConfigDeny returns the rule that denies setting configuration from
// value ("KEY=VALUE", "KEY", or for --config-env "KEY=ENVVAR"), nil when
// the key is harmless. A missing value is nil too: git fails without one.
func gitConfigDeny(value string, hasVal bool) *Rule {
	if !hasVal {
		return nil
	}
	key, _, _ := strings.Cut(value, "=")
	if g := gitConfigRisk(key); g != nil {
		return g.rule
	}
	return nil
}

// gitConfigRisk returns the family a configuration key belongs to, nil
// when it is harmless. Section and name are compared ignoring case, as git
// does; the subsection is not compared.
func gitConfigRisk(key string) *GitConfigRisk {
	key = strings.TrimSpace(key)
	dot := strings.IndexByte(key, '.')
	if dot < 0 {
		return nil // not a key git accepts ("key does not contain a section")
	}
	section, name := key[:dot], key[strings.LastIndexByte(key, '.')+1:]
	for _, g := range gitConfigRisks {
		if (g.Section == "*" || strings.EqualFold(g.Section, section)) &&
			(g.Name == "*" || strings.EqualFold(g.Name, name)) {
			return g
		}
	}
	return nil
}

// JudgesConfigKey reports whether the option's value is a git
// configuration key that is judged by GitConfigRisks (git -c,
// --config-env, clone --config) instead of the option being denied whatever
// its value.
func (o *ToolOption) JudgesConfigKey() bool { return o.configKey }
