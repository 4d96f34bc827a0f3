//go:build unix

package netguard

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestWaitReadable: the wait a tunnel direction does without a buffer
// blocks while nothing is queued (until the read deadline), returns once a
// byte is queued without consuming it, and returns at EOF, on real
// loopback TCP and unix stream sockets.
func TestWaitReadable(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			a, b := connPair(t, network)
			wait := waitReadable(b)
			if wait == nil {
				t.Fatal("no wait for a socket")
			}

			b.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if err := wait(); !isTimeout(err) {
				t.Fatalf("wait with nothing queued: %v, want a timeout", err)
			}

			b.SetReadDeadline(time.Now().Add(5 * time.Second))
			go func() {
				time.Sleep(20 * time.Millisecond)
				a.Write([]byte("x"))
			}()
			if err := wait(); err != nil {
				t.Fatalf("wait for a byte: %v", err)
			}
			if err := wait(); err != nil { // still queued: returns at once
				t.Fatalf("second wait: %v", err)
			}
			var got [2]byte
			if n, err := b.Read(got[:]); n != 1 || got[0] != 'x' || err != nil {
				t.Fatalf("read after the wait: %q %v (the wait must not consume)", got[:n], err)
			}

			a.Close()
			if err := wait(); err != nil {
				t.Fatalf("wait at EOF: %v", err)
			}
			if _, err := b.Read(got[:]); !errors.Is(err, io.EOF) {
				t.Fatalf("read at EOF: %v", err)
			}
			b.Close()
			if err := wait(); err == nil {
				t.Fatal("wait on a closed connection succeeded")
			}
		})
	}
	if waitReadable(nopConn()) != nil {
		t.Error("a connection without a descriptor got a wait")
	}
}

// connPair returns the two ends of a connected loopback socket pair.
func connPair(t *testing.T, network string) (net.Conn, net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = t.TempDir() + "/s"
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}
