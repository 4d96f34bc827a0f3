//go:build linux

package sandbox

import (
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/internal/seccomp"
	"github.com/auditguard/auditguard/procguard/landlock"
)

// serveSeccomp judges the target's file calls with the scope's policies
// until every filtered task is gone, and performs the allowed ones itself
// on the objects it judged (see package seccomp): what a call names is
// resolved once, in the calling task's context, so neither a /proc alias,
// a link, nor another thread rewriting the name can make the kernel act
// on something other than what was judged. It is what makes protected
// names uncreatable (they usually do not exist yet, so no mount can cover
// them) and read-denied files unreadable at any depth and by any name.
func (st *initState) serveSeccomp(listener int) {
	st.readRules = readRules(st.spec.Landlock)
	confine := func() error {
		if st.spec.Landlock == nil {
			return nil
		}
		_, err := st.spec.Landlock.RestrictThread()
		return err
	}
	_ = seccomp.ServeConfined(listener, st.stop, st.decide, confine)
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
	for i, p := range c.Paths {
		if p.Name == "" || under(p.Name, kernelTrees...) {
			continue // a pipe or socket with no name, or a kernel tree
		}
		op := c.Op
		if op == policy.OpConnect {
			op = policy.OpWrite
		}
		if p.Ino != 0 && st.secret(p.Dev, p.Ino) && (op == policy.OpRead || i == 0 && (op == policy.OpMove || op == policy.OpLink)) {
			return unix.EACCES
		}
		if op == policy.OpRead && !st.readable(p.Name) {
			return unix.EACCES
		}
		if i == 0 && (op == policy.OpMove || op == policy.OpLink) && p.Mode != unix.S_IFLNK && st.denied(policy.OpRead, p.Name, policy.KindReadDeny) {
			return unix.EACCES
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
			return unix.EACCES
		}
	}
	return 0
}

// secrets are the read-denied files the sandbox knows by inode: those the
// scan masked (whose other hard links no mask covers) and those the
// supervisor refused to read.
type secrets struct {
	mu  sync.Mutex
	ids map[[2]uint64]bool
}

func (st *initState) markSecret(dev, ino uint64) {
	st.secrets.mu.Lock()
	if st.secrets.ids == nil {
		st.secrets.ids = map[[2]uint64]bool{}
	}
	st.secrets.ids[[2]uint64{dev, ino}] = true
	st.secrets.mu.Unlock()
}

func (st *initState) secret(dev, ino uint64) bool {
	st.secrets.mu.Lock()
	defer st.secrets.mu.Unlock()
	return st.secrets.ids[[2]uint64{dev, ino}]
}

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
