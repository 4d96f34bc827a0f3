package policy

// Built-in rules that decide when nothing configured does.
var (
	ruleReadsAllowed = &Rule{Kind: KindDefault, Pattern: "reads are allowed outside the read-deny set", Source: "builtin"}
	ruleNoWriteRoot  = &Rule{Kind: KindDefault, Pattern: "writes need a write root", Source: "builtin",
		Hint: "add a write root that contains the target, or rescue the call in BeforeDeny"}
	ruleNoReadRoot = &Rule{Kind: KindDefault, Pattern: "reads need a read or write root", Source: "builtin",
		Hint: "add a read root that contains the target, or rescue the call in BeforeDeny"}
	ruleNoChdirRoot = &Rule{Kind: KindDefault, Pattern: "the working directory must stay inside a write root", Source: "builtin",
		Hint: `a handle's working directory is the "." root, so it may only move inside write roots`}
	ruleNotResolved = &Rule{Kind: KindInvalid, Pattern: "paths are checked after resolution", Source: "builtin"}
	ruleNoPolicy    = &Rule{Kind: KindInvalid, Pattern: "decisions need a policy", Source: "builtin",
		Hint: "build the policy with policy.New or load it with policyfile.Load (package policy/policyfile); a nil *Policy denies everything"}
)

// denyNoPolicy is every decision of a nil *Policy: a programmer error
// fails closed instead of panicking.
var denyNoPolicy = Deny(TierInvalid, ruleNoPolicy, "nil *Policy")

const detailIsRoot = "a write root itself cannot be removed or renamed"

// CheckPath decides op on path, which must be the clean absolute result of
// Resolve. cwd is the guarded handle's resolved working directory; it is the
// "." root when the policy has one. CheckPath makes no system calls and does
// not allocate; its cost grows with the path, not with the policy. An
// allowing decision by a root names the root's directory in Decision.Root.
//
// A caller judging a process's file calls (the sandbox's supervisor) asks
// once per name the call acts on, with the name resolved as the kernel
// would (a final link followed only where the call follows it) and cwd
// empty: OpWrite for an open that may write or create, mknod and truncate;
// OpCreate for mkdir; OpDelete for unlink and rmdir; OpMove for both names
// of a rename (RENAME_EXCHANGE and RENAME_NOREPLACE alike); OpLink for both
// names of a hard link and the new name of a symbolic link; OpAttr for
// mode, owner, times and xattrs; OpRead for reads. A create and an
// overwrite are the same OpWrite: no decision depends on whether the file
// exists (credential names are judged by place: protected.go), so the
// caller need not look. A denial whose Rule.Kind is KindProtected holds
// the path and everything under it; KindGitMeta (a repository's .git
// entry, and what git does not write inside it) holds that entry alone.
func (p *Policy) CheckPath(op Op, path, cwd string) Decision {
	if p == nil {
		return denyNoPolicy
	}
	if len(path) == 0 || path[0] != '/' {
		return Deny(TierInvalid, ruleNotResolved, "not an absolute path")
	}
	var m match
	p.ix.walk(path, &m)

	inDot := p.dot != nil && len(cwd) > 0 && cwd[0] == '/' && Within(path, cwd)
	switch {
	case op.mutates():
		if m.writeDeny != nil {
			return Deny(TierHard, m.writeDeny, "")
		}
		if m.gitEnd != 0 {
			if r, detail := p.git.judge(op, path[m.gitEnd:]); r != nil {
				return Deny(TierHard, r, detail)
			}
		}
		if (op == OpDelete || op == OpMove) && ((m.write != nil && m.writeExact) || (inDot && path == cwd)) {
			r := m.write
			if r == nil || (inDot && path == cwd) {
				r = p.dot
			}
			return Deny(TierHard, r, detailIsRoot)
		}
		if m.write != nil {
			return allowIn(m.write, m.writeRoot)
		}
		if inDot {
			return allowIn(p.dot, cwd)
		}
		return Deny(TierSoft, ruleNoWriteRoot, "")
	case op == OpChdir:
		if m.readDeny != nil {
			return Deny(TierHard, m.readDeny, "")
		}
		if m.write != nil {
			return allowIn(m.write, m.writeRoot)
		}
		if inDot {
			return allowIn(p.dot, cwd)
		}
		return Deny(TierSoft, ruleNoChdirRoot, "")
	case op == OpRead:
		if m.readDeny != nil {
			return Deny(TierHard, m.readDeny, "")
		}
		if !p.hasReadRoots {
			return Allow(ruleReadsAllowed)
		}
		switch {
		case m.read != nil:
			return allowIn(m.read, m.readRoot)
		case m.write != nil:
			return allowIn(m.write, m.writeRoot)
		case inDot:
			return allowIn(p.dot, cwd)
		}
		return Deny(TierSoft, ruleNoReadRoot, "")
	}
	return Deny(TierInvalid, ruleNotResolved, "not a filesystem operation")
}

// PathRequest asks about one resolved path; it satisfies audit.Request.
type PathRequest struct {
	Op   Op
	Path string // resolved, clean, absolute
	Cwd  string // the handle's resolved working directory ("." root)
}

// Decide implements audit.Request.
func (r *PathRequest) Decide(p *Policy) Decision { return p.CheckPath(r.Op, r.Path, r.Cwd) }
