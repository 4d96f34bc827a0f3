package netfwd

import (
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by the error Serve and Host return when the peer
// broke the wire format (wire.go); the session is over.
var ErrMalformed = errors.New("netfwd: malformed control message")

// ErrPeerClosed is returned by Serve when the host closed the control
// socket.
var ErrPeerClosed = errors.New("netfwd: control socket closed by the peer")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}
