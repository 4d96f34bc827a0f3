//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"os"
)

// Launch is Linux-only; elsewhere Start fails with ErrUnavailable.
type Launch struct {
	Process *os.Process
	Report  *Report
}

// Start fails outside Linux: there is no sandbox to start.
func Start(ctx context.Context, spec *Spec, stdio Stdio, join func(pid int) error, dial Dialer) (*Launch, error) {
	return nil, ErrUnavailable
}

// StartRecycled fails outside Linux: there is no sandbox to start.
func StartRecycled(ctx context.Context, spec *Spec, stdio Stdio, dial Dialer) (*Launch, error) {
	return nil, ErrUnavailable
}

// Recycling reports false outside Linux.
func Recycling() bool { return false }

// EndsAfterWait is false: there is no sandbox.
func EndsAfterWait() bool { return false }

// SetRecycle does nothing outside Linux.
func SetRecycle(on bool) {}

// Wait fails outside Linux.
func (l *Launch) Wait() (*os.ProcessState, error) { return nil, ErrUnavailable }

// Exit returns nil outside Linux.
func (l *Launch) Exit() *Exit { return nil }

// Prewarm fails outside Linux.
func Prewarm(hostNet bool) error { return ErrUnavailable }

// SetPrewarm does nothing outside Linux.
func SetPrewarm(on bool) {}

// ExecJudgeable reports false outside Linux: no exec is judged when it
// happens.
func ExecJudgeable() (bool, string) { return false, "Linux only" }

// Session is Linux-only; elsewhere its Start fails with ErrUnavailable.
type Session struct{}

// ErrSessionBusy is returned by Session.Start while a command of the
// session runs.
var ErrSessionBusy = errors.New("sandbox: the session runs a command")

// ErrSessionClosed is returned by Session.Start after Close.
var ErrSessionClosed = errors.New("sandbox: the session is closed")

// Start fails outside Linux.
func (s *Session) Start(ctx context.Context, spec *Spec, stdio Stdio, dial Dialer) (*Launch, error) {
	return nil, ErrUnavailable
}

// Close does nothing outside Linux.
func (s *Session) Close() error { return nil }

// Reset does nothing outside Linux.
func (s *Session) Reset() error { return nil }

// Kill reports false outside Linux.
func (l *Launch) Kill() bool { return false }

// Ended reports true outside Linux.
func (l *Launch) Ended() bool { return true }

// InSession reports false outside Linux.
func (l *Launch) InSession() bool { return false }
