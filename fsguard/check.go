package fsguard

import (
	"github.com/auditguard/auditguard/policy"
)

// Check reports what the policies in force would decide for op on name,
// and where name resolves, without acting: nothing is opened or changed,
// no host callback is asked and nothing is recorded. Reads, writes, attr
// changes and chdir follow a final symbolic link; delete, move, create and
// link act on the entry itself. err is the scope's error (no scope, or a
// released one) or the resolution error; the decision then denies.
func (f *Fs) Check(op policy.Op, name string) (d policy.Decision, resolvedPath string, err error) {
	if err := f.scope.ErrFor(aferoHelpers...); err != nil {
		return policy.Deny(policy.TierInvalid, RuleResolve, "no open scope"), "", err
	}
	follow := true
	switch op {
	case policy.OpDelete, policy.OpMove, policy.OpLink, policy.OpCreate:
		follow = false
	}
	cwd := f.getwd()
	r, err := f.resolve(name, cwd, follow)
	if err != nil {
		return failReq{detail: resolveDetail(err)}.Decide(nil), "", err
	}
	req := &pathReq{op: op, path: r.path, cwd: cwd}
	switch op {
	case policy.OpWrite, policy.OpAttr, policy.OpLink:
		req.nlink = f.nlinkOf(r)
	}
	for _, p := range f.scope.Policies() {
		if d = req.Decide(p); !d.Allowed {
			return d, r.path, nil
		}
	}
	return d, r.path, nil
}
