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
		c.Close()
		return nil, &net.OpError{Op: "dial", Net: network, Err: terr}
	}
	return tc, nil
}

// Listener is a listener a guarded ListenConfig made, tied to the scope it
// was made in as a Conn is: the scope's release closes it and every
// connection it accepted (unless the guard keeps handles), so nothing is
// accepted or served through it once release has returned. Accept returns
// *Conn. NetListener returns the underlying listener.
type Listener struct {
	net.Listener
	scope   *audit.Scope
	network string
}

var _ net.Listener = (*Listener)(nil)

// Accept waits for the next connection and ties it to the listener's
// scope.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &Conn{Conn: c, scope: l.scope}
	if terr := l.scope.TrackHandle(tc); terr != nil {
		c.Close()
		return nil, &net.OpError{Op: "accept", Net: l.network, Addr: l.Addr(), Err: terr}
	}
	return tc, nil
}

// Close closes the listener (connections it accepted stay open).
func (l *Listener) Close() error {
	l.scope.Untrack(l)
	return l.Listener.Close()
}

// NetListener returns the underlying listener (a *net.TCPListener, ...).
func (l *Listener) NetListener() net.Listener { return l.Listener }

// PacketConn is a packet socket a guarded ListenConfig made, tied to its
// scope as a Listener is.
type PacketConn struct {
	net.PacketConn
	scope *audit.Scope
}

var _ net.PacketConn = (*PacketConn)(nil)

// Close closes the socket.
func (c *PacketConn) Close() error {
	c.scope.Untrack(c)
	return c.PacketConn.Close()
}

// NetPacketConn returns the underlying socket (a *net.UDPConn, ...).
func (c *PacketConn) NetPacketConn() net.PacketConn { return c.PacketConn }

// trackListener ties a listener to the scope ctx carries.
func trackListener(s *audit.Scope, network string, ln net.Listener, err error) (net.Listener, error) {
	if err != nil || s == nil {
		return ln, err
	}
	tl := &Listener{Listener: ln, scope: s, network: network}
	if terr := s.TrackHandle(tl); terr != nil {
		ln.Close()
		return nil, &net.OpError{Op: "listen", Net: network, Err: terr}
	}
	return tl, nil
}

// trackPacket ties a packet socket to the scope ctx carries.
func trackPacket(s *audit.Scope, network string, pc net.PacketConn, err error) (net.PacketConn, error) {
	if err != nil || s == nil {
		return pc, err
	}
	tp := &PacketConn{PacketConn: pc, scope: s}
	if terr := s.TrackHandle(tp); terr != nil {
		pc.Close()
		return nil, &net.OpError{Op: "listen", Net: network, Err: terr}
	}
	return tp, nil
}
