//go:build linux

package sandbox

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/internal/seccomp"
	"github.com/auditguard/auditguard/procguard/landlock"
)

// startSupervisor starts serving the target's trapped calls on listener.
func (st *initState) startSupervisor(listener int) error {
	st.report.Seccomp = true
	st.report.SeccompReads = st.needsReads()
	if st.spec.ExecJudged {
		x, err := newExecs()
		if err != nil {
			return err
		}
		st.execs = x
		st.report.Exec = true
	}
	st.serveSeccomp(listener)
	return nil
}

// serveSeccomp starts judging the target's file calls with the scope's
// policies, on the serving thread (made while init waited, see
// prepareServing), until every filtered task is gone; it returns at once.
// The supervisor performs the allowed calls itself on the objects it
// judged (see package seccomp): what a call names is
// resolved once, in the calling task's context, so neither a /proc alias,
// a link, nor another thread rewriting the name can make the kernel act
// on something other than what was judged. It is what makes protected
// names uncreatable (they usually do not exist yet, so no mount can cover
// them) and read-denied files unreadable at any depth and by any name.
func (st *initState) serveSeccomp(listener int) {
	st.readRules = readRules(st.spec.Landlock)
	h := seccomp.Handler{
		Decide: st.decide,
		// No process of the sandbox holds a capability or can make a
		// user namespace to regain one: none can chroot.
		FixedRoot: st.report.NoUserNamespaces,
		Floor:     st.trapFloor,
		Confine: func() error {
			if st.spec.Landlock == nil {
				return nil
			}
			_, err := st.spec.Landlock.RestrictThread()
			return err
		},
	}
	if st.execs != nil {
		h.BeforeExec = st.beforeExec
		h.Events = &seccomp.Events{Fd: st.execs.efd, Handle: st.handleTraceEvents}
	}
	st.serving.Start(listener, st.stop, h)
}

// decide returns 0 to let the call go on, or the errno it fails with. The
// names are resolved: absolute, clean, links followed as the call follows
// them.
//
// Names under /dev, /proc and /sys are left to Landlock and the mounts:
// they hold no protected or read-denied names. A read is refused for a
// read-deny rule, for a file known read-denied by its inode (a hard link
// made before the command to a file the scan masked), and outside what
// the Landlock ruleset lets the target read (the supervisor opens the
// file, so it checks what Landlock would). The old name of a move or a
// link must not be read-denied: that would give the file a name no rule
// covers. A unix socket may be connected to only inside a write root.
func (st *initState) decide(c *seccomp.Call) unix.Errno {
	if c.Exec != nil {
		return st.decideExec(c)
	}
	reason, denied := st.verdict(c)
	switch {
	case !denied && (!st.spec.AskAllowed || st.ctl == nil):
		return 0
	case !denied:
		// The host wants allowed calls seen (Spec.AskAllowed): it records
		// the call and may refuse it.
		if st.askHost(c, "", true) {
			return 0
		}
	case st.ctl != nil && st.askHost(c, reason, false):
		return 0
	}
	return unix.EACCES
}

// verdict is the supervisor's own answer: denied, and why when no policy
// rule says so.
func (st *initState) verdict(c *seccomp.Call) (reason string, denied bool) {
	for i, p := range c.Paths {
		if p.Name == "" || under(p.Name, kernelTrees...) {
			continue // a pipe or socket with no name, or a kernel tree
		}
		op := c.Op
		if op == policy.OpConnect {
			op = policy.OpWrite
		}
		source := i == 0 && (op == policy.OpMove || op == policy.OpLink)
		if p.Ino != 0 && st.secret(p.Dev, p.Ino) && (op == policy.OpRead || source) {
			return "the file is read-denied (known by its inode)", true
		}
		if op == policy.OpRead && !st.readable(p.Name) {
			return "the Landlock ruleset does not let the command read it", true
		}
		if source && p.Mode != unix.S_IFLNK && st.denied(policy.OpRead, p.Name, policy.KindReadDeny) {
			return "a read-denied file may not be given another name", true
		}
		for _, pol := range st.pols {
			d := pol.CheckPath(op, p.Name, "")
			if d.Allowed {
				continue
			}
			if op == policy.OpRead && (d.Rule == nil || d.Rule.Kind != policy.KindReadDeny) {
				continue // read roots are Landlock's (readable above)
			}
			if op == policy.OpRead && p.Ino != 0 {
				st.markSecret(p.Dev, p.Ino)
			}
			return "", true
		}
	}
	return "", false
}

// askHost sends a call to the host (Spec.Judge), refused or, with
// allowed, allowed, and waits, at most JudgeTimeout, for its judgement:
// true lets the call go on.
func (st *initState) askHost(c *seccomp.Call, reason string, allowed bool) bool {
	fc := &FileCall{Pid: c.Pid, Call: c.Name, Op: c.Op, Reason: reason, Allowed: allowed}
	for _, p := range c.Paths {
		if allowed && (p.Name == "" || under(p.Name, kernelTrees...)) {
			continue // not judged by name (verdict): nothing to say
		}
		fc.Paths = append(fc.Paths, p.Name)
	}
	if allowed && len(fc.Paths) == 0 {
		return true
	}
	return st.ask(message{Event: "file", File: fc}, &fc.ID).Allow
}

// ask sends m to the host with a new judgement id (stored in *id first)
// and waits, at most JudgeTimeout, for the host's judgement of it. A host
// that does not answer in time, or an answer that cannot be read, is a
// refusal; a late answer is skipped when the next one is read.
func (st *initState) ask(m message, id *uint64) judgement {
	if st.execs != nil {
		st.execs.flush(st) // the host records in the order things ran
	}
	st.judged++
	*id = st.judged
	st.send(m)
	deadline := time.Now().Add(JudgeTimeout)
	buf := make([]byte, 512)
	for {
		for {
			line, rest, ok := bytes.Cut(st.ctlBuf, []byte{'\n'})
			if !ok {
				break
			}
			st.ctlBuf = rest
			var j judgement
			if json.Unmarshal(line, &j) == nil && j.ID == *id {
				st.ctlBuf = slices.Clip(st.ctlBuf)
				return j
			}
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return judgement{}
		}
		fds := []unix.PollFd{{Fd: int32(st.ctl.Fd()), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(wait/time.Millisecond)+1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return judgement{}
		}
		r, err := unix.Read(int(st.ctl.Fd()), buf)
		if err != nil || r <= 0 {
			st.ctl = nil // the host went away: refusals stand from now on
			return judgement{}
		}
		if len(st.ctlBuf) > 1<<16 {
			st.ctlBuf = nil
		}
		st.ctlBuf = append(st.ctlBuf, buf[:r]...)
	}
}

// secrets are the read-denied files the sandbox knows by inode: those the
// scan masked (whose other hard links no mask covers) and those the
// supervisor refused to read. The scan fills it before the supervisor
// starts, and only the supervisor's goroutine touches it after: no lock.
type secrets map[[2]uint64]bool

func (st *initState) markSecret(dev, ino uint64) {
	if st.secrets == nil {
		st.secrets = secrets{}
	}
	st.secrets[[2]uint64{dev, ino}] = true
}

func (st *initState) secret(dev, ino uint64) bool { return st.secrets[[2]uint64{dev, ino}] }

// readRules are the directories (and files) the Landlock ruleset lets the
// target read, or nil when it reads everywhere.
func readRules(rs *landlock.Ruleset) []string {
	if rs == nil {
		return nil
	}
	var out []string
	for _, r := range rs.Rules {
		if r.Access&(landlock.ReadFile|landlock.ReadDir) == 0 {
			continue
		}
		if r.Path == "/" {
			return nil
		}
		out = append(out, r.Path)
	}
	if out == nil {
		out = []string{} // reads nothing: not the same as everywhere
	}
	return out
}

// readable reports whether the Landlock ruleset lets the target read
// path: the supervisor, which opens the file for it, is not under
// Landlock itself.
func (st *initState) readable(path string) bool {
	if st.readRules == nil {
		return true
	}
	return under(path, st.readRules...)
}

var kernelTrees = []string{"/dev", "/proc", "/sys"}

// under reports whether path is one of the roots or beneath one.
func under(path string, roots ...string) bool {
	for _, r := range roots {
		if path == r || r == "/" || strings.HasPrefix(path, r+"/") {
			return true
		}
	}
	return false
}
