package netguard

import (
	"context"
	"net"
	"syscall"

	"github.com/auditguard/auditguard/policy"
)

// Control returns a socket hook for net.Dialer.Control that judges, in the
// scope ctx carries, the address every socket of that dialer is about to
// connect to. It is the idiom for clients that need a *net.Dialer rather
// than a DialContext function (tls.Dialer.NetDialer, database drivers, SDKs
// that build their own dialer), as daenney/ssrf offers:
//
//	nd := &net.Dialer{Control: netguard.Control(ctx)}
//	td := &tls.Dialer{NetDialer: nd}
//
// Each socket is one pipeline run (events, callbacks, modes, records) for
// its IP literal, so the rules that apply are those on addresses: CIDR
// rules, deny rules and the special-purpose ranges. The host name the
// caller dialed is not visible at this point (net.Dialer resolved it
// already), so host-name rules cannot allow it: prefer Dialer.DialContext
// wherever a dial function fits. A denial is returned from the hook, so the
// dial fails with a *net.OpError wrapping the *audit.DenyError
// (errors.Is(err, fs.ErrPermission) holds) and nothing is sent.
func Control(ctx context.Context) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		return controlCheck(ctx, network, address)
	}
}

// ControlContext is a socket hook for net.Dialer.ControlContext that
// judges in the scope of the dial's own context: use it when the code that
// dials passes the scope's context (DialContext(ctx, ...)). Otherwise it is
// Control.
func ControlContext(ctx context.Context, network, address string, _ syscall.RawConn) error {
	return controlCheck(ctx, network, address)
}

// controlCheck runs one pipeline pass for a socket's literal address.
func controlCheck(ctx context.Context, network, address string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	_, err := authorize(ctx, policy.OpConnect, network, address, nil, network+" (socket hook)")
	return err
}

// The hooks fit net.Dialer's fields.
var (
	_ = net.Dialer{Control: Control(context.Background())}
	_ = net.Dialer{ControlContext: ControlContext}
)
