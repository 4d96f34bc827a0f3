package policy

import "strconv"

// Op is the kind of access a guarded call asks for. The facades map their
// methods onto these (see docs/permission-model.md).
type Op uint8

const (
	OpRead    Op = iota + 1 // open read-only, stat, readlink, read a directory
	OpWrite                 // open with a write flag, create
	OpCreate                // mkdir
	OpDelete                // remove
	OpMove                  // rename (each name)
	OpLink                  // link, symlink (the new entry)
	OpAttr                  // chmod, chown, chtimes
	OpChdir                 // change a handle's working directory
	OpExec                  // start a process
	OpConnect               // dial
	OpListen                // bind a port
	OpConfig                // re-configure the guard
)

var opNames = [...]string{
	OpRead: "read", OpWrite: "write", OpCreate: "create", OpDelete: "delete",
	OpMove: "move", OpLink: "link", OpAttr: "attr", OpChdir: "chdir",
	OpExec: "exec", OpConnect: "connect", OpListen: "listen", OpConfig: "config",
}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// mutates reports whether the operation changes the filesystem.
func (o Op) mutates() bool {
	switch o {
	case OpWrite, OpCreate, OpDelete, OpMove, OpLink, OpAttr:
		return true
	}
	return false
}

// Tier says how final a denial is. The audit pipeline uses it to decide who
// may overturn it.
type Tier uint8

const (
	// TierNone is the tier of an allowed decision.
	TierNone Tier = iota
	// TierSoft: no rule allows the call. A host BeforeDeny callback may rescue it.
	TierSoft
	// TierHard: an explicit deny, a protected path, a special-purpose address.
	// Rescuable only when the host opted in.
	TierHard
	// TierInvalid: malformed input or a target that could not be resolved
	// safely. Never rescuable.
	TierInvalid
	// TierSelf: an attempt to re-configure the guard from inside a scope.
	// Never rescuable.
	TierSelf
	// TierFault: a host callback panicked. Never rescuable.
	TierFault
)

var tierNames = [...]string{"none", "soft", "hard", "invalid", "self-protection", "fault"}

func (t Tier) String() string {
	if int(t) < len(tierNames) {
		return tierNames[t]
	}
	return "tier(" + strconv.Itoa(int(t)) + ")"
}

// RuleKind names the family a Rule belongs to.
type RuleKind uint8

const (
	KindWriteRoot RuleKind = iota + 1 // a write root (allows)
	KindReadRoot                      // a read root (allows)
	KindDotRoot                       // the "." write root: the handle's working directory
	KindReadDeny                      // a read-deny entry
	KindProtected                     // a write-deny (protected) entry
	KindDefault                       // no rule matched: the default applies
	KindSystem                        // a built-in hard rule (/proc, /sys, removing a root)
	KindResolve                       // the target could not be resolved safely
	KindInvalid                       // the request itself is malformed
	KindExec                          // an exec rule
	KindNet                           // a net rule
	KindHost                          // a host callback or scope rule decided
	// KindDependencyTree is a dependency tree: not a deny rule but where
	// credential-class protected names may be written (protected.go).
	KindDependencyTree
	// KindGitMeta is the git metadata model's own rule (gitmeta.go): a
	// repository's .git entry itself, and what git does not write inside
	// it. It is not KindProtected because it does not hold the subtree:
	// most of .git stays writable.
	KindGitMeta
)

var kindNames = [...]string{
	KindWriteRoot: "write root", KindReadRoot: "read root", KindDotRoot: "write root",
	KindReadDeny: "read deny", KindProtected: "protected", KindDefault: "default",
	KindSystem: "system", KindResolve: "resolution", KindInvalid: "invalid input",
	KindExec: "exec rule", KindNet: "net rule", KindHost: "host", KindDependencyTree: "dependency tree",
	KindGitMeta: "git metadata",
}

func (k RuleKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Rule is one entry of a policy, with where it came from. Rules are owned by
// their Policy and never change; decisions point at them.
type Rule struct {
	Kind    RuleKind
	Pattern string // the entry as configured ("/work", ".git/hooks", ".")
	Source  string // provenance: "builtin", "code", or "file.toml:12"
	// Hint says how to allow what this rule denies, or why it allowed.
	Hint string
	// Class is a protected entry's class (protected.go): where it holds.
	// Zero for every other kind.
	Class ProtectClass
}

// String renders the rule as "protected \".bashrc\" (builtin)".
func (r *Rule) String() string {
	if r == nil {
		return "<no rule>"
	}
	s := r.Kind.String()
	if r.Pattern != "" {
		s += " " + quote(r.Pattern)
	}
	if r.Source != "" {
		s += " (" + r.Source + ")"
	}
	return s
}

// Decision is the answer of a pure policy check. It is a small value and
// making one never allocates.
type Decision struct {
	Allowed bool
	Tier    Tier  // TierNone when Allowed
	Rule    *Rule // the rule that decided; never nil
	// Root is the directory of the root that allowed a filesystem call:
	// for a write or read root, the spelling of it that contains the path
	// (one of WriteRoots or ReadRoots; the deepest when roots nest), and
	// for the "." root, the working directory the call was checked with.
	// It is empty for every other decision, denials included. A facade that
	// keeps a handle per root (fsguard's os.Root) finds it by this key
	// instead of scanning the roots; the string is the policy's own (or
	// the caller's cwd), so carrying it allocates nothing.
	Root string
	// Detail is a short phrase refining Rule ("target is a root", or the
	// opaque part of a script).
	Detail string
	// Command is the command inside a script or wrapper that decided
	// ("git push" of "sh -c 'git status && git push'"), nil when the call
	// itself did. It points into the ExecRequest's plan.
	Command *ExecCommand
}

// Allow returns an allowing decision by rule r.
func Allow(r *Rule) Decision { return Decision{Allowed: true, Rule: r} }

// allowIn returns an allowing decision by the root rule r at directory root.
func allowIn(r *Rule, root string) Decision { return Decision{Allowed: true, Rule: r, Root: root} }

// Deny returns a denying decision of tier t by rule r.
func Deny(t Tier, r *Rule, detail string) Decision {
	return Decision{Tier: t, Rule: r, Detail: detail}
}

func quote(s string) string { return strconv.Quote(s) }
