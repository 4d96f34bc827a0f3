package policy

// A denial's hint says how to allow the call. Rules carry it in the terms
// of the Go API (ExecRule, ExecSpec.Env, Builder.ReplaceProtected); a
// policy loaded from a file gives it in the file's terms instead (TOML
// tables and keys), so the person editing the file reads what to write.

// tomlHints maps each Go-API hint to its policy-file form. A hint not
// listed here says nothing API-specific and stands as it is.
var tomlHints = map[string]string{
	ruleNoWriteRoot.Hint:   "add a directory that contains the target to [fs] write_roots, or rescue the call in BeforeDeny",
	ruleNoReadRoot.Hint:    "add a directory that contains the target to [fs] read_roots (or write_roots), or rescue the call in BeforeDeny",
	ruleNoExecRule.Hint:    `add an [[exec.allow]] table with program = "..." (and args = [...] for an argument prefix), or rescue the call in BeforeDeny`,
	ruleExecNotFound.Hint:  "install it in a directory of [exec] path, or name it by absolute path in program",
	ruleEnvInjection.Hint:  "name the variable in [exec] env, or in the env of the command's [[exec.allow]] table",
	ruleExecDir.Hint:       "run the command inside a directory of [fs] write_roots (or a read root, with [exec] dir_in_read_roots = true)",
	ruleNetDefault.Hint:    `add a [[net.allow]] table with host = "..." (or cidr = "..." for addresses) and ports = [...], or rescue the call in BeforeDeny`,
	ruleListenDefault.Hint: `add a [[net.allow]] table with listen = true, cidr = "..." and ports = [...], or rescue the call in BeforeDeny`,
	ruleUnixRoot.Hint:      `add a directory containing the socket to [fs] write_roots and a [[net.allow]] table with path = "..."`,
	hintProtected:          "protected names stay read-only inside write roots; set [fs] replace_protected = true and list only the protected names to keep, or let BeforeDeny rescue hard denials (audit.WithRescueHard)",
	hintReadDeny:           "remove the entry from [fs] read_deny, or let BeforeDeny rescue hard denials (audit.WithRescueHard)",
	hintNetDeny:            "drop the [[net.deny]] table, or opt in with audit.WithRescueHard and rescue it in BeforeDeny",
	hintOption:             "name the option in the args of the [[exec.allow]] table to allow it for that rule (no_builtin_deny = true in [exec] turns the built-in option denials off), or rescue the call in BeforeDeny with audit.WithRescueHard",
	hintGitConfig:          "set harmless keys only (user.name, user.email, ...); name the exact option and value in the args of the [[exec.allow]] table to allow it, or rescue the call in BeforeDeny with audit.WithRescueHard",
}

// Hints of rules made per entry (not package-level rules).
const (
	hintProtected = "protected names stay read-only inside write roots; drop it from the protected set (Builder.ReplaceProtected) or let BeforeDeny rescue hard denials (audit.WithRescueHard)"
	hintReadDeny  = "remove the read-deny entry, or let BeforeDeny rescue hard denials (audit.WithRescueHard)"
	hintNetDeny   = "drop the deny rule, or opt in with audit.WithRescueHard and rescue it in BeforeDeny"
	hintOption    = "name the option in the allow rule's Args to allow it for that rule, or rescue the call in BeforeDeny with audit.WithRescueHard"
	hintGitConfig = "set harmless keys only (user.name, user.email, ...); name the exact option and value in the allow rule's Args to allow it, or rescue the call in BeforeDeny with audit.WithRescueHard"
)

// FromFile reports whether p was loaded from a policy file (Load, Parse,
// the layered forms).
func (p *Policy) FromFile() bool { return p != nil && p.fromFile }

// HintFor returns how to allow a call r denied, in the terms p was written
// in: TOML tables and keys for a policy loaded from a file, the Go API
// otherwise. Empty when r has no hint.
func (p *Policy) HintFor(r *Rule) string {
	if r == nil {
		return ""
	}
	if p.FromFile() {
		if h, ok := tomlHints[r.Hint]; ok {
			return h
		}
	}
	return r.Hint
}
