package netguard

import (
	"context"
	"net"
	"net/netip"
	"runtime"

	"github.com/auditguard/auditguard/audit"
)

// Double serves the dials a guard allowed in place of the network: a test
// fake (netguard/nettest.Fake is the scripted one). Install it on a guard
// with WithDouble; every Dialer.DialContext, and so every request of a
// Transport or NewClient, whose context carries a scope of that guard is
// then decided as usual (the policy, the callbacks, the mode, the record)
// and, when allowed, connected by the double instead of a socket to the
// address. A denied dial never reaches it.
//
// The double also answers the name lookups of those dials (LookupNetIP),
// whatever the Dialer's Resolver, so no test sends a real DNS query; the
// policy judges the addresses it returns as it would real ones. Both
// methods may be called from many goroutines at once.
type Double interface {
	Resolver
	// DialDouble returns the connection for an allowed dial, or an error
	// DialContext returns as is.
	DialDouble(ctx context.Context, d *Dial) (net.Conn, error)
}

// Dial is one allowed dial as a Double sees it.
type Dial struct {
	Network, Address string
	// Addrs are the approved addresses (resolved by the double); empty for
	// unix sockets and in Off mode.
	Addrs []netip.Addr
	// Caller is the call site in the code under test: the code that made
	// the request, for dials net/http makes on its behalf.
	Caller runtime.Frame
}

type doubleKey struct{}

// WithDouble installs d on a guard: netguard serves the dials that guard
// allows from d and opens no socket. For tests; see Double.
func WithDouble(d Double) audit.Option { return audit.WithDouble(doubleKey{}, d) }

func doubleOf(ctx context.Context) Double {
	d, _ := audit.From(ctx).Double(doubleKey{}).(Double)
	return d
}

// resolverFor is the resolver a dial in ctx uses: the scope's double when
// one is installed, else r.
func resolverFor(ctx context.Context, r Resolver) Resolver {
	if d := doubleOf(ctx); d != nil {
		return d
	}
	return r
}
