//go:build !linux

// The stand-ins for loopback_linux.go, pair_linux.go, serve_linux.go and
// host_linux.go: network namespaces are Linux only.

package netfwd

import (
	"context"
	"errors"
	"net"
	"os"
)

// LoopbackUp returns errors.ErrUnsupported.
func LoopbackUp() error { return errors.ErrUnsupported }

// Pair returns errors.ErrUnsupported.
func Pair() (host, inside *os.File, err error) { return nil, nil, errors.ErrUnsupported }

// Serve returns errors.ErrUnsupported.
func Serve(ctl *os.File, ports []Port, stop <-chan struct{}) error { return errors.ErrUnsupported }

// Host returns errors.ErrUnsupported.
func Host(ctx context.Context, ctl *os.File, dial func(ctx context.Context, network, addr string) (net.Conn, error)) error {
	return errors.ErrUnsupported
}

// Start fails outside Linux.
func Start(ctl *os.File, ports []Port, stop <-chan struct{}) (<-chan error, error) {
	return nil, errors.ErrUnsupported
}
