package fsguard

import (
	"os"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// Decision is what Check says about one call.
type Decision struct {
	// Result is the pipeline's answer: Allowed (the call would go ahead),
	// Outcome, By, the deciding rule, and Err, the error the call would
	// return for it (an *fs.PathError wrapping the *audit.DenyError, or
	// the kernel's answer for a name that cannot be resolved).
	audit.Result
	// Resolved is where the name lands, as the call resolves it.
	Resolved string
}

// checkOpNames are the *fs.PathError Ops of the calls Check stands for.
var checkOpNames = map[policy.Op]string{
	policy.OpRead: "open", policy.OpWrite: "open", policy.OpCreate: "mkdir", policy.OpDelete: "remove",
	policy.OpAttr: "chmod", policy.OpChdir: "chdir", policy.OpMove: "rename", policy.OpLink: "link",
}

// Check is a dry run of the call op stands for on name: it takes that
// call's own route (route.go: the front, resolution, request and
// decision) and leaves out the act. The scope is checked, every policy is
// asked, OnCall and BeforeDeny are asked with Event.DryRun set, and the FS
// mode applies; nothing is opened for reading or writing or changed,
// nothing is recorded or logged. The answer is the one the call would get
// now; a later call may be decided differently when the filesystem or the
// policy changes in between.
//
// The call each Op stands for: OpRead Open, OpWrite Create, OpCreate
// MkdirAll (a final symbolic link followed, every missing directory
// checked, a read when nothing is missing), OpDelete Remove, OpAttr
// Chmod, OpChdir Chdir; OpMove and OpLink judge one name of Rename and
// Link, the entry itself (for OpLink, with the hard-link rule).
func (f *Fs) Check(op policy.Op, name string) Decision {
	var d Decision
	c := f.newCall(op, checkOpNames[op], name)
	c.dry = &d
	var err error
	switch op {
	case policy.OpRead:
		_, err = f.open(c, os.O_RDONLY, 0)
	case policy.OpWrite:
		_, err = f.open(c, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	case policy.OpCreate:
		err = f.mkdirAll(c, 0o777)
	case policy.OpDelete:
		err = f.remove(c)
	case policy.OpAttr:
		err = f.attr(c, nil, nil)
	case policy.OpChdir:
		err = f.chdir(c)
	case policy.OpMove:
		err = f.entry(c)
	case policy.OpLink:
		c.linkRule = true
		err = f.entry(c)
	default:
		detail := "fsguard has no call for op " + op.String()
		err = f.carry(c, failReq{detail: detail}, policy.Deny(policy.TierInvalid, RuleResolve, detail))
	}
	if !c.ran {
		// The call fails before any decision: a bad name, or a name the
		// kernel refuses to resolve.
		return failed(err)
	}
	d.Err = err
	d.Resolved = c.r.path
	return d
}

// failed is the answer for a call that fails before any decision (a bad
// name, a name the kernel refuses to resolve): it would not go ahead, and
// no rule decided it.
func failed(err error) Decision {
	return Decision{Result: audit.Result{
		Decision: policy.Deny(policy.TierInvalid, RuleResolve, err.Error()),
		Outcome:  audit.Denied, Err: err,
	}}
}
