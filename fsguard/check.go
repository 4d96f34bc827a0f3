package fsguard

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

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

// checkRoute is how the call an Op stands for resolves its name and
// builds its request: the same arguments the method passes to single.
type checkRoute struct {
	opName   string // the method's *fs.PathError Op
	follow   bool   // a final symbolic link is followed
	linkRule bool   // the hard-link rule applies
	flag     int    // open flags, for the event's Detail
}

// checkRoutes maps each Op to the method Check stands for:
//
//	OpRead   Open (O_RDONLY)
//	OpWrite  Create (O_RDWR|O_CREATE|O_TRUNC)
//	OpCreate MkdirAll (see checkMkdirAll)
//	OpDelete Remove
//	OpAttr   Chmod
//	OpChdir  Chdir
//	OpMove   one name of Rename (the entry itself)
//	OpLink   the old name of Link (the entry itself, hard-link rule)
var checkRoutes = map[policy.Op]checkRoute{
	policy.OpRead:   {opName: "open", follow: true, flag: os.O_RDONLY},
	policy.OpWrite:  {opName: "open", follow: true, linkRule: true, flag: os.O_RDWR | os.O_CREATE | os.O_TRUNC},
	policy.OpDelete: {opName: "remove"},
	policy.OpAttr:   {opName: "chmod", follow: true, linkRule: true},
	policy.OpChdir:  {opName: "chdir", follow: true},
	policy.OpMove:   {opName: "rename"},
	policy.OpLink:   {opName: "link", linkRule: true},
}

// Check is a dry run of the call op stands for on name: it takes that
// call's route (resolution, request, pipeline) and stops before the act.
// The scope is checked, every policy is asked, OnCall and BeforeDeny are
// asked with Event.DryRun set, and the FS mode applies; nothing is opened
// or changed, nothing is recorded or logged. The answer is the one the
// call would get now; a later call may be decided differently when the
// filesystem or the policy changes in between.
//
// The call each Op stands for: OpRead Open, OpWrite Create, OpCreate
// MkdirAll (a final symbolic link followed, every missing directory
// checked, a read when nothing is missing), OpDelete Remove, OpAttr
// Chmod, OpChdir Chdir; OpMove and OpLink judge one name of Rename and
// Link, the entry itself.
func (f *Fs) Check(op policy.Op, name string) Decision {
	rt, ok := checkRoutes[op]
	if op == policy.OpCreate {
		rt, ok = checkRoute{opName: "mkdir", follow: true}, true
	}
	ev := &audit.Event{Protocol: audit.FS, Op: op, Target: name, PassOver: aferoHelpers}
	if rt.opName == "open" {
		ev.Detail = flagString(rt.flag)
	}
	if !ok {
		return f.dry(rt.opName, name, ev, failReq{detail: "fsguard has no call for op " + op.String()}, "")
	}
	if err := badName(rt.opName, name); err != nil {
		return failed(err)
	}
	if err := f.scope.ErrFor(aferoHelpers...); err != nil {
		return f.dry(rt.opName, name, ev, nil, "")
	}
	if f.off() {
		return f.dry(rt.opName, name, ev, nil, "")
	}
	cwd := f.getwd()
	r, err := f.resolve(name, cwd, rt.follow)
	if err != nil {
		// As denyResolve: the kernel's own answer where it has one, else
		// an invalid-tier denial through the pipeline.
		if errors.Is(err, policy.ErrNotDir) || errors.Is(err, policy.ErrTooManyLinks) || isErrno(err) {
			return failed(pathErr(rt.opName, name, f.denyResolve(ev, err)))
		}
		return f.dry(rt.opName, name, ev, failReq{detail: resolveDetail(err)}, "")
	}
	ev.Resolved = r.path
	if op == policy.OpCreate {
		return f.dry(rt.opName, name, ev, f.mkdirAllReq(ev, r, cwd), r.path)
	}
	req := &pathReq{op: op, path: r.path, cwd: cwd}
	if rt.linkRule {
		req.nlink = f.nlinkOf(r)
	}
	return f.dry(rt.opName, name, ev, req, r.path)
}

// mkdirAllReq builds MkdirAll's request for a resolved name: a create of
// every directory it would make, outermost first, or a read of the
// existing entry when none is missing (ev.Op becomes OpRead then).
func (f *Fs) mkdirAllReq(ev *audit.Event, r resolved, cwd string) audit.Request {
	var req multiReq
	if r.info == nil {
		for p := r.path; p != "/"; p = parentOf(p) {
			if _, err := f.lstat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
				break
			}
			req = append(req, pathReq{op: policy.OpCreate, path: p, cwd: cwd})
		}
	}
	if len(req) == 0 {
		ev.Op = policy.OpRead
		ev.Detail = "MkdirAll of an existing entry"
		return &pathReq{op: policy.OpRead, path: r.path, cwd: cwd}
	}
	for i, j := 0, len(req)-1; i < j; i, j = i+1, j-1 {
		req[i], req[j] = req[j], req[i]
	}
	return req
}

// dry runs the pipeline as a dry run and gives a denial the call's shape.
func (f *Fs) dry(opName, name string, ev *audit.Event, req audit.Request, resolved string) Decision {
	res := f.scope.DryRun(f.ctx, ev, req)
	if res.Err != nil {
		res.Err = pathErr(opName, name, res.Err)
	}
	return Decision{Result: res, Resolved: resolved}
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

func isErrno(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno)
}
