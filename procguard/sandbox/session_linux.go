//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A Session runs commands one after another in one sandbox: the first
// command's Start builds it (namespaces, masks, binds, the read-only root,
// the confinement of init's command thread, the supervisor), and each
// later command with the same policy is forked from init's already
// confined thread, with none of that done again and no init to start or
// tear down. A shell session that starts a program per command pays a
// sandbox's set-up once.
//
// What each command gets is what a sandbox of its own would give it: the
// same Landlock domain, seccomp filter and supervisor (they are the
// session's, built from the same spec), its own argv, environment,
// directory, streams, rlimits and tree cgroups, and an empty sandbox.
// When a command's target ends, init kills every process it left
// (background jobs, daemons) and reaps them before it says how the
// target ended, so nothing of one command reaches into the next. What a
// command wrote to the filesystem stays, as it would without a session.
//
// A command whose spec differs from the session's in anything but those
// per-command parts (its files, Landlock ruleset, network, supervisor
// switches: a policy reload) ends the session's sandbox and starts a new
// one; so does a command that finds a path the sandbox holds (a write
// root, a mask, a read-only bind, a Landlock rule's path) naming another
// object than when the sandbox was built (held_linux.go). A command
// killed by its host (a timeout, a cancellation) ends the sandbox with
// it; the next command starts a new one. Where the kernel refuses ptrace
// the target starts through a stage that confines itself, not init's
// thread: that sandbox runs one command and the next starts a new one.
//
// A Session is safe for concurrent use; it runs one command at a time,
// and Start returns ErrSessionBusy while one runs (a caller starts that
// command in a sandbox of its own). The zero value is ready to use;
// Close ends the sandbox.
type Session struct {
	mu     sync.Mutex
	t      *trampoline // nil: no sandbox yet, or it ended
	key    string      // the spec's session-wide part (sessionKey)
	busy   bool
	cur    *Launch // the command that runs, once started
	closed bool
	// recycle: a sandbox of StartRecycled's, put back among the idle
	// ones when its command ends.
	recycle bool
	// discard: a sandbox of StartRecycled's with recycling off, ended in
	// the background when its command ends (EndsAfterWait).
	discard bool

	dial atomic.Pointer[Dialer] // the running command's dialer
}

// ErrSessionBusy is returned by Session.Start while a command of the
// session runs.
var ErrSessionBusy = errors.New("sandbox: the session runs a command")

// ErrSessionClosed is returned by Session.Start after Close.
var ErrSessionClosed = errors.New("sandbox: the session is closed")

// Start runs spec's target in the session's sandbox, building it first
// if there is none (or the spec's policy differs), and returns once it
// runs, with the errors Start returns. The target joins spec's
// TreeCgroups; init joins no cgroup of a command, since it outlives each.
// dial serves the forwarded ports while this command runs. Wait on the
// Launch ends the command; the next Start may follow.
func (s *Session) Start(ctx context.Context, spec *Spec, stdio Stdio, dial Dialer) (*Launch, error) {
	if err := checkFloor(spec); err != nil {
		return nil, err
	}
	key, err := sessionKey(spec)
	if err != nil {
		return nil, err
	}
	return s.start(ctx, spec, key, stdio, dial)
}

// start is Start with spec's session key made (StartRecycled made it to
// find the sandbox).
func (s *Session) start(ctx context.Context, spec *Spec, key string, stdio Stdio, dial Dialer) (*Launch, error) {
	var err error
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, ErrSessionClosed
	case s.busy:
		s.mu.Unlock()
		return nil, ErrSessionBusy
	}
	s.busy = true
	var stale *trampoline
	if s.t != nil && (s.key != key || !s.t.alive() || s.t.stale()) {
		stale = s.detach()
	}
	t := s.t
	s.mu.Unlock()
	if stale != nil {
		s.end(stale)
	}
	if dial != nil {
		s.dial.Store(&dial)
	} else {
		s.dial.Store(nil)
	}
	var l *Launch
	if t == nil {
		if t, err = take(spec.Net.Host); err == nil {
			s.mu.Lock()
			closed := s.closed
			if !closed {
				s.t, s.key = t, key
			}
			s.mu.Unlock()
			if closed { // Close came while the sandbox was taken
				t.discard()
				err = ErrSessionClosed
			} else {
				l, err = start(ctx, t, spec, stdio, nil, s.dialNow, s)
				if l != nil {
					l.took = true
				}
			}
		}
	} else {
		l, err = s.startNext(ctx, t, spec, stdio)
	}
	s.mu.Lock()
	if err != nil {
		s.busy = false
	} else {
		s.cur = l
	}
	s.mu.Unlock()
	return l, err
}

// startNext sends a later command to the session's init.
func (s *Session) startNext(ctx context.Context, t *trampoline, spec *Spec, stdio Stdio) (*Launch, error) {
	l := &Launch{Process: t.proc, t: t, waitDelay: stdio.WaitDelay, s: s}
	l.setJudges(spec)
	ws := wireSpec{Spec: *spec}
	files, err := l.stdioFiles(stdio)
	if err == nil {
		files, err = treeFiles(spec, &ws, files)
	}
	if err == nil {
		files, err = appendExtra(stdio, &ws, files)
	}
	if err == nil {
		err = sendSpec(t.next, &ws, files)
	}
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		return l.fail(&SetupError{Step: "send spec", Err: err})
	}
	return l.started(ctx)
}

// finished is told by a command's Wait that it ended; gone: the sandbox
// ended with it (or before), and is reaped now.
func (s *Session) finished(gone bool) {
	s.mu.Lock()
	s.busy, s.cur = false, nil
	var t *trampoline
	if gone || s.closed || s.discard {
		t = s.detach()
	}
	keep, key := s.recycle && s.t != nil, s.key
	s.mu.Unlock()
	switch {
	case t != nil && s.discard && !gone:
		// Nothing of the command runs (init killed what it left before
		// its report): init's exit, a few milliseconds of teardown, is
		// no part of the command's Wait. SetRecycle(false) and
		// SetPrewarm(false) wait for it.
		recycled.ends.add(1)
		go func() {
			defer recycled.ends.done()
			s.end(t)
		}()
	case t != nil:
		s.end(t)
	}
	if keep {
		putIdle(s, key)
	}
}

// detach takes the sandbox out of the session; s.mu is held.
func (s *Session) detach() *trampoline {
	t := s.t
	s.t, s.key = nil, ""
	return t
}

// end kills the session's former sandbox t, reaps it and closes what the
// host held of it.
func (s *Session) end(t *trampoline) {
	_ = t.proc.Kill()
	_, _ = t.proc.Wait()
	t.stopForwarding()
	t.close()
	if t.next != nil {
		t.next.Close()
	}
	if !s.recycle && !s.discard { // StartRecycled's Wait refills
		go refill(t.hostNet)
	}
}

// Close ends the session's sandbox and reaps it; a command that runs in
// it is killed, and its Wait reaps the sandbox. Start fails afterwards.
func (s *Session) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return s.Reset()
}

// Reset ends the session's sandbox as Close does, but the session stays
// usable: its next command builds a new sandbox.
func (s *Session) Reset() error {
	s.mu.Lock()
	t := s.t
	busy := s.busy
	if !busy {
		s.detach()
	}
	s.mu.Unlock()
	switch {
	case t == nil:
	case busy:
		_ = t.proc.Kill() // the command's Wait sees the end and reaps it
	default:
		s.end(t)
	}
	return nil
}

// dialNow dials for the command that runs now; a connection forwarded
// between commands is refused.
func (s *Session) dialNow(ctx context.Context, network, addr string) (net.Conn, error) {
	d := s.dial.Load()
	if d == nil {
		return nil, errors.New("sandbox: no command of the session runs")
	}
	return (*d)(ctx, network, addr)
}

// sessionKey is the part of spec every command of a session shares,
// encoded: the files' rules, Landlock ruleset, network, supervisor
// switches, and whether the host judges file calls and execs.
func sessionKey(spec *Spec) (string, error) {
	shared := *spec
	shared.Path, shared.Args, shared.Env, shared.Dir, shared.Rlimits = "", nil, nil, "", nil
	shared.TreeCgroups = nil
	shared.AskHost, shared.ExecJudged = hostSwitches(spec)
	b, err := json.Marshal(shared)
	if spec.trapFloor {
		b = append(b, " floor"...) // never the sandbox of a judged command
	}
	return string(b), err
}

// Kill kills the command by killing its sandbox's init, and with it every
// process of the sandbox, and reports whether it did. A session's command
// is killed only while it runs: once it ended (Wait has its exit) the
// session's sandbox and its next command are left alone.
func (l *Launch) Kill() bool {
	if s := l.s; s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.cur != l {
			return false
		}
	}
	return l.t.proc.Kill() == nil
}

// Ended reports whether the command is over: its init exited, or, for a
// session's command, its Wait has its end.
func (l *Launch) Ended() bool {
	if s := l.s; s != nil {
		s.mu.Lock()
		over := s.cur != l
		s.mu.Unlock()
		if over {
			return true
		}
	}
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, l.t.proc.Pid, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
	return err != nil || info.Signo != 0
}

// InSession reports whether the command runs in a sandbox that outlives
// it: a Session's, or one StartRecycled keeps.
func (l *Launch) InSession() bool { return l.s != nil }
