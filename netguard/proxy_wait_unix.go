//go:build unix

package netguard

import (
	"net"
	"syscall"
)

// waitReadable returns a function that blocks until c has bytes to read,
// has reached EOF or has failed, without reading: a one-byte MSG_PEEK that
// the runtime's poller retries when the socket becomes readable. The read
// deadline applies to the wait. It returns nil when c has no descriptor
// to poll (a net.Pipe, a TLS connection); the caller then reads with a
// buffer in hand.
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
	ready := func(fd uintptr) bool {
		for {
			_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch err {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // nothing queued: let the poller wait
			}
			// Bytes, EOF (0 bytes) or an error: the read that follows
			// reports it.
			return true
		}
	}
	return func() error { return rc.Read(ready) }
}
