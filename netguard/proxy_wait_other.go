//go:build !unix

package netguard

import "net"

// waitReadable has no way to wait without reading on this platform: the
// tunnel reads with a buffer in hand.
func waitReadable(net.Conn) func() error { return nil }
