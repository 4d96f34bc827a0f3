//go:build !linux

package procguard

import (
	"errors"
	"net"
)

// conn fails outside Linux, where there is no sandbox to serve.
func (e *egress) conn() (net.Conn, error) { return nil, errors.ErrUnsupported }
