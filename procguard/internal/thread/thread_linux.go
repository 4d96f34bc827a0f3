//go:build linux

// Package thread runs functions on dedicated, locked OS threads that are
// not the process's main thread. procguard needs such threads twice: to
// restrict one thread with Landlock and start a child from it without
// restricting the host, and to fork sandboxes whose parent-death signal is
// tied to the forking thread (prctl(2) PR_SET_PDEATHSIG fires when that
// thread exits, not the process), so the thread must live as long as the
// host.
package thread

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Spare runs fn on a new goroutine locked to an OS thread that is not the
// main thread, and never unlocks it: when fn returns the runtime
// terminates the thread instead of reusing it, so whatever fn did to the
// thread (a Landlock domain, a seccomp filter, dropped capabilities) never
// reaches other goroutines. The main thread is avoided because Go cannot
// terminate it (a locked goroutine exiting on it wedges it instead) and
// because, as the thread group leader, its state is what other processes
// see of the host.
func Spare(fn func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			fn()
			return // still locked: the thread is discarded
		}
		// On the main thread: keep it while another goroutine, which
		// therefore cannot run here, takes a different thread.
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			fn()
		}()
		<-locked
		runtime.UnlockOSThread() // the main thread was never touched
	}()
}

// Keeper is a pool of locked threads that live as long as the process and
// run the functions they are given, one at a time each. Children forked
// from a Keeper thread with a parent-death signal die with the process,
// never earlier.
type Keeper struct {
	reqs chan func()
}

// NewKeeper starts n threads.
func NewKeeper(n int) *Keeper {
	k := &Keeper{reqs: make(chan func())}
	for range n {
		Spare(func() {
			for fn := range k.reqs {
				fn()
			}
		})
	}
	return k
}

// Do runs fn on one of the keeper's threads and returns when it returned.
func (k *Keeper) Do(fn func()) {
	done := make(chan struct{})
	k.reqs <- func() {
		defer close(done)
		fn()
	}
	<-done
}
