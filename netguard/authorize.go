package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"syscall"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// grant is what the pipeline approved for one dial or bind.
type grant struct {
	off     bool         // the net mode is Off: act without checks
	addrs   []netip.Addr // the approved addresses, in resolver order
	port    uint16
	path    string // unix: the resolved socket path
	network string
}

// authorize runs the one pipeline pass for op on network/address: scope,
// canonicalisation, lookup, then audit.Check with one Event and one
// NetRequest judging the name and every resolved address.
// detail, when not empty, replaces the network in Event.Detail.
func authorize(ctx context.Context, op policy.Op, network, address string, res Resolver, detail string) (grant, error) {
	return authorizeWith(ctx, op, network, address, res, detail, false)
}

// authorizeProxied is authorize for the egress proxy, which looks a name
// up only when the policies allow it by name: the query itself leaves the
// sandbox (its labels reach whoever answers for the domain), so a name no
// rule allows is refused before any lookup (judgeName).
func authorizeProxied(ctx context.Context, address string, res Resolver, detail string) (grant, error) {
	return authorizeWith(ctx, policy.OpConnect, "tcp", address, res, detail, true)
}

func authorizeWith(ctx context.Context, op policy.Op, network, address string, res Resolver, detail string, nameFirst bool) (grant, error) {
	if detail == "" {
		detail = network
	}
	ev := &audit.Event{Protocol: audit.Net, Op: op, Target: address, Detail: detail}
	s := audit.From(ctx)
	if err := s.Err(); err != nil {
		return grant{}, scopeError(ctx, ev)
	}
	if s.Mode(audit.Net) == audit.Off {
		return grant{off: true, network: network}, nil
	}
	req, perr := policy.ParseNetRequest(op, network, address)
	if perr != nil {
		if err := audit.Check(ctx, ev, req); err != nil {
			return grant{}, err
		}
		// OnCall allowed it, but there is nothing safe to dial.
		return grant{}, &net.OpError{Op: opName(op), Net: network, Err: perr}
	}
	g := grant{port: req.Port, network: network}

	if strings.HasPrefix(network, "unix") {
		p, err := policy.Resolve(policy.OSFS{}, address, "/", true)
		if err != nil {
			// The path cannot be resolved safely (a symlink loop, a
			// permission error): fail closed. An empty path decides
			// TierInvalid.
			p = ""
		}
		req.Host = p
		ev.Resolved = p
		if err := audit.Check(ctx, ev, req); err != nil {
			return grant{}, err
		}
		g.path = p
		return g, nil
	}

	if req.IP.IsValid() {
		g.addrs = req.Addrs
		ev.Resolved = req.Host // the canonical literal
	} else {
		if nameFirst {
			if err := judgeName(ctx, s, ev, req); err != nil {
				return grant{}, err
			}
		}
		addrs, lerr := resolverOr(res).LookupNetIP(ctx, ipNetwork(network), req.Host)
		addrs = filterFamily(network, addrs)
		if lerr == nil && len(addrs) == 0 {
			lerr = &net.DNSError{Err: "no suitable address", Name: req.Host, IsNotFound: true}
		}
		if lerr != nil {
			// Judge the name alone: a name no rule allows is a policy
			// denial, not a lookup failure.
			if err := audit.Check(ctx, ev, req); err != nil {
				return grant{}, err
			}
			return grant{}, &net.OpError{Op: opName(op), Net: network, Err: lerr}
		}
		req.Addrs = addrs
		g.addrs = addrs
		ev.Resolved = joinAddrs(addrs)
	}
	if err := audit.Check(ctx, ev, req); err != nil {
		return grant{}, err
	}
	return g, nil
}

// judgeName decides req on its name alone, before any lookup: when every
// policy of the scope allows the name (a host rule), it returns nil and the
// name is looked up; otherwise the request goes through the pipeline as it
// is, with no address (one decision, one record, the callbacks asked), and
// nothing is looked up unless a callback rescues it. A rescued name is
// then looked up and its addresses judged in a second pass, as every
// address must be. A name only an address rule would allow is refused:
// rules for names the proxy may resolve are host rules. In Warn mode
// nothing is refused, so the name is looked up as before.
//
// "localhost" is looked up as before: its answer is the machine's own
// (RFC 6761 section 6.3; /etc/hosts), no question leaves it, and its
// loopback addresses are judged by address rules.
func judgeName(ctx context.Context, s *audit.Scope, ev *audit.Event, req *policy.NetRequest) error {
	if s.Mode(audit.Net) == audit.Warn || req.Host == "localhost" {
		return nil
	}
	for _, p := range s.Policies() {
		if d := req.Decide(p); !d.Allowed {
			return audit.Check(ctx, ev, req)
		}
	}
	return nil
}

// filterFamily unmaps the addresses and keeps those the network can reach,
// in a new slice (the resolver's answer is not modified). Zoned and invalid
// addresses stay: the policy rejects them.
func filterFamily(network string, addrs []netip.Addr) []netip.Addr {
	v4 := strings.HasSuffix(network, "4")
	v6 := strings.HasSuffix(network, "6")
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		a = a.Unmap()
		if a.IsValid() && ((v4 && !a.Is4()) || (v6 && a.Is4())) {
			continue
		}
		out = append(out, a)
	}
	return out
}

func joinAddrs(addrs []netip.Addr) string {
	if len(addrs) == 1 {
		return addrs[0].String()
	}
	var b strings.Builder
	for i, a := range addrs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	return b.String()
}

func opName(op policy.Op) string {
	if op == policy.OpListen {
		return "listen"
	}
	return "dial"
}

var ruleNotApproved = &policy.Rule{Kind: policy.KindNet, Pattern: "sockets connect only to approved addresses", Source: "builtin",
	Hint: "the address was not approved by the check that preceded the dial; this is the second line of defence"}

// control returns the socket hook that checks, as a second line, that the
// kernel is asked to use an approved address (after unmapping IPv4-mapped
// IPv6), then runs the caller's own hook.
func control(op policy.Op, g grant, next func(ctx context.Context, network, address string, c syscall.RawConn) error) func(ctx context.Context, network, address string, c syscall.RawConn) error {
	return func(ctx context.Context, network, address string, c syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		ok := err == nil && ap.Addr().Zone() == "" && ap.Port() == g.port
		if ok {
			a := ap.Addr().Unmap()
			ok = false
			for _, x := range g.addrs {
				if x == a {
					ok = true
					break
				}
			}
		}
		if !ok {
			return &audit.DenyError{Protocol: audit.Net, Op: op, Target: address,
				Decision: policy.Deny(policy.TierInvalid, ruleNotApproved, "")}
		}
		if next != nil {
			return next(ctx, network, address, c)
		}
		return nil
	}
}

// ruleNetNoScope replaces the audit package's no-scope rule in netguard's
// denials, to name the idiom that passes a scope to each kind of caller.
var ruleNetNoScope = &policy.Rule{Kind: policy.KindHost, Pattern: "guarded calls need a scope", Source: "builtin",
	Hint: "pass the context Guard.Enter returned: DialContext(ctx, ...) or Check(ctx, ...); " +
		"for Dial, which takes no context, set Dialer.Context; for a client that needs a *net.Dialer " +
		"(tls.Dialer.NetDialer, database drivers) set its Control to netguard.Control(ctx), or its ControlContext to " +
		"netguard.ControlContext and dial with the scope's context; for a proxy, set Proxy.Context or Proxy.ConnContext"}

// scopeError is the denial for a call whose context has no usable scope:
// the pipeline fills the event in, and a missing scope gets the hint above.
func scopeError(ctx context.Context, ev *audit.Event) error {
	err := audit.Check(ctx, ev, nil)
	var de *audit.DenyError
	if errors.Is(err, audit.ErrNoScope) && errors.As(err, &de) {
		de.Decision.Rule = ruleNetNoScope
	}
	return err
}

// errNoAddress is returned when nothing was approved to dial.
var errNoAddress = errors.New("netguard: no approved address to dial")
