//go:build !linux

package sandbox

import (
	"context"
	"net"
	"os/exec"
)

// Launch is Linux-only; elsewhere Command fails with ErrUnavailable.
type Launch struct {
	Report *Report
}

// Dialer dials a loopback address on behalf of a sandboxed child.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// Command fails outside Linux: there is no sandbox to start.
func Command(x *exec.Cmd, spec *Spec) (*Launch, error) {
	return nil, ErrUnavailable
}

// Start fails outside Linux.
func (l *Launch) Start(ctx context.Context, x *exec.Cmd, join func(pid int) error, dial Dialer) error {
	return ErrUnavailable
}

// Finish returns nil outside Linux.
func (l *Launch) Finish() *Exit { return nil }
