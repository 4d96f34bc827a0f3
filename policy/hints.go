package policy

import "strconv"

// A denial's hint says how to allow the call. The core words every hint in
// the terms of the Go API (ExecRule, ExecSpec.Env, Builder.ReplaceProtected).
// A front end that builds policies from another form (the policy file
// format, package policyfile, words them as TOML tables and keys) passes its
// own wording in Builder.Hints, keyed by HintTopic; HintFor then gives the
// hint in the terms the policy was written in. The core itself knows no
// other vocabulary.

// HintTopic names what a built-in hint is about, so that a front end can
// word it in its own terms. HintNone is the topic of a hint the core does
// not word itself (a host's rule, a rule with no hint).
type HintTopic uint8

const (
	HintNone          HintTopic = iota
	HintNoWriteRoot             // a write outside every write root
	HintNoReadRoot              // a read outside the read roots
	HintNoExecRule              // a program no exec rule allows
	HintExecNotFound            // a bare program name not found on the exec path
	HintEnvInjection            // a wrapper sets a loader, interpreter or secret variable
	HintExecDir                 // a command's directory outside the write roots
	HintNetDefault              // a connection no net rule allows
	HintListenDefault           // a listen no net rule allows
	HintUnixRoot                // a unix socket outside the write roots
	HintProtected               // a protected name inside a write root
	HintReadDeny                // a read-deny entry
	HintNetDeny                 // a net deny rule
	HintOption                  // a built-in option denial of a known tool
	HintGitConfig               // a git configuration override
	HintGitMeta                 // the git metadata model's own rule (a .git entry, a file git does not write)
	hintTopicEnd
)

var hintTopicNames = [...]string{
	HintNone: "none", HintNoWriteRoot: "no-write-root", HintNoReadRoot: "no-read-root",
	HintNoExecRule: "no-exec-rule", HintExecNotFound: "exec-not-found", HintEnvInjection: "env-injection",
	HintExecDir: "exec-dir", HintNetDefault: "net-default", HintListenDefault: "listen-default",
	HintUnixRoot: "unix-root", HintProtected: "protected", HintReadDeny: "read-deny",
	HintNetDeny: "net-deny", HintOption: "option", HintGitConfig: "git-config", HintGitMeta: "git-meta",
}

func (t HintTopic) String() string {
	if int(t) < len(hintTopicNames) && hintTopicNames[t] != "" {
		return hintTopicNames[t]
	}
	return "hint(" + strconv.Itoa(int(t)) + ")"
}

// Hints of rules made per entry (not package-level rules).
const (
	hintProtected = "protected names stay read-only inside write roots; drop it from the protected set (Builder.ReplaceProtected) or let BeforeDeny rescue hard denials (audit.WithRescueHard)"
	hintReadDeny  = "remove the read-deny entry, or let BeforeDeny rescue hard denials (audit.WithRescueHard)"
	hintGitMeta   = "a child changes .git only as git's own commands do; a plain git init, git clone or git worktree under the git profile writes configuration or links from git's defaults (policy.ToolCreation); drop the .git/ entries from the protected set (Builder.ReplaceProtected) to turn the model off, or let BeforeDeny rescue hard denials (audit.WithRescueHard)"
	hintNetDeny   = "drop the deny rule, or opt in with audit.WithRescueHard and rescue it in BeforeDeny"
	hintOption    = "name the option in the allow rule's Args to allow it for that rule, or rescue the call in BeforeDeny with audit.WithRescueHard"
	hintGitConfig = "set harmless keys only (user.name, user.email, ...); name the exact option and value in the allow rule's Args to allow it, or rescue the call in BeforeDeny with audit.WithRescueHard"
)

// hintTopics maps each hint the core gives to its topic. Rules are matched
// by their hint rather than by identity because per-entry rules (protected,
// read-deny, net deny, option denials) are made anew for every policy.
var hintTopics = map[string]HintTopic{
	ruleNoWriteRoot.Hint:   HintNoWriteRoot,
	ruleNoReadRoot.Hint:    HintNoReadRoot,
	ruleNoExecRule.Hint:    HintNoExecRule,
	ruleExecNotFound.Hint:  HintExecNotFound,
	ruleEnvInjection.Hint:  HintEnvInjection,
	ruleExecDir.Hint:       HintExecDir,
	ruleNetDefault.Hint:    HintNetDefault,
	ruleListenDefault.Hint: HintListenDefault,
	ruleUnixRoot.Hint:      HintUnixRoot,
	hintProtected:          HintProtected,
	hintReadDeny:           HintReadDeny,
	hintNetDeny:            HintNetDeny,
	hintOption:             HintOption,
	hintGitConfig:          HintGitConfig,
	hintGitMeta:            HintGitMeta,
}

// HintTopic returns what r's hint is about: HintNone for a nil rule and for
// a hint the core does not word itself.
func (r *Rule) HintTopic() HintTopic {
	if r == nil || r.Hint == "" {
		return HintNone
	}
	return hintTopics[r.Hint]
}

// HintFor returns how to allow a call r denied, in the terms p was written
// in: the wording given in Builder.Hints for r's topic (TOML tables and keys
// for a policy loaded by package policyfile), r.Hint otherwise. Empty when r
// has no hint.
func (p *Policy) HintFor(r *Rule) string {
	if r == nil {
		return ""
	}
	if p != nil && len(p.hints) > 0 {
		if h, ok := p.hints[r.HintTopic()]; ok {
			return h
		}
	}
	return r.Hint
}
