// Package landlock confines one OS thread (and the children it starts) with
// Linux Landlock filesystem rules, leaving the rest of the process free.
//
// Landlock domains apply per thread and are inherited by children. Start
// locks a dedicated goroutine to its thread, restricts that thread only,
// starts the child from it and lets the goroutine exit still locked, so the
// Go runtime discards the thread instead of reusing it. New runtime threads
// are cloned from the runtime's template thread, never from a restricted
// one, so the restriction cannot leak into the host.
package landlock

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Filesystem access rights, as in <linux/landlock.h>.
const (
	Execute    = unix.LANDLOCK_ACCESS_FS_EXECUTE
	WriteFile  = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	ReadFile   = unix.LANDLOCK_ACCESS_FS_READ_FILE
	ReadDir    = unix.LANDLOCK_ACCESS_FS_READ_DIR
	RemoveDir  = unix.LANDLOCK_ACCESS_FS_REMOVE_DIR
	RemoveFile = unix.LANDLOCK_ACCESS_FS_REMOVE_FILE
	MakeChar   = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR
	MakeDir    = unix.LANDLOCK_ACCESS_FS_MAKE_DIR
	MakeReg    = unix.LANDLOCK_ACCESS_FS_MAKE_REG
	MakeSock   = unix.LANDLOCK_ACCESS_FS_MAKE_SOCK
	MakeFifo   = unix.LANDLOCK_ACCESS_FS_MAKE_FIFO
	MakeBlock  = unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
	MakeSym    = unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	Refer      = unix.LANDLOCK_ACCESS_FS_REFER     // ABI 2
	Truncate   = unix.LANDLOCK_ACCESS_FS_TRUNCATE  // ABI 3
	IoctlDev   = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV // ABI 5

	// ReadExec is what every path outside the writable roots keeps.
	ReadExec = ReadFile | ReadDir | Execute
	// fileRights are the rights that apply to a regular file rule.
	fileRights = Execute | WriteFile | ReadFile | Truncate | IoctlDev
)

// HandledFS returns the filesystem rights Landlock ABI abi can restrict.
func HandledFS(abi int) uint64 {
	if abi < 1 {
		return 0
	}
	h := uint64(Execute | WriteFile | ReadFile | ReadDir | RemoveDir | RemoveFile | MakeChar |
		MakeDir | MakeReg | MakeSock | MakeFifo | MakeBlock | MakeSym)
	if abi >= 2 {
		h |= Refer
	}
	if abi >= 3 {
		h |= Truncate
	}
	if abi >= 5 {
		h |= IoctlDev
	}
	return h
}

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

// Rule grants rights on a path and everything beneath it.
type Rule struct {
	Path   string
	Access uint64
}

// Ruleset is a set of path rules under one ABI.
type Ruleset struct {
	ABI   int
	Rules []Rule
}

// Status says exactly what a Ruleset enforced.
type Status struct {
	ABI     int    // the ABI used, 0 when nothing was enforced
	Handled uint64 // the rights the domain restricts
	// Rules are the rules actually added (paths that exist), in order.
	Rules []Rule
	// Skipped lists rules that could not be added, with the reason.
	Skipped []string
}

// String renders the status for events and logs.
func (s Status) String() string {
	if s.ABI == 0 {
		return "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "abi %d fs=%#x", s.ABI, s.Handled)
	for _, r := range s.Rules {
		fmt.Fprintf(&b, " %s:%s", r.Path, AccessString(r.Access))
	}
	return b.String()
}

// AccessString renders rights compactly: "rx", "rwx", "rw".
func AccessString(a uint64) string {
	var s string
	if a&(ReadFile|ReadDir) != 0 {
		s += "r"
	}
	if a&(WriteFile|MakeReg|RemoveFile) != 0 {
		s += "w"
	}
	if a&Execute != 0 {
		s += "x"
	}
	return s
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
	go func() {
		// Never unlocked: when this goroutine returns, the runtime
		// terminates its restricted thread instead of reusing it.
		runtime.LockOSThread()
		st, err := rs.restrictThread()
		if err != nil {
			ch <- result{st, err}
			return
		}
		ch <- result{st, start()}
	}()
	r := <-ch
	return r.st, r.err
}

type rulesetAttr struct {
	handledFS uint64
}

// restrictThread applies rs to the calling thread, which must be locked.
func (rs *Ruleset) restrictThread() (Status, error) {
	st := Status{}
	if rs.ABI < 1 {
		return st, errors.New("landlock: no ABI")
	}
	handled := HandledFS(rs.ABI)
	attr := rulesetAttr{handledFS: handled}
	// Only handled_access_fs is set, so the 8-byte size of ABI 1 works on
	// every kernel (newer kernels zero-fill the fields they know beyond it).
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
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
	st.ABI, st.Handled = rs.ABI, handled
	return st, nil
}

// Normalize sorts rules by path and merges duplicates; useful for stable
// reports.
func (rs *Ruleset) Normalize() {
	m := map[string]uint64{}
	for _, r := range rs.Rules {
		m[r.Path] |= r.Access
	}
	rs.Rules = rs.Rules[:0]
	for p, a := range m {
		rs.Rules = append(rs.Rules, Rule{p, a})
	}
	sort.Slice(rs.Rules, func(i, j int) bool { return rs.Rules[i].Path < rs.Rules[j].Path })
}

// Exists reports whether path exists (only existing paths can be rules).
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
