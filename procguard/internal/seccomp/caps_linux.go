//go:build amd64 || arm64

package seccomp

import (
	"golang.org/x/sys/unix"
)

// dropCapabilities leaves the calling thread (capabilities are a
// thread's own) no effective capability, and at most CAP_SYS_PTRACE
// permitted, which reading a task's memory and descriptors may need
// (threadCaps raises it for that alone): the calls the
// supervisor performs for a task are checked against the same
// permission bits, owners and mounts as the task's own would be.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	const keep = 1 << unix.CAP_SYS_PTRACE // in the first word
	for i := range data {
		m := uint32(0)
		if i == 0 {
			m = keep
		}
		data[i].Effective = 0 // raised only where needed (threadCaps)
		data[i].Permitted &= m
		data[i].Inheritable = 0
	}
	return unix.Capset(&hdr, &data[0])
}

// threadCaps raises and lowers CAP_SYS_PTRACE in the serving thread's
// effective set. It is raised to read the calling task's memory, open its
// own /proc entries (root, cwd, descriptors) and take its socket, and
// lowered while a walk goes through a proc file system (walker.slow), so
// a name through /proc/<pid>/ of another process is checked as the
// task's own would be; the capability decides nothing else a walk or an
// act does. It belongs to one thread.
type threadCaps struct {
	hdr  unix.CapUserHeader
	data [2]unix.CapUserData
	ok   bool // CAP_SYS_PTRACE is permitted
	on   bool // and effective
}

func (c *threadCaps) init() {
	c.hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if unix.Capget(&c.hdr, &c.data[0]) != nil {
		return
	}
	c.ok = c.data[0].Permitted&(1<<unix.CAP_SYS_PTRACE) != 0
	c.set(true)
}

// set raises (on) or lowers CAP_SYS_PTRACE; without it permitted it does
// nothing.
func (c *threadCaps) set(on bool) {
	if c == nil || !c.ok || c.on == on {
		return
	}
	c.on = on
	if on {
		c.data[0].Effective |= 1 << unix.CAP_SYS_PTRACE
	} else {
		c.data[0].Effective &^= 1 << unix.CAP_SYS_PTRACE
	}
	_ = unix.Capset(&c.hdr, &c.data[0])
}

// dedicate makes the calling thread the serving thread: locked to the
// goroutine for good (the runtime ends it when the goroutine returns), a
// file-system context of its own (so setting the umask for a task's
// create touches no other thread), no capability but CAP_SYS_PTRACE, and
// asynchronous signals blocked (see blockAsyncSignals).
func dedicate() error {
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return err
	}
	if err := blockAsyncSignals(); err != nil {
		return err
	}
	return dropCapabilities()
}

// blockAsyncSignals blocks, on the calling thread only, every signal
// another thread or process could send it, so none interrupts the wait in
// SECCOMP_IOCTL_NOTIF_ADDFD (see server.addFd): the Go runtime's
// preemption (SIGURG, which it sends only to threads running Go code, and
// this one waits in a system call there) and profiling signals, SIGCHLD,
// the signals a host forwards. Process-directed signals go to the
// process's other threads. Left open: the faults the thread itself raises
// (the runtime turns them into panics and crash reports), SIGABRT, and
// the two signals glibc and Go's runtime send every thread of the process
// to change its credentials (32 and 33, which they wait for each thread to
// take). SIGKILL and SIGSTOP cannot be blocked.
func blockAsyncSignals() error {
	var set unix.Sigset_t
	for sig := unix.Signal(1); sig <= 64; sig++ {
		switch sig {
		case unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP, unix.SIGSYS,
			unix.SIGABRT, unix.SIGKILL, unix.SIGSTOP, 32, 33:
			continue
		}
		set.Val[(sig-1)/64] |= 1 << ((sig - 1) % 64)
	}
	return unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil)
}
