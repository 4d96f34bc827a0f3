//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/procguard/internal/seccomp"
)

// The target inherits its confinement from the thread that starts it.
// Init starts it directly (forkTarget, the fast way) from a locked thread
// that first takes away what the target must not have; where the kernel
// refuses the ptrace stop that sets the rlimits before the target's first
// instruction, init re-executes the host binary as a target stage (pid 2)
// that does the same and execs the target itself (runTarget). Either way
// the steps run in this order:
//   - no_new_privs first: Landlock and seccomp need it, and no set-uid
//     file may undo what follows;
//   - capabilities next, while the thread still holds CAP_SETPCAP in the
//     user namespace (the target must not remount, unmount or unshare its
//     way out of the mounts);
//   - Landlock, then the seccomp filter last (after it, the thread's own
//     file calls wait on init's supervisor);
//   - rlimits: set on the stopped target after exec (fast way), or by the
//     stage after its last allocation; both before the target's first
//     instruction.
type targetState struct {
	spec     targetSpec
	errPipe  *os.File
	report   stageReport
	listener int

	path       *byte
	argv, envv []*byte
}

// fds of the target stage: 0-2 the target's stdio, then these.
const (
	fdStageSpec   = 3 // the spec, from init
	fdStageErr    = 4 // a step's error to init; EOF at exec
	fdStageReport = 5 // the report and seccomp listener to init
	fdStageExtra  = 6 // the target's extra files, to become 3, 4, ...
)

type targetStep struct {
	name string
	run  func(*targetState) error
}

// confineSteps take away from the calling thread, and so from every
// process it starts, what the target must not have.
var confineSteps = []targetStep{
	{"no_new_privs", noNewPrivs},
	{"drop capabilities", dropCapabilities},
	{"landlock", restrictLandlock},
	{"seccomp", installSeccomp},
}

// stageSteps are the target stage's, around confineSteps.
var stageSteps = slices.Concat(
	[]targetStep{{"read spec", readTargetSpec}},
	confineSteps,
	[]targetStep{
		{"prepare exec", prepareExec},
		{"report", sendStageReport},
		{"descriptors", placeExtraFiles},
		{"rlimits", setRlimits},
		{"exec", execTarget},
	})

func runTarget() int {
	runtime.LockOSThread()
	ts := &targetState{errPipe: os.NewFile(fdStageErr, "stage-error"), listener: -1}
	for _, s := range stageSteps {
		if err := s.run(ts); err != nil {
			path := ""
			if s.name == "exec" {
				path = ts.spec.Path
			}
			b, _ := json.Marshal(errorMessage(s.name, path, err))
			_, _ = ts.errPipe.Write(b)
			return 127
		}
	}
	return 127 // not reached: execTarget only returns an error
}

func readTargetSpec(ts *targetState) error {
	f := os.NewFile(fdStageSpec, "spec")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil {
		return err
	}
	// Everything inherited becomes close-on-exec: only stdio reaches the
	// target; the error pipe closing is how init learns the exec worked.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return err
	}
	return json.Unmarshal(b, &ts.spec)
}

func noNewPrivs(*targetState) error {
	return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
}

// dropCapabilities empties the bounding, ambient and inheritable sets, so
// exec gives the target no capability even when its uid is 0 inside.
func dropCapabilities(ts *targetState) error {
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("bounding set, capability %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("ambient set: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("inheritable set: %w", err)
	}
	ts.report.NoCapabilities = true
	return nil
}

func restrictLandlock(ts *targetState) error {
	if ts.spec.Landlock == nil {
		return nil
	}
	st, err := ts.spec.Landlock.RestrictThread()
	ts.report.Landlock = st
	return err
}

func installSeccomp(ts *targetState) error {
	if ts.spec.NoSeccomp {
		return nil
	}
	fd, err := seccomp.Install(seccomp.Filter{Reads: ts.spec.SeccompReads, UnixConnect: true, Exec: ts.spec.ExecJudged})
	if err != nil {
		return err
	}
	ts.listener = fd
	return nil
}

// prepareExec makes every allocation exec needs before the rlimits.
func prepareExec(ts *targetState) error {
	if len(ts.spec.Args) == 0 {
		return errors.New("empty argv")
	}
	var err error
	if ts.path, err = unix.BytePtrFromString(ts.spec.Path); err != nil {
		return err
	}
	if ts.argv, err = cStrings(ts.spec.Args); err != nil {
		return err
	}
	ts.envv, err = cStrings(ts.spec.Env)
	return err
}

// cStrings is a NULL-terminated array of C strings for execve.
func cStrings(ss []string) ([]*byte, error) {
	out := make([]*byte, len(ss)+1)
	for i, s := range ss {
		p, err := unix.BytePtrFromString(s)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// sendStageReport tells init what was applied and hands it the seccomp
// listener; the stage's copy is closed so only init holds it.
func sendStageReport(ts *targetState) error {
	ts.report.Rlimits = rlimitNames(ts.spec.Rlimits)
	b, err := json.Marshal(&ts.report)
	if err != nil {
		return err
	}
	var oob []byte
	if ts.listener >= 0 {
		oob = unix.UnixRights(ts.listener)
	}
	err = unix.Sendmsg(fdStageReport, b, oob, nil, 0)
	if ts.listener >= 0 {
		unix.Close(ts.listener)
	}
	return err
}

// placeExtraFiles moves the extra files from fd 6 on down to 3 on, where
// the target expects them, after moving the error pipe above them. In
// increasing order each source is copied before anything overwrites it.
func placeExtraFiles(ts *targetState) error {
	n := len(ts.spec.Extra)
	if n == 0 {
		return nil
	}
	fd, err := unix.FcntlInt(ts.errPipe.Fd(), unix.F_DUPFD_CLOEXEC, fdStageExtra+n)
	if err != nil {
		return err
	}
	ts.errPipe = os.NewFile(uintptr(fd), "stage-error")
	for i := range n {
		src, dst := fdStageExtra+i, 3+i
		if !ts.spec.Extra[i] { // a nil entry: its number stays closed
			unix.Close(dst)
			continue
		}
		if err := unix.Dup3(src, dst, 0); err != nil {
			return err
		}
	}
	return nil
}

func setRlimits(ts *targetState) error { return prlimits(0, ts.spec.Rlimits) }

// prlimits sets every limit, soft and hard, on pid (0: this process).
func prlimits(pid int, rls []Rlimit) error {
	for _, r := range rls {
		rl := unix.Rlimit{Cur: r.Value, Max: r.Value}
		if err := unix.Prlimit(pid, r.Resource, &rl, nil); err != nil {
			return fmt.Errorf("%s=%d: %w", r.Name, r.Value, err)
		}
	}
	return nil
}

// rlimitNames renders the limits for the report ("cpu=10").
func rlimitNames(rls []Rlimit) []string {
	var out []string
	for _, r := range rls {
		out = append(out, r.Name+"="+strconv.FormatUint(r.Value, 10))
	}
	return out
}

// execTarget replaces the stage with the target. It uses the raw system
// call: the rlimits are already in force and nothing may allocate.
func execTarget(ts *targetState) error {
	_, _, e := syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(ts.path)),
		uintptr(unsafe.Pointer(&ts.argv[0])), uintptr(unsafe.Pointer(&ts.envv[0])))
	return e
}
