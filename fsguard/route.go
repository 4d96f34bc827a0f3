package fsguard

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// Every guarded call takes one route, top to bottom, and each method
// (methods.go) reads as these steps in order:
//
//  1. front: a name no system call can take is refused as the OS refuses
//     it (badName); in Off mode only the scope's rules apply and the call
//     passes through (offGate);
//  2. resolve once (locate): on the OS base, with openat2, a lexically
//     clean name is first decided as written, purely (no callback, no
//     I/O). If the policies allow it, the fast route proves and pins it in
//     one step (pinKind: the file itself opened with no link followed, or
//     its parent opened beneath the write root), so the act later works
//     from that descriptor; if they deny it, one openat2 with no link
//     followed proves the name lands where it is written, so the denial
//     stands. Either proof failing (a link on the way, a file used as a
//     directory) sends the name to policy.Resolve, component by
//     component, and the decision is made again on what it resolved to.
//     A name that cannot be resolved is refused (denyResolve);
//  3. request: what the policies are asked (pathReq, multiReq, pairReq);
//  4. decide once (decide, carry): the hard-link count is looked up only
//     when the policies allowed the call and the rule applies (a denial
//     never needs it); a silent scope's pure allow is the decision; any
//     other answer goes to the audit pipeline with the verdict carried
//     (audit.Scope.CheckDecided), so OnCall, BeforeDeny, the mode and the
//     record see it and nothing decides it again;
//  5. act: from the pinned descriptor on the fast route; otherwise through
//     the os.Root of the write root holding the resolved path (on the base
//     with that path when no root holds it: a call a callback or Warn
//     mode let through). Reads on the slow route act on the resolved path
//     again with no link followed (pinnedRead), so a link swapped in after
//     the decision makes the act fail; the read then starts again from
//     step 2 (at most maxReroutes times). Bases other than the OS, paths
//     under /proc (whose magic links name no path) and kernels without
//     openat2 read by the name as called.
//
// Check (check.go) is the same route with step 5 left out: the call
// carries a dry-run answer (call.dry), the pipeline runs as a dry run, and
// the route returns right after the decision. Its pins never open an
// entry for reading or writing (they use O_PATH), so a dry run has no
// effect a FIFO or a device could see.

// maxReroutes bounds how often a read starts again because its path
// changed between decision and act.
const maxReroutes = 3

// call is one guarded call on its route: what was asked, where it lands,
// what was decided and, on the fast route, what the proof pinned.
type call struct {
	op       policy.Op
	opName   string // the Op of the call's *fs.PathError or *os.LinkError
	name     string // as the caller named it (name2: the second name)
	name2    string
	rname    string // the name resolved, when not name (a trailing "/" cut)
	two      bool   // a two-name call: errors are *os.LinkError
	cwd      string // the working directory the names are taken from
	follow   bool   // a final symbolic link is followed
	linkRule bool   // the hard-link rule applies when the policies allow
	flag     int    // open flags

	ev  audit.Event
	r   resolved // where name lands (r2: name2)
	r2  resolved
	d   policy.Decision // the pure decision on r, made while resolving
	req pathReq         // what decide asks the policies (kept here: no allocation of its own)
	p   pin             // what the fast route's proof holds for the act (p2: for name2)
	p2  *pin            // made by pinRename alone: a pin is a fifth of a call's size

	dry *Decision // a dry run (Check): the answer goes here, nothing acts
	ran bool      // the pipeline ran (a dry run's answer is its Result)
	// pooled: the call came from callPool and goes back to it when its
	// method returns, so the pipeline is handed a copy of ev (carry).
	pooled bool
}

// callPool recycles the calls of the methods whose results keep nothing
// of the call (Stat, LstatIfPossible, OpenFile: they hand back strings,
// a FileInfo of its own, a file). A call is about 900 bytes; allocating
// and clearing a fresh one was a third of a checked Stat's own work on
// the 2-core VM of docs/bench.md, where a system call leaves the caches
// cold, while a recycled one is warm.
var callPool = sync.Pool{New: func() any { return new(call) }}

// pooledCall is newCall from callPool; the method that takes it gives it
// back with putCall once nothing of the call is used any more.
func (f *Fs) pooledCall(op policy.Op, opName, name string) *call {
	c := callPool.Get().(*call)
	c.op, c.opName, c.name, c.cwd, c.pooled = op, opName, name, f.getwd(), true
	c.ev = audit.Event{Protocol: audit.FS, Op: op, Target: name, PassOver: aferoHelpers}
	return c
}

// putCall clears c and gives it back to callPool. Everything a route
// hands out (errors, files, FileInfos, the pipeline's event) is a copy or
// a value of its own, so nothing refers to c afterwards.
func putCall(c *call) {
	*c = call{}
	callPool.Put(c)
}

// newCall starts the route of a one-name call. The working directory is
// read once, here, so the whole call uses the same one even if another
// goroutine moves the handle.
func (f *Fs) newCall(op policy.Op, opName, name string) *call {
	c := &call{op: op, opName: opName, name: name, cwd: f.getwd()}
	c.ev = audit.Event{Protocol: audit.FS, Op: op, Target: name, PassOver: aferoHelpers}
	return c
}

// retry is a fresh call for the same request, for a route that starts
// again (a path that changed between decision and act): the event the
// pipeline saw may be kept by a callback, so it is not reused.
func (c *call) retry() *call {
	n := &call{op: c.op, opName: c.opName, name: c.name, name2: c.name2, two: c.two, rname: c.rname,
		cwd: c.cwd, follow: c.follow, linkRule: c.linkRule, flag: c.flag, dry: c.dry}
	n.ev = audit.Event{Protocol: audit.FS, Op: c.op, Target: c.name, Target2: c.name2, Detail: c.ev.Detail, PassOver: aferoHelpers}
	return n
}

// newCall2 starts the route of a two-name call.
func (f *Fs) newCall2(op policy.Op, opName, oldname, newname string) *call {
	c := f.newCall(op, opName, oldname)
	c.name2, c.two, c.ev.Target2 = newname, true, newname
	return c
}

// acts reports whether the route goes on to act (not a dry run).
func (c *call) acts() bool { return c.dry == nil }

// fail gives err the shape of the call's own errors: an *fs.PathError
// naming the name as called, or an *os.LinkError for two-name calls.
func (c *call) fail(err error) error {
	if err == nil {
		return nil
	}
	if c.two {
		return &os.LinkError{Op: c.opName, Old: c.name, New: c.name2, Err: err}
	}
	return pathErr(c.opName, c.name, err)
}

// offGate is step 1's Off mode: the FS protocol is off for this scope, so
// only the scope's rules apply (a dry run asks the pipeline, which answers
// "mode off"). off reports whether the call passes through.
func (f *Fs) offGate(c *call) (off bool, err error) {
	if !f.off() {
		return false, nil
	}
	if !c.acts() {
		return true, f.carry(c, nil, policy.Decision{})
	}
	if err := f.scope.ErrFor(aferoHelpers...); err != nil {
		return true, c.fail(err)
	}
	return true, nil
}

// ask is the policies' answer to req, asking no callback: the guard's
// policy, then every restriction of the scope, the first denial winning,
// as the pipeline decides.
func (f *Fs) ask(req audit.Request) policy.Decision {
	if f.scope == nil {
		return policy.Deny(policy.TierInvalid, RuleResolve, "no scope")
	}
	d := req.Decide(f.scope.Guard().Policy())
	if !d.Allowed {
		return d
	}
	for _, p := range f.pure.restrict {
		if rd := req.Decide(p); !rd.Allowed {
			return rd
		}
	}
	return d
}

// askPath is ask for one path; it allocates nothing.
func (f *Fs) askPath(op policy.Op, path, cwd string) policy.Decision {
	req := pathReq{op: op, path: path, cwd: cwd}
	if f.scope == nil {
		return policy.Deny(policy.TierInvalid, RuleResolve, "no scope")
	}
	d := req.Decide(f.scope.Guard().Policy())
	if !d.Allowed {
		return d
	}
	for _, p := range f.pure.restrict {
		if rd := req.Decide(p); !rd.Allowed {
			return rd
		}
	}
	return d
}

// fastOK reports whether the fast route may be tried for p.
func (f *Fs) fastOK(p string) bool {
	return fastRoutes && f.isOS && f.scope != nil && !fastOff.Load() && lexicallyClean(p)
}

// locate is step 2 for a one-name call: it resolves c.name once and makes
// the pure decision on where it lands (c.r, c.d), pinning what kind asks
// for when the fast route proves the name. A trailing "/" is kept in
// c.r.slash; a name with one never takes the fast route.
func (f *Fs) locate(c *call, kind pinKind) error {
	name := c.name
	if c.rname != "" {
		name = c.rname
	}
	p := absAt(name, c.cwd)
	fastTried := false
	if c.rname == "" && f.fastOK(p) {
		fastTried = true
		c.r = resolved{path: p}
		c.ev.Resolved = p
		c.d = f.askPath(c.op, p, c.cwd)
		if c.d.Allowed && kind != pinNone && f.pin(c, kind) {
			return nil
		}
		if fastResolve(p, c.follow) {
			return nil
		}
	}
	r, err := f.resolveWith(name, c.cwd, c.follow, !fastTried)
	if err != nil {
		return f.denyResolve(c, err)
	}
	if name != c.name {
		r.slash = true
	}
	c.r = r
	c.ev.Resolved = r.path
	c.d = f.askPath(c.op, r.path, c.cwd)
	return nil
}

// decide is step 4 for a one-name call: the pure decision made while
// resolving, the hard-link rule on top when it applies, then carry.
func (f *Fs) decide(c *call) error {
	c.req = pathReq{op: c.op, path: c.r.path, cwd: c.cwd}
	req := &c.req
	d := c.d
	if d.Allowed && c.linkRule {
		if req.nlink = f.nlinkOf(c); req.nlink > 1 {
			d = policy.Deny(policy.TierHard, RuleMultiLink, detailMultiLink)
		}
	}
	return f.carry(c, req, d)
}

// carry hands the decision d on req to the pipeline, unless it is an
// allow in a silent scope (then it is the decision: an allowed call there
// leaves no trace). A dry run always asks the pipeline, as a dry run. The
// error is in the call's shape.
func (f *Fs) carry(c *call, req audit.Request, d policy.Decision) error {
	ctx := f.ctx
	if !c.acts() {
		c.ran = true
		ctx = audit.WithDryRun(ctx, &c.dry.Result)
	} else if d.Allowed && f.scope.Silent() {
		return nil
	}
	ev := &c.ev
	if c.pooled && f.scope.ShowsEvents() {
		// A callback may keep the event it is shown (retry says so too);
		// a pooled call is reused, so the pipeline gets an event of its
		// own. The route reads nothing the pipeline writes into it.
		// Without a callback nothing keeps it past the pipeline, and
		// c.ev is handed over as it is.
		ev = new(audit.Event)
		*ev = c.ev
	}
	return c.fail(f.scope.CheckDecided(ctx, ev, req, d))
}

// denyResolve handles a name that could not be resolved. The call is never
// carried out. A closed scope answers first. When the failure is the
// kernel's own answer for the same name (a file used as a directory, a
// symbolic-link loop, a permission error while walking), that error is
// returned as the kernel would, so callers such as MkdirAll and Walk
// behave as on the raw filesystem; any other failure runs the pipeline
// with an invalid-tier denial, so it is recorded and reaches the callbacks
// like every denial.
func (f *Fs) denyResolve(c *call, err error) error {
	if serr := f.scope.ErrFor(aferoHelpers...); serr != nil {
		if !c.acts() {
			return f.carry(c, nil, policy.Decision{})
		}
		return c.fail(serr)
	}
	switch {
	case errors.Is(err, policy.ErrNotDir):
		return c.fail(syscall.ENOTDIR)
	case errors.Is(err, policy.ErrTooManyLinks):
		return c.fail(syscall.ELOOP)
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return c.fail(errno)
	}
	detail := resolveDetail(err)
	return f.carry(c, failReq{detail: detail}, policy.Deny(policy.TierInvalid, RuleResolve, detail))
}

// nlinkOf returns the hard-link count of the regular file c resolved to,
// 0 for anything else or when the handle does not enforce the rule. It
// uses what the route already looked at (the pin's fstat, the
// resolution's lstat) before asking the kernel.
func (f *Fs) nlinkOf(c *call) uint64 {
	if f.opts.multiLinkWrites || c.r.missing || c.p.missing {
		return 0
	}
	if n, ok := c.p.nlink(); ok {
		return n
	}
	return f.nlinkAt(c.r)
}

// nlinkAt is nlinkOf for a resolution alone.
func (f *Fs) nlinkAt(r resolved) uint64 {
	if f.opts.multiLinkWrites || r.missing {
		return 0
	}
	fi := r.info
	if fi == nil {
		var err error
		if fi, err = f.lstat(r.path); err != nil {
			return 0
		}
	}
	if !fi.Mode().IsRegular() {
		return 0
	}
	return linkCount(fi)
}

// entry is the route of a call on one entry with nothing to act: the
// decision alone. Check uses it for the ops that stand for one name of a
// two-name call.
func (f *Fs) entry(c *call) error {
	if err := badName(c.opName, c.name); err != nil {
		return err
	}
	if off, err := f.offGate(c); off {
		return err
	}
	if err := f.locate(c, pinNone); err != nil {
		return err
	}
	defer c.p.release()
	return f.decide(c)
}

// carryOut performs an allowed mutation of c's resolved path on the slow
// route: through the os.Root of the deepest write root holding it (path
// relative to that root), or on the base with the resolved path when no
// root does (a call a host callback or Warn mode let through). Errors
// carry the caller's name.
func (f *Fs) carryOut(c *call, inRoot func(*os.Root, string) error, onBase func(string) error) error {
	return f.carryOutAt(c.r, c.opName, c.name, inRoot, onBase)
}

// carryOutAt is carryOut on the resolved path r.
func (f *Fs) carryOutAt(r resolved, opName, name string, inRoot func(*os.Root, string) error, onBase func(string) error) error {
	root, rp, ok, err := f.inRootR(r)
	switch {
	case err != nil:
	case ok:
		err = inRoot(root, rp)
	default:
		err = onBase(r.target())
	}
	return f.renameErr(err, opName, name)
}

// slashedLink reports whether c named, with a trailing "/", an entry that
// is a symbolic link (resolved without following it). mkdir and rmdir never
// follow a final link, so the kernel answers such a name EEXIST or ENOTDIR
// and changes nothing.
func (f *Fs) slashedLink(c *call) bool {
	if !c.r.slash {
		return false
	}
	fi := c.r.info
	if fi == nil {
		var err error
		if fi, err = f.lstat(c.r.path); err != nil {
			return false
		}
	}
	return fi.Mode()&fs.ModeSymlink != 0
}

// trimSlash is name without trailing slashes (name itself when nothing
// else is left).
func trimSlash(name string) string {
	if t := strings.TrimRight(name, "/"); t != "" {
		return t
	}
	return name
}

// pinnedRead reports whether a read of the resolved path p is carried out
// with no link followed (see the route above).
func (f *Fs) pinnedRead(p string) bool {
	return f.isOS && !fastOff.Load() && p != "/proc" && !strings.HasPrefix(p, "/proc/")
}

// pinKind says what the fast route's proof pins for the act (fast_linux.go).
type pinKind uint8

const (
	pinNone   pinKind = iota // nothing: the proof is an openat2 on the path
	pinRead                  // the entry opened for reading from "/", no link followed
	pinWrite                 // the entry opened beneath its write root, without O_CREATE/O_TRUNC
	pinParent                // the parent opened beneath the write root
	pinStat                  // the parent pinned and the entry looked at with fstatat
)

// lexicallyClean reports whether p is absolute with no empty, "." or ".."
// component and no trailing separator: without symbolic links it is its
// own resolution.
func lexicallyClean(p string) bool {
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' {
		return false
	}
	start := 1
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		switch p[start:i] {
		case "", ".", "..":
			return false
		}
		start = i + 1
	}
	return true
}
