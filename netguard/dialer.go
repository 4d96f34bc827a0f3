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
// addresses tried. Denials are *audit.DenyError, so errors.Is(err,
// fs.ErrPermission) holds.
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
		return nil, err
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

// Check returns the decision a DialContext of address on network would get
// from the policies of ctx's scope (the guard's and every Restrict-ed one),
// without callbacks, records or a connection. Names are looked up with the
// dialer's Resolver; a name that cannot be resolved is judged by itself.
// The net mode applies as it does to DialContext: in Off the answer is
// allowed; in Warn a soft or hard denial is reported allowed, with the
// would-be deciding rule and "would deny" in Detail.
func (d *Dialer) Check(ctx context.Context, network, address string) policy.Decision {
	return decideOnly(ctx, policy.OpConnect, network, address, resolverFor(ctx, d.Resolver))
}

// Check is (&Dialer{}).Check: the decision only, nothing dialed.
func Check(ctx context.Context, network, address string) policy.Decision {
	return decideOnly(ctx, policy.OpConnect, network, address, resolverFor(ctx, nil))
}

// Rules that describe a Check answered by the mode rather than the policy.
var (
	ruleModeOff = &policy.Rule{Kind: policy.KindHost, Pattern: "net mode off: no checks", Source: "guard mode"}
)

// decideOnly answers Check. It honours the net mode as DialContext does:
// Off allows without asking the policy; Warn turns a soft or hard denial
// into an allowing decision that keeps the rule that would have denied and
// says so in Detail; invalid input is denied in every mode but Off.
func decideOnly(ctx context.Context, op policy.Op, network, address string, res Resolver) policy.Decision {
	s := audit.From(ctx)
	if err := s.Err(); err != nil {
		ev := &audit.Event{Protocol: audit.Net, Op: op, Target: address, Detail: network}
		var de *audit.DenyError
		if errors.As(scopeError(ctx, ev), &de) {
			return de.Decision
		}
		return policy.Deny(policy.TierInvalid, ruleNotApproved, err.Error())
	}
	mode := s.Mode(audit.Net)
	if mode == audit.Off {
		return policy.Allow(ruleModeOff)
	}
	dec := decidePolicies(ctx, s, op, network, address, res)
	if mode == audit.Warn && !dec.Allowed && (dec.Tier == policy.TierSoft || dec.Tier == policy.TierHard) {
		return policy.Decision{Allowed: true, Rule: dec.Rule, Detail: "net mode warn: would deny (" + dec.Tier.String() + ")"}
	}
	return dec
}

func decidePolicies(ctx context.Context, s *audit.Scope, op policy.Op, network, address string, res Resolver) policy.Decision {
	req, perr := policy.ParseNetRequest(op, network, address)
	if perr == nil {
		if req.Network == "unix" || req.Network == "unixgram" || req.Network == "unixpacket" {
			p, err := policy.Resolve(policy.OSFS{}, address, "/", true)
			if err != nil {
				p = "" // fail closed, as DialContext does
			}
			req.Host = p
		} else if !req.IP.IsValid() {
			addrs, err := resolverOr(res).LookupNetIP(ctx, ipNetwork(network), req.Host)
			if err == nil {
				req.Addrs = filterFamily(network, addrs)
			}
		}
	}
	var first policy.Decision
	for i, p := range s.Policies() {
		dec := req.Decide(p)
		if !dec.Allowed {
			return dec
		}
		if i == 0 {
			first = dec
		}
	}
	return first
}

// The dialer has net.Dialer's dialing methods, so its DialContext fits
// http.Transport.DialContext, grpc.WithContextDialer and driver options.
var _ interface {
	Dial(network, address string) (net.Conn, error)
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
} = (*Dialer)(nil)
