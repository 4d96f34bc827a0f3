package policyfile

import "github.com/auditguard/auditguard/policy"

// A denial's hint says how to allow the call. The core words its hints in
// the terms of the Go API (ExecRule, ExecSpec.Env, Builder.ReplaceProtected);
// a policy loaded from a file gives them in the file's terms instead (TOML
// tables and keys), so the person editing the file reads what to write.
// Every policy this package builds carries tomlHints in Builder.Hints, and
// Policy.HintFor gives them; they travel with the policy to other processes.

// tomlHints words each of the core's hint topics as a policy file says it.
var tomlHints = map[policy.HintTopic]string{
	policy.HintNoWriteRoot:   "add a directory that contains the target to [fs] write_roots, or rescue the call in BeforeDeny",
	policy.HintNoReadRoot:    "add a directory that contains the target to [fs] read_roots (or write_roots), or rescue the call in BeforeDeny",
	policy.HintNoExecRule:    `add an [[exec.allow]] table with program = "..." (and args = [...] for an argument prefix), or rescue the call in BeforeDeny`,
	policy.HintExecNotFound:  "install it in a directory of [exec] path, or name it by absolute path in program",
	policy.HintEnvInjection:  "name the variable in [exec] env, or in the env of the command's [[exec.allow]] table",
	policy.HintExecDir:       "run the command inside a directory of [fs] write_roots (or a read root, with [exec] dir_in_read_roots = true)",
	policy.HintNetDefault:    `add a [[net.allow]] table with host = "..." (or cidr = "..." for addresses) and ports = [...], or rescue the call in BeforeDeny`,
	policy.HintListenDefault: `add a [[net.allow]] table with listen = true, cidr = "..." and ports = [...], or rescue the call in BeforeDeny`,
	policy.HintUnixRoot:      `add a directory containing the socket to [fs] write_roots and a [[net.allow]] table with path = "..."`,
	policy.HintProtected:     "protected names stay read-only inside write roots; set [fs] replace_protected = true and list only the protected names to keep, or let BeforeDeny rescue hard denials (audit.WithRescueHard)",
	policy.HintReadDeny:      "remove the entry from [fs] read_deny, or let BeforeDeny rescue hard denials (audit.WithRescueHard)",
	policy.HintNetDeny:       "drop the [[net.deny]] table, or opt in with audit.WithRescueHard and rescue it in BeforeDeny",
	policy.HintOption:        "name the option in the args of the [[exec.allow]] table to allow it for that rule (no_builtin_deny = true in [exec] turns the built-in option denials off), or rescue the call in BeforeDeny with audit.WithRescueHard",
	policy.HintGitConfig:     "set harmless keys only (user.name, user.email, ...); name the exact option and value in the args of the [[exec.allow]] table to allow it, or rescue the call in BeforeDeny with audit.WithRescueHard",
	policy.HintGitMeta:       "a child changes .git only as git's own commands do; a plain git init, git clone or git worktree under the git profile writes configuration or links from git's defaults; set [fs] replace_protected = true and list the protected names without the .git/ entries to turn the model off, or let BeforeDeny rescue hard denials (audit.WithRescueHard)",
}
