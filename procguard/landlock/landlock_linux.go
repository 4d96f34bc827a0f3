//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/procguard/internal/thread"
)

var (
	abiOnce sync.Once
	abiVal  int
	abiErr  error
)

// ABI returns the Landlock ABI version the kernel offers, or 0 and the
// reason when it offers none.
func ABI() (int, error) {
	abiOnce.Do(func() {
		v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
		switch {
		case e == unix.ENOSYS:
			abiErr = errors.New("landlock: the kernel was built without Landlock (ENOSYS)")
		case e == unix.EOPNOTSUPP:
			abiErr = errors.New("landlock: Landlock is disabled at boot (EOPNOTSUPP; add landlock to lsm=)")
		case e != 0:
			abiErr = fmt.Errorf("landlock: ABI query failed: %w", e)
		default:
			abiVal = int(v)
		}
	})
	return abiVal, abiErr
}

// Start restricts a dedicated OS thread with rs and calls start on it (for
// example exec.Cmd.Start), so the child inherits the domain and the host
// stays unrestricted. The thread is discarded afterwards. If the
// restriction fails, start is not called.
func Start(rs *Ruleset, start func() error) (Status, error) {
	type result struct {
		st  Status
		err error
	}
	ch := make(chan result, 1)
	onSpareThread(func() {
		st, err := rs.restrictThread()
		if err != nil {
			ch <- result{st, err}
			return
		}
		ch <- result{st, start()}
	})
	r := <-ch
	return r.st, r.err
}

// onSpareThread runs fn on a discarded, non-main locked thread.
func onSpareThread(fn func()) { thread.Spare(fn) }

// RestrictThread applies rs to the calling thread, which the caller has
// locked (runtime.LockOSThread) and will never hand back to the runtime:
// a sandbox's last step before exec uses it. no_new_privs is set too.
func (rs *Ruleset) RestrictThread() (Status, error) { return rs.restrictThread() }

type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64 // ABI 4
	scoped     uint64 // ABI 6
}

// restrictThread applies rs to the calling thread, which must be locked.
func (rs *Ruleset) restrictThread() (Status, error) {
	st := Status{}
	if rs.ABI < 1 {
		return st, errors.New("landlock: no ABI")
	}
	handled := HandledFS(rs.ABI)
	attr := rulesetAttr{handledFS: handled}
	// The attribute's size grows with the ABI; pass only what this kernel
	// knows: 8 bytes (fs), 16 with net (ABI 4+), 24 with scopes (ABI 6+).
	size := uintptr(8)
	if rs.ABI >= 4 && rs.DenyTCP {
		attr.handledNet = NetBindTCP | NetConnectTCP
		size = 16
	}
	if rs.ABI >= 6 && rs.Scoped != 0 {
		attr.scoped = rs.Scoped & (ScopeSignal | ScopeAbstractUnixSocket)
		size = unsafe.Sizeof(attr)
	}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return st, fmt.Errorf("landlock: create ruleset: %w", e)
	}
	defer unix.Close(int(fd))
	for _, r := range rs.Rules {
		access := r.Access & handled
		pfd, err := unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			st.Skipped = append(st.Skipped, r.Path+": "+err.Error())
			continue
		}
		var fi unix.Stat_t
		if err := unix.Fstat(pfd, &fi); err == nil && fi.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= fileRights
		}
		pb := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(pfd)}
		_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH,
			uintptr(unsafe.Pointer(&pb)), 0, 0, 0)
		unix.Close(pfd)
		if e != 0 {
			st.Skipped = append(st.Skipped, r.Path+": "+e.Error())
			continue
		}
		st.Rules = append(st.Rules, Rule{Path: r.Path, Access: access})
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return st, fmt.Errorf("landlock: no_new_privs: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return st, fmt.Errorf("landlock: restrict thread: %w", e)
	}
	st.ABI, st.Handled, st.Scoped, st.HandledNet = rs.ABI, handled, attr.scoped, attr.handledNet
	return st, nil
}
