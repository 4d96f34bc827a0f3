// Package netguard is auditguard's network facade: a dialer shaped like
// net.Dialer, a listener shaped like net.ListenConfig, an HTTP transport
// and client built on them, socket hooks for clients that need a
// *net.Dialer (Control, ControlContext), and an egress proxy (Proxy: HTTP
// and SOCKS5) for code that takes no guarded handle, such as sandboxed
// child processes. Connections and binds are denied unless a net rule of
// the policy allows them.
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
// A denied dial is a *net.OpError (Op "dial") wrapping the
// *audit.DenyError, like net.Dialer's own errors.
//
// The scope comes from the context: DialContext uses audit.From(ctx). Dial,
// which has no context, uses the Dialer's Context field and fails with
// audit.ErrNoScope when it is nil.
//
// The Proxy runs every request through the same authorize-then-dial path
// as DialContext: one decision per CONNECT, SOCKS5 CONNECT or forwarded
// request, one lookup, only approved literals dialed; a denial answers 403
// or SOCKS5 "not allowed by ruleset" and dials nothing. Close closes every
// tunnel and waits for every goroutine it started.
//
// For tests, WithDouble installs a Double on a guard: dials its scopes allow
// are then connected by the double (netguard/nettest.Fake) instead of the
// network, after the same decision, and their names are looked up by it.
//
// # Check
//
// Check is a dry run of the call it stands for, the same in every facade
// (fsguard, netguard, procguard): it takes that call's own route
// (DialContext's canonicalisation, lookup with the dialer's Resolver, unix
// socket paths resolved, the same request) and runs the whole audit
// pipeline, the scope, every policy, OnCall and BeforeDeny asked with
// audit.Event.DryRun set, and the protocol's mode, then stops before the
// act: nothing is dialed, and nothing is recorded or logged. Its answer
// holds an audit.Result: Allowed (the call would go ahead), Outcome, By (who
// decided), the deciding rule, and Err, the error the call would return, in
// the call's own shape (*net.OpError with the *audit.DenyError inside). The
// answer holds for now; a later call is decided afresh.
//
// # Not guaranteed
//
//   - Code that calls package net directly is not seen; the proxy only
//     sees clients that use it (a sandbox with no other route makes that
//     so).
//   - The proxy judges host:port, never what flows inside a tunnel, and
//     does not authenticate its clients.
//   - Control judges IP literals only: host-name rules cannot apply.
//   - The dialer's lookup reaches the resolver before the addresses are
//     judged. The proxy looks up only names a host rule allows: a name no
//     rule allows by name is refused before any DNS question is asked.
//
// docs/net.md and docs/threat-model.md say more.
package netguard
