package netguard

import (
	"context"
	"net"
	"net/netip"
	"syscall"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// ListenConfig binds like net.ListenConfig, after the guard approved the
// address: binding is denied unless a net rule with Listen allows it. The
// address must name the interface ("127.0.0.1:0", "[::1]:8080"); an empty
// host (":8080", every interface) is invalid input, and 0.0.0.0 or [::] are
// special-purpose addresses that only an exact listen rule unlocks. A name
// is resolved with the Resolver and the first approved address is bound.
// The zero value is ready to use.
type ListenConfig struct {
	// Base configures the socket (KeepAlive, Control, ...). Its Control runs
	// after the guard's own check.
	Base net.ListenConfig
	// Resolver looks names up; nil means DefaultResolver (pure Go).
	Resolver Resolver
}

// Listen announces on address in the scope ctx carries. The listener (a
// *Listener) and the connections it accepts are closed by the scope's
// release.
func (lc *ListenConfig) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	ln, err := lc.listen(ctx, network, address)
	return trackListener(audit.From(ctx), network, ln, err)
}

func (lc *ListenConfig) listen(ctx context.Context, network, address string) (net.Listener, error) {
	g, err := authorize(ctx, policy.OpListen, network, address, lc.Resolver, "")
	if err != nil {
		return nil, listenErr(network, err)
	}
	base := lc.Base
	if g.off {
		return base.Listen(ctx, network, address)
	}
	if g.path != "" {
		return base.Listen(ctx, network, g.path)
	}
	lc2 := lc.guarded(ctx, g)
	return lc2.Listen(ctx, network, netip.AddrPortFrom(g.addrs[0], g.port).String())
}

// ListenPacket announces a packet socket (udp) on address in the scope ctx
// carries. The socket (a *PacketConn) is closed by the scope's release.
func (lc *ListenConfig) ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error) {
	pc, err := lc.listenPacket(ctx, network, address)
	return trackPacket(audit.From(ctx), network, pc, err)
}

func (lc *ListenConfig) listenPacket(ctx context.Context, network, address string) (net.PacketConn, error) {
	g, err := authorize(ctx, policy.OpListen, network, address, lc.Resolver, "")
	if err != nil {
		return nil, listenErr(network, err)
	}
	base := lc.Base
	if g.off {
		return base.ListenPacket(ctx, network, address)
	}
	if g.path != "" {
		return base.ListenPacket(ctx, network, g.path)
	}
	lc2 := lc.guarded(ctx, g)
	return lc2.ListenPacket(ctx, network, netip.AddrPortFrom(g.addrs[0], g.port).String())
}

// listenErr gives a denial the shape of net.ListenConfig's errors: a
// *net.OpError with the *audit.DenyError inside, as dialErr does for dials.
func listenErr(network string, err error) error {
	if de, ok := err.(*audit.DenyError); ok {
		return &net.OpError{Op: "listen", Net: network, Err: de}
	}
	return err
}

// guarded returns a copy of the base config whose Control checks, as a
// second line, that the socket binds an approved address.
func (lc *ListenConfig) guarded(ctx context.Context, g grant) net.ListenConfig {
	base := lc.Base
	var next func(context.Context, string, string, syscall.RawConn) error
	if f := base.Control; f != nil {
		next = func(_ context.Context, network, address string, c syscall.RawConn) error {
			return f(network, address, c)
		}
	}
	check := control(policy.OpListen, g, next)
	base.Control = func(network, address string, c syscall.RawConn) error { return check(ctx, network, address, c) }
	return base
}

// Listen is (&ListenConfig{}).Listen.
func Listen(ctx context.Context, network, address string) (net.Listener, error) {
	return (&ListenConfig{}).Listen(ctx, network, address)
}

// ListenConfig has net.ListenConfig's methods.
var _ interface {
	Listen(ctx context.Context, network, address string) (net.Listener, error)
	ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error)
} = (*ListenConfig)(nil)
