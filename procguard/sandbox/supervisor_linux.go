//go:build linux

package sandbox

import (
	"errors"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/internal/seccomp"
)

// serveSeccomp judges the target's file calls with the scope's policies
// until every filtered task is gone. It is what makes protected names
// uncreatable (they usually do not exist yet, so no mount can cover them)
// and read-denied name patterns unreadable at any depth. It is a policy
// aid, not a wall: a hostile, multi-threaded target can change a path in
// its memory between the check and the kernel's own read
// (seccomp_unotify(2)). The walls are Landlock and the mounts.
func (st *initState) serveSeccomp(listener int) {
	_ = seccomp.Serve(listener, st.stop, st.decide)
}

// decide returns 0 to let the call go on, or the errno it fails with.
//
// Paths under /dev, /proc and /sys are left to Landlock: they hold no
// protected or read-denied names, and /proc/self would name init here,
// not the caller. Reads are judged only against read-deny rules: read
// roots are Landlock's, which also grants what a program needs to load.
// A unix socket may be connected to only inside a write root.
func (st *initState) decide(c *seccomp.Call) unix.Errno {
	for _, p := range c.Paths {
		if under(p.Name, kernelTrees...) && !strings.Contains(p.Name, "..") {
			continue
		}
		real, err := policy.Resolve(policy.OSFS{}, p.Name, "/", p.FollowFinal)
		if err != nil {
			var errno unix.Errno
			if errors.As(err, &errno) {
				return errno
			}
			return unix.EACCES // fail closed
		}
		if under(real, kernelTrees...) {
			continue
		}
		op := c.Op
		if op == policy.OpConnect {
			op = policy.OpWrite
		}
		for _, pol := range st.pols {
			d := pol.CheckPath(op, real, "")
			if d.Allowed {
				continue
			}
			if op == policy.OpRead && (d.Rule == nil || d.Rule.Kind != policy.KindReadDeny) {
				continue
			}
			return unix.EACCES
		}
	}
	return 0
}

var kernelTrees = []string{"/dev", "/proc", "/sys"}

// under reports whether path is one of the roots or beneath one.
func under(path string, roots ...string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, r+"/") {
			return true
		}
	}
	return false
}
