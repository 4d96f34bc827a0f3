// Package netguard is auditguard's network facade: a dialer shaped like
// net.Dialer, a listener shaped like net.ListenConfig, and an HTTP transport
// and client built on them. Connections and binds are denied unless a net
// rule of the policy allows them.
//
// Every dial goes through one pipeline run (audit.Check) with one
// audit.Event: the address is canonicalised before any lookup (empty hosts,
// zones, numeric IPv4 spellings such as 127.1 or 0x7f000001, unknown
// networks are invalid input and never rescuable), names are resolved with
// the dialer's Resolver (pure Go by default, replaceable), the name and every
// resolved address are judged by the policy (policy.CheckNet), and then only
// the approved IP literals are dialed, so a second DNS answer cannot steer
// the connection (rebinding). The socket's Control hook checks again, after
// unmapping IPv4-mapped IPv6, that the kernel is asked to connect to an
// approved address.
//
// The scope comes from the context: DialContext uses audit.From(ctx). Dial,
// which has no context, uses the Dialer's Context field and fails with
// audit.ErrNoScope when it is nil.
//
// For tests, WithDouble installs a Double on a guard: dials its scopes allow
// are then connected by the double (netguard/nettest.Fake) instead of the
// network, after the same decision, and their names are looked up by it.
package netguard
