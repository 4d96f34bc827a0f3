//go:build linux

package sandbox

import (
	"context"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Recycling: the sandbox a command ended in is kept, idle, for the next
// command whose spec shares everything a Session's commands share (its
// files, Landlock ruleset, network, supervisor switches). That command is
// forked from the kept init's confined thread as a Session's next
// command is (no re-execution of the host binary, no set-up, no init to
// tear down at its end), after init killed every process the last one
// left, removed its System V IPC objects, emptied the keyrings that
// outlive a process and closed its streams.
//
// The commands a kept sandbox serves one after another share the same
// write roots (they are part of the spec), so what one could leave for
// the next through the sandbox (a POSIX message queue is the only such
// object init cannot remove) it could leave in those roots as well.
var recycled struct {
	sync.Mutex
	idle  []idleSandbox // least recently used first
	timer *time.Timer   // ends the sandboxes idle for maxIdleTime
	off   atomic.Bool   // stored with the lock held; read without it per start
	ends  endCount      // the ends of sandboxes taken out of idle, or discarded
}

type idleSandbox struct {
	s     *Session
	key   string
	since time.Time
}

// endCount counts the sandbox ends under way, which are started and
// waited for from any goroutine at any time (a sync.WaitGroup forbids an
// Add from zero while a Wait is under way: a command ending while
// SetRecycle(false) waits would be one).
type endCount struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; a new one when it rises
}

func (e *endCount) add(n int) {
	if n <= 0 {
		return
	}
	e.mu.Lock()
	if e.n == 0 {
		e.zero = make(chan struct{})
	}
	e.n += n
	e.mu.Unlock()
}

func (e *endCount) done() {
	e.mu.Lock()
	if e.n--; e.n == 0 {
		close(e.zero)
	}
	e.mu.Unlock()
}

// wait returns once no end is under way.
func (e *endCount) wait() {
	e.mu.Lock()
	if e.n == 0 {
		e.mu.Unlock()
		return
	}
	z := e.zero
	e.mu.Unlock()
	<-z
}

// maxIdle bounds the sandboxes kept idle: 8 parallel commands with the
// same policy find one each. An idle sandbox is one sleeping process (its
// init, about 10 MB resident).
const maxIdle = 8

// maxIdleTime is how long an idle sandbox is kept (a variable for tests).
var maxIdleTime = 30 * time.Second

// StartRecycled runs spec's target as Start does, in a sandbox a finished
// command with the same policy left idle when there is one, else in a new
// one; either way the sandbox is kept, idle, for a later command when this
// one ends by itself (recycling, SetRecycle). The target joins spec's
// TreeCgroups itself, before its first instruction (all of the command's
// cgroups: init outlives the command and joins none of them), as a
// Session's commands do.
//
// The Launch behaves as Start's: Process passes signals on to the target
// and Kill ends the sandbox while the command runs; Wait returns the
// command's *os.ProcessState and, for a target that failed, an
// *exec.ExitError. What differs: Process is a handle on the kept init
// that Wait releases (its Signal and Kill fail afterwards, rather than
// reach the sandbox's next command), and the ProcessState is built from
// init's report (the exit code, 128+N for a signal N, as init's own exit
// gives it; Pid is init's; the usage is the target's, see Exit.Usage),
// since the process of the host's that would carry it goes on.
//
// With recycling off (SetRecycle) and the pool on, every command gets a
// new sandbox, which is ended when the command ends, as a kept one would
// be: Wait returns on init's report, and init's exit (its teardown, a few
// milliseconds) happens after it, in the background; SetRecycle(false)
// and SetPrewarm(false) wait for those ends. With the pool off as well,
// or where a ProcessState cannot be made, StartRecycled is Start with the
// target joining the cgroups: Wait returns once init is gone.
// EndsAfterWait says which.
func StartRecycled(ctx context.Context, spec *Spec, stdio Stdio, dial Dialer) (*Launch, error) {
	recycling := Recycling()
	if !recycling && !EndsAfterWait() {
		return Start(ctx, spec, stdio, nil, dial)
	}
	if err := checkFloor(spec); err != nil {
		return nil, err
	}
	var s *Session
	var key string
	if recycling {
		var err error
		if key, err = sessionKey(spec); err != nil {
			return nil, err
		}
		s = takeIdle(key)
	}
	if s == nil {
		s = &Session{recycle: recycling, discard: !recycling}
	}
	l, err := s.start(ctx, spec, key, stdio, dial)
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	// A handle of the command's own (a pidfd), never the trampoline's,
	// which reaps init: on Linux FindProcess does not fail.
	l.recycled = true
	l.Process, _ = os.FindProcess(l.t.proc.Pid)
	return l, nil
}

// Recycling reports whether StartRecycled keeps the sandboxes of its
// commands for later ones: recycling is on (SetRecycle) and this Go's
// os.ProcessState is one Wait knows how to make.
func Recycling() bool {
	return !recycled.off.Load() && canMakeState()
}

// EndsAfterWait reports whether the sandbox StartRecycled runs a command
// in may outlive the command's Wait: kept idle for the next (Recycling),
// or, with recycling off and the pool of ready trampolines on
// (SetPrewarm), ended in the background. The target then joins every
// cgroup of the command (Spec.TreeCgroups) and init none.
func EndsAfterWait() bool {
	if !canMakeState() {
		return false
	}
	if !recycled.off.Load() {
		return true
	}
	pool.Lock()
	defer pool.Unlock()
	return !pool.off
}

// SetRecycle turns recycling (StartRecycled) on (the default) or off; off
// also ends the idle sandboxes and waits for their ends. SetPrewarm(false)
// turns it off too. A host that wants every command in a sandbox that no
// command ran in before turns it off.
func SetRecycle(on bool) {
	recycled.Lock()
	recycled.off.Store(!on)
	var idle []idleSandbox
	if !on {
		idle = recycled.idle
		recycled.idle = nil
		if recycled.timer != nil {
			recycled.timer.Stop()
			recycled.timer = nil
		}
	}
	recycled.Unlock()
	for _, i := range idle {
		_ = i.s.Close()
	}
	recycled.ends.wait()
}

// takeIdle takes the most recently used idle sandbox with key out of the
// idle list.
func takeIdle(key string) *Session {
	recycled.Lock()
	defer recycled.Unlock()
	for i := len(recycled.idle) - 1; i >= 0; i-- {
		if recycled.idle[i].key == key {
			s := recycled.idle[i].s
			recycled.idle = append(recycled.idle[:i], recycled.idle[i+1:]...)
			return s
		}
	}
	return nil
}

// putIdle keeps s, whose command ended and whose sandbox goes on, for a
// later command with key; over maxIdle, the least recently used is ended.
func putIdle(s *Session, key string) {
	recycled.Lock()
	if recycled.off.Load() {
		recycled.Unlock()
		_ = s.Close()
		return
	}
	recycled.idle = append(recycled.idle, idleSandbox{s: s, key: key, since: time.Now()})
	var old *Session
	if len(recycled.idle) > maxIdle {
		old = recycled.idle[0].s
		recycled.idle = recycled.idle[1:]
	}
	if recycled.timer == nil {
		recycled.timer = time.AfterFunc(maxIdleTime, endIdle)
	}
	if old != nil {
		recycled.ends.add(1)
	}
	recycled.Unlock()
	if old != nil {
		go func() {
			defer recycled.ends.done()
			_ = old.Close()
		}()
	}
}

// endIdle ends the sandboxes idle for maxIdleTime and sets the timer for
// the next.
func endIdle() {
	recycled.Lock()
	now := time.Now()
	var old []*Session
	for len(recycled.idle) > 0 && now.Sub(recycled.idle[0].since) >= maxIdleTime {
		old = append(old, recycled.idle[0].s)
		recycled.idle = recycled.idle[1:]
	}
	if recycled.timer != nil {
		if len(recycled.idle) > 0 {
			recycled.timer.Reset(maxIdleTime - now.Sub(recycled.idle[0].since))
		} else {
			recycled.timer = nil
		}
	}
	recycled.ends.add(len(old))
	recycled.Unlock()
	for _, s := range old {
		_ = s.Close()
		recycled.ends.done()
	}
}

// processState mirrors os.ProcessState on Unix, which has no constructor:
// a recycled command's Wait builds one from init's report (exitState).
// canMakeState checks that the mirror is the real layout, field by field;
// where it is not (a later Go), nothing is recycled.
type processState struct {
	pid    int
	status syscall.WaitStatus
	rusage *syscall.Rusage
}

var canMakeState = sync.OnceValue(func() bool {
	real, mirror := reflect.TypeFor[os.ProcessState](), reflect.TypeFor[processState]()
	if real.Size() != mirror.Size() || real.NumField() != mirror.NumField() {
		return false
	}
	for i := range real.NumField() {
		f, g := real.Field(i), mirror.Field(i)
		if f.Name != g.Name || f.Type != g.Type || f.Offset != g.Offset {
			return false
		}
	}
	return true
})

// exitState is the state init's own exit would have given for e (it exits
// with the target's code, 128+N for a signal N), with pid and the
// target's usage.
func exitState(pid int, e *Exit) *os.ProcessState {
	code := e.Code
	if e.Signal != 0 {
		code = 128 + int(e.Signal)
	}
	ru := new(syscall.Rusage)
	if e.Usage != nil {
		*ru = *e.Usage
	}
	return (*os.ProcessState)(unsafe.Pointer(&processState{pid: pid, status: syscall.WaitStatus(code&0xff) << 8, rusage: ru}))
}
