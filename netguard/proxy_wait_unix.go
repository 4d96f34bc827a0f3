//go:build unix

package netguard

import (
	"net"
	"syscall"
)

// waitReadable returns a function that blocks until c has bytes to read,
// has reached EOF or has failed, without reading. It asks once with a
// one-byte MSG_PEEK (the poller's readiness was just reset, so bytes that
// came earlier raise no new event and must be looked for), and when
// nothing is queued it lets the runtime's poller wait for the next event;
// that event is the answer, with no second system call. Spending one
// call per wait, as the read it replaces did, keeps the wait as cheap as
// a blocking read. The read deadline applies to the wait. It returns nil
// when c has no descriptor to poll (a net.Pipe, a TLS connection); the
// caller then reads with a buffer in hand.
func waitReadable(c net.Conn) func() error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var b [1]byte
	var polled bool
	ready := func(fd uintptr) bool {
		if polled {
			// Called again after the poller saw the socket become
			// readable (or hang up): the read that follows gets the bytes,
			// the EOF or the error. Were the event spurious, that read
			// would wait itself, holding a buffer, and be no less correct.
			return true
		}
		for {
			_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch err {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				polled = true
				return false // nothing queued: let the poller wait
			}
			// Bytes, EOF (0 bytes) or an error: the read that follows
			// reports it.
			return true
		}
	}
	return func() error {
		polled = false
		return rc.Read(ready)
	}
}
