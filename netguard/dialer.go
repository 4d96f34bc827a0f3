package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// Dialer dials like net.Dialer, after the guard approved the address. Its
// DialContext fits http.Transport.DialContext, database drivers and gRPC
// dial options. The zero value is ready to use.
type Dialer struct {
	// Base configures the sockets: Timeout (for the whole dial, lookup
	// included), Deadline, KeepAlive, LocalAddr, Control, ... Its Resolver is
	// never used (only approved IP literals are dialed); its Control or
	// ControlContext run after the guard's own check.
	Base net.Dialer
	// Resolver looks names up; nil means DefaultResolver (pure Go).
	Resolver Resolver
	// Context is the scope Dial uses, since Dial takes no context. With a
	// nil Context, Dial fails with audit.ErrNoScope. DialContext ignores it.
	Context context.Context
}

// DialContext connects to address on network in the scope ctx carries
// (audit.From(ctx)). The pipeline runs once, whatever the number of
// addresses tried. A denial is a *net.OpError (Op "dial") wrapping the
// *audit.DenyError, like net.Dialer's own errors: errors.As finds both,
// and errors.Is(err, fs.ErrPermission) holds.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	s := audit.From(ctx)
	if s.Begin() == nil {
		defer s.End()
	}
	c, err := d.decideAndDial(ctx, network, address)
	return track(s, network, c, err)
}

// decideAndDial runs the pipeline once, then dials what it granted.
func (d *Dialer) decideAndDial(ctx context.Context, network, address string) (net.Conn, error) {
	res := d.Resolver
	if dbl := doubleOf(ctx); dbl != nil {
		res = dbl // a test double answers lookups and connects (double.go)
	}
	g, err := authorize(ctx, policy.OpConnect, network, address, res, "")
	if err != nil {
		return nil, dialErr(network, err)
	}
	return d.dial(ctx, network, address, g)
}

// dial connects what authorize granted: to a test double when the scope
// has one (double.go); in Off mode the address as given; otherwise the
// approved literals, one after the other, each checked again by the socket
// hook. The proxy dials through here too.
func (d *Dialer) dial(ctx context.Context, network, address string, g grant) (net.Conn, error) {
	if dbl := doubleOf(ctx); dbl != nil {
		return dbl.DialDouble(ctx, &Dial{Network: network, Address: address, Addrs: g.addrs, Caller: audit.CallerFrame(ctx)})
	}
	nd := d.Base
	if g.off {
		return nd.DialContext(ctx, network, address)
	}
	if g.path != "" {
		return nd.DialContext(ctx, network, g.path)
	}
	if nd.Timeout > 0 || !nd.Deadline.IsZero() {
		// One budget for every address, as net.Dialer does.
		var cancel context.CancelFunc
		if nd.Timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, nd.Timeout)
			defer cancel()
		}
		if !nd.Deadline.IsZero() {
			ctx, cancel = context.WithDeadline(ctx, nd.Deadline)
			defer cancel()
		}
		nd.Timeout, nd.Deadline = 0, time.Time{}
	}
	nd.ControlContext = control(policy.OpConnect, g, baseControl(&d.Base))
	nd.Control = nil
	var first error
	for _, a := range g.addrs {
		c, err := nd.DialContext(ctx, network, netip.AddrPortFrom(a, g.port).String())
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if first == nil {
		first = &net.OpError{Op: "dial", Net: network, Err: errNoAddress}
	}
	return nil, first
}

// Dial connects in the scope of d.Context; see DialContext.
func (d *Dialer) Dial(network, address string) (net.Conn, error) {
	ctx := d.Context
	if ctx == nil {
		ctx = context.Background() // no scope: the pipeline denies with ErrNoScope
	}
	return d.DialContext(ctx, network, address)
}

// baseControl returns the caller's socket hook, if any.
func baseControl(b *net.Dialer) func(context.Context, string, string, syscall.RawConn) error {
	if b.ControlContext != nil {
		return b.ControlContext
	}
	if b.Control != nil {
		f := b.Control
		return func(_ context.Context, network, address string, c syscall.RawConn) error {
			return f(network, address, c)
		}
	}
	return nil
}

// Check is a dry run of DialContext(ctx, network, address): it takes the
// dial's route (scope, canonicalisation, lookup with the dialer's
// Resolver, unix socket paths resolved, the same request) and stops
// before the connection. Every policy is asked, OnCall and BeforeDeny are
// asked with Event.DryRun set, and the net mode applies; nothing is
// dialed, recorded or logged. Result.Err is what DialContext would return
// before connecting: nil, a *net.OpError wrapping the *audit.DenyError,
// or the lookup's failure.
func (d *Dialer) Check(ctx context.Context, network, address string) audit.Result {
	return checkDial(ctx, network, address, resolverFor(ctx, d.Resolver))
}

// Check is (&Dialer{}).Check: a dry run of a dial, nothing dialed.
func Check(ctx context.Context, network, address string) audit.Result {
	return checkDial(ctx, network, address, resolverFor(ctx, nil))
}

// checkDial runs authorize, DialContext's own decision, in a dry-run
// context: the pipeline run inside it is a dry run and its Result lands
// in r. authorize never acts, so nothing else needs to know.
func checkDial(ctx context.Context, network, address string, res Resolver) audit.Result {
	if ctx == nil {
		ctx = context.Background()
	}
	var r audit.Result
	_, err := authorize(audit.WithDryRun(ctx, &r), policy.OpConnect, network, address, res, "")
	if err == nil && r.Outcome == 0 {
		// No pipeline run: the net mode is Off, and the dial goes ahead
		// unchecked; the dry run says so.
		r = audit.DryRun(ctx, &audit.Event{Protocol: audit.Net, Op: policy.OpConnect, Target: address, Detail: network}, nil)
	}
	var de *audit.DenyError
	if errors.As(err, &de) {
		r.Decision = de.Decision // the scope rule netguard names (ruleNetNoScope)
	}
	r.Err = dialErr(network, err)
	r.Allowed = r.Err == nil
	return r
}

// dialErr gives a denial the shape of net.Dialer's errors: a *net.OpError
// with the *audit.DenyError inside. Other errors are already shaped.
func dialErr(network string, err error) error {
	if de, ok := err.(*audit.DenyError); ok {
		return &net.OpError{Op: "dial", Net: network, Err: de}
	}
	return err
}

// The dialer has net.Dialer's dialing methods, so its DialContext fits
// http.Transport.DialContext, grpc.WithContextDialer and driver options.
var _ interface {
	Dial(network, address string) (net.Conn, error)
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
} = (*Dialer)(nil)
