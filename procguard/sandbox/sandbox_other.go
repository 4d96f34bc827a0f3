//go:build !linux

package sandbox

import (
	"context"
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
