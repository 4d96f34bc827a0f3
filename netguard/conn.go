package netguard

import (
	"net"

	"github.com/auditguard/auditguard/audit"
)

// Conn is a connection a guarded Dialer made. It is the dialed net.Conn,
// tied to the scope it was dialed in: the scope's release closes it
// (unless the guard keeps handles, audit.WithKeepHandles), so nothing more
// is sent on it once release has returned. NetConn returns the underlying
// connection (a *net.TCPConn, *net.UnixConn, ...) for code that needs its
// type; closing either closes both, and release closes it all the same.
type Conn struct {
	net.Conn
	scope *audit.Scope
}

var _ net.Conn = (*Conn)(nil)

// Close closes the connection.
func (c *Conn) Close() error {
	c.scope.Untrack(c)
	return c.Conn.Close()
}

// NetConn returns the underlying connection, as tls.Conn.NetConn does.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// CloseWrite shuts down the writing side, when the underlying connection
// can (TCP, unix).
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return &net.OpError{Op: "close", Net: c.Conn.LocalAddr().Network(), Err: net.ErrClosed}
}

// CloseRead shuts down the reading side, when the underlying connection
// can.
func (c *Conn) CloseRead() error {
	if cr, ok := c.Conn.(interface{ CloseRead() error }); ok {
		return cr.CloseRead()
	}
	return &net.OpError{Op: "close", Net: c.Conn.LocalAddr().Network(), Err: net.ErrClosed}
}

// track ties a dialed connection to the scope ctx carries. When the scope
// ended while the dial ran, the connection is closed and the scope's error
// returned.
func track(s *audit.Scope, network string, c net.Conn, err error) (net.Conn, error) {
	if err != nil || s == nil {
		return c, err
	}
	tc := &Conn{Conn: c, scope: s}
	if terr := s.TrackHandle(tc); terr != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: terr}
	}
	return tc, nil
}
