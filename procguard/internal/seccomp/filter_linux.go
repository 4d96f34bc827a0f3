//go:build amd64 || arm64

package seccomp

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install loads the filter on the calling thread only (no TSYNC) and
// returns the listener fd, which Serve takes (it is O_CLOEXEC). The caller
// has locked the goroutine to its thread (runtime.LockOSThread), set
// PR_SET_NO_NEW_PRIVS on it, and must never unlock it: tasks it forks or
// execs afterwards inherit the filter, and a filtered thread handed back
// to the Go scheduler would run other goroutines' calls through it. A
// goroutine that exits while locked makes the runtime end its thread,
// except on the main thread, which is kept asleep (then the listener
// never reports that every filtered task is gone).
func Install(f Filter) (listener int, err error) {
	prog, err := f.program()
	if err != nil {
		return -1, err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19): once Serve has
	// taken a notification, only a fatal signal interrupts the task's
	// wait. Without it, a signal (Go's preemption SIGURG, a SIGCHLD)
	// withdraws the call and restarts it, and a busy task can keep a slow
	// supervisor deciding the same call over and over.
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if e == unix.EINVAL {
		flags &^= unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
		fd, _, e = unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	}
	switch e {
	case 0:
		return int(fd), nil
	case unix.EACCES:
		return -1, fmt.Errorf("seccomp: install filter: %w (the thread needs no_new_privs or CAP_SYS_ADMIN)", os.NewSyscallError("seccomp", e))
	case unix.EBUSY:
		return -1, fmt.Errorf("seccomp: install filter: %w (the thread already carries a user-notification filter)", os.NewSyscallError("seccomp", e))
	}
	return -1, fmt.Errorf("seccomp: install filter: %w", os.NewSyscallError("seccomp", e))
}

// program compiles f into classic BPF. The layout:
//
//	load arch; not auditArch -> kill
//	load nr; x32 bit set -> kill (amd64)
//	nr == listed call -> its action (one compare per call)
//	allow
//	per open flags argument i: load low half of args[i]; write flag -> notify, else allow
//	notify / refuse (EPERM) / kill / allow
//
// Unlisted calls are allowed. Jumps only go forward, so the program ends.
func (f Filter) program() ([]unix.SockFilter, error) {
	var a assembler
	a.load(offArch)
	a.jump(unix.BPF_JEQ, auditArch, next, lKill)
	a.load(offNr)
	if x32Bit != 0 {
		a.jump(unix.BPF_JSET, x32Bit, lKill, next)
	}
	var flagArgs []int8
	for _, list := range [][]entry{commonCalls, archCalls} {
		for _, e := range list {
			to := lNotify
			switch e.call.trap {
			case trapRefuse:
				to = lRefuse
			case trapConnect:
				if !f.UnixConnect {
					continue
				}
			case trapExec:
				if !f.Exec {
					continue
				}
			case trapWrites:
				if !f.Reads {
					to = lFlags + label(e.call.flags)
					if !slices.Contains(flagArgs, e.call.flags) {
						flagArgs = append(flagArgs, e.call.flags)
					}
				}
			}
			a.jump(unix.BPF_JEQ, e.nr, to, next)
		}
	}
	a.ret(unix.SECCOMP_RET_ALLOW)
	for _, i := range flagArgs {
		a.mark(lFlags + label(i))
		a.load(offArgs + 8*uint32(i))
		a.jump(unix.BPF_JSET, openWriteFlags, lNotify, lAllow)
	}
	a.mark(lNotify)
	a.ret(unix.SECCOMP_RET_USER_NOTIF)
	a.mark(lRefuse)
	a.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	a.mark(lKill)
	a.ret(unix.SECCOMP_RET_KILL_PROCESS)
	a.mark(lAllow)
	a.ret(unix.SECCOMP_RET_ALLOW)
	return a.link()
}

// label names a jump target in the program; next is the instruction that
// follows.
type label int

const (
	next label = iota
	lNotify
	lRefuse
	lKill
	lAllow
	lFlags // lFlags+i checks the open flags in argument i
)

// assembler collects BPF instructions whose jumps name labels, and turns
// the labels into the 8-bit forward offsets classic BPF wants.
type assembler struct {
	ins    []unix.SockFilter
	jumps  []jumpTo
	labels map[label]int
}

type jumpTo struct {
	at     int
	jt, jf label
}

func (a *assembler) load(off uint32) {
	a.ins = append(a.ins, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

func (a *assembler) ret(k uint32) {
	a.ins = append(a.ins, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k})
}

// jump compares the accumulator with k (BPF_JEQ: equal; BPF_JSET: any
// common bit) and goes to jt when true, jf when false.
func (a *assembler) jump(op uint16, k uint32, jt, jf label) {
	a.jumps = append(a.jumps, jumpTo{len(a.ins), jt, jf})
	a.ins = append(a.ins, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

func (a *assembler) mark(l label) {
	if a.labels == nil {
		a.labels = map[label]int{}
	}
	a.labels[l] = len(a.ins)
}

func (a *assembler) link() ([]unix.SockFilter, error) {
	offset := func(from int, to label) (uint8, error) {
		if to == next {
			return 0, nil
		}
		at, ok := a.labels[to]
		if !ok {
			return 0, fmt.Errorf("seccomp: BPF label %d not placed", to)
		}
		d := at - from - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("seccomp: BPF jump of %d instructions", d)
		}
		return uint8(d), nil
	}
	for _, j := range a.jumps {
		jt, err1 := offset(j.at, j.jt)
		jf, err2 := offset(j.at, j.jf)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		a.ins[j.at].Jt, a.ins[j.at].Jf = jt, jf
	}
	if len(a.ins) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp: BPF program of %d instructions", len(a.ins))
	}
	return a.ins, nil
}
