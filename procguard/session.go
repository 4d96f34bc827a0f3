package procguard

import (
	"sync"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// A Session runs the commands given it (Cmd.Session) one after another in
// one sandbox, so a shell session, a test runner or an agent's tool loop
// that starts a program per step pays a sandbox's set-up once: the first
// command builds it, each later one with the same policy is forked from
// the sandbox's already confined init (sandbox.Session).
//
// Each command is decided, confined and recorded as one with a sandbox of
// its own: the same decision, Landlock domain, seccomp filter and
// supervisor (built once from the same policy), its own argv,
// environment, directory, streams, rlimits, timeout and cgroups (the
// target joins them before its first instruction). When its program ends,
// everything it left running in the sandbox is killed before Wait
// returns; what it wrote to the filesystem stays, as without a session.
//
// What differs:
//   - Cmd.Process is the session sandbox's init, shared by its commands:
//     Signal reaches the running program, Kill ends the sandbox (the next
//     command builds a new one). A timeout, a cancellation or the scope's
//     release ends the sandbox the same way.
//   - Cmd.ProcessState stays nil: no process of the host's ended with the
//     command. A program that failed gives a *sandbox.ExitError (its
//     ExitCode, and Cmd.Signal for a signal) where a command of its own
//     gives an *exec.ExitError.
//   - A command started while another of the session runs (a pipeline's
//     other side) gets a sandbox of its own; one whose policy differs (a
//     reload), or that finds a path the sandbox holds naming another
//     object (a workspace made again, a program upgraded), ends the
//     session's sandbox and builds a new one.
//
// Between commands the sandbox is one idle process. It ends with Close,
// and with the release of any guard scope a command of the session ran
// in (the session stays usable: its next command builds a new sandbox).
// The zero value is ready to use. A Session is safe for concurrent use.
type Session struct {
	sb     sandbox.Session
	mu     sync.Mutex
	scopes map[*audit.Scope]*sessionRelease
}

// Close ends the session's sandbox, killing a command that runs in it.
func (s *Session) Close() error {
	s.mu.Lock()
	scopes := s.scopes
	s.scopes = nil
	s.mu.Unlock()
	for scope, r := range scopes {
		scope.Untrack(r)
	}
	return s.sb.Close()
}

// track makes the release of scope end the session's sandbox, once per
// scope.
func (s *Session) track(scope *audit.Scope) {
	if scope == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scopes[scope] != nil {
		return
	}
	r := &sessionRelease{s: s, scope: scope}
	if scope.TrackCleanup(r) == nil {
		if s.scopes == nil {
			s.scopes = map[*audit.Scope]*sessionRelease{}
		}
		s.scopes[scope] = r
	}
}

// sessionRelease is what a scope's release runs for a session one of its
// commands ran in: the sandbox ends, the session stays.
type sessionRelease struct {
	s     *Session
	scope *audit.Scope
}

func (r *sessionRelease) Close() error {
	r.s.mu.Lock()
	if r.s.scopes[r.scope] == r {
		delete(r.s.scopes, r.scope)
	}
	r.s.mu.Unlock()
	return r.s.sb.Reset()
}
