// Package nettest is the scripted network fake for host tests. A Fake holds
// routes (a network and address with a scripted conversation, or an
// http.Handler) and records every dial it is asked to connect.
//
// Installed on a guard with netguard.WithDouble (audittest does it for
// you), it serves every netguard.Dialer.DialContext, Transport and
// NewClient request made from that guard's scopes, after the policy allowed
// the dial: a denied dial never reaches the fake. It also answers their
// name lookups, so no test sends a DNS query.
//
// The connection a dial gets is a real loopback TCP connection
// (*net.TCPConn, inside the *netguard.Conn every guarded dial returns)
// whose other end the fake serves: deadlines, buffering,
// half-close and net/http behave as with a real server. Nothing leaves the
// host: the fake listens on 127.0.0.1 for the one connection and closes the
// listener at once.
//
// A dial no route matches fails with a *net.OpError wrapping ErrUnexpected
// and is recorded (Unexpected); a route used fewer times than it expects is
// reported by Unused; a conversation the client did not follow is a
// Mismatch. Verify joins them into one error for tests that do not use
// audittest.
//
// # Not guaranteed
//
//   - The connection's RemoteAddr is the loopback end the fake serves, not
//     the address dialed.
//   - Handle serves plain HTTP: a client speaking TLS to it (an https://
//     URL) fails its handshake. Serve a tls.Server yourself with Serve.
//   - Names resolve to StandIn4 / StandIn6 unless Resolve says otherwise;
//     the policy judges those addresses (a public one by default, so host
//     rules decide as they would for a real public answer).
//   - Only stream networks (tcp, tcp4, tcp6, unix) are served; a udp dial
//     is unexpected.
package nettest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/netguard"
)

// ErrUnexpected is the cause of a dial no route matched.
var ErrUnexpected = errors.New("nettest: unexpected dial")

// StandIn4 and StandIn6 are what names resolve to unless Resolve says
// otherwise. The fake never connects to them. They are public unicast
// addresses held by IANA for example.com (RFC 2606), so that a host rule
// decides a faked name as it would a real public answer: the documentation
// ranges (192.0.2.0/24, 2001:db8::/32) are special-purpose and would be
// denied whatever the rules say.
var (
	StandIn4 = netip.MustParseAddr("93.184.215.14")
	StandIn6 = netip.MustParseAddr("2606:2800:21f:cb07:6820:80da:af6b:8b2c")
)

// StepTimeout bounds each step of a conversation: a client that sends
// nothing for this long is a mismatch, never a hang.
const StepTimeout = 10 * time.Second

// Fake is a scripted network double. The zero value is ready to use and
// refuses every dial. It is safe for concurrent use. Call Close when the
// test ends (audittest does).
type Fake struct {
	mu     sync.Mutex
	routes []*Route
	names  map[string][]netip.Addr
	dials  []*DialCall
	conns  map[net.Conn]struct{} // server ends still being served
	closed bool
}

var _ netguard.Double = (*Fake)(nil)

type stepKind uint8

const (
	stepRecv stepKind = iota + 1
	stepSend
)

type step struct {
	kind stepKind
	data string
}

// Route is what the fake does with the dials it matches. Its methods set it
// up and return it, for chaining; set it up before the code under test
// runs.
type Route struct {
	f       *Fake
	network string // "tcp", "unix"
	address string
	site    string

	steps   []step
	serve   func(net.Conn)
	refuse  error
	handler http.Handler
	srv     *http.Server
	ln      *chanListener

	min, max int // expected dials; max < 0: no upper bound
	used     int
	requests []Request
}

// Request is one HTTP request a Handle route served.
type Request struct {
	Method, Host, URL string
	Header            http.Header
}

// Resolve makes host resolve to addrs (IP literals) for every dial.
func (f *Fake) Resolve(host string, addrs ...string) {
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	f.mu.Lock()
	if f.names == nil {
		f.names = map[string][]netip.Addr{}
	}
	f.names[strings.ToLower(host)] = as
	f.mu.Unlock()
}

// Expect scripts the dials of network ("tcp" covers tcp4 and tcp6) to
// address as the code names it ("api.example.com:443"; an IP:port route
// also matches a name that resolved to that IP). It is expected once
// unless Times or AnyTimes says otherwise. With no Recv, Send or Serve the
// fake accepts the connection and closes it.
func (f *Fake) Expect(network, address string) *Route {
	return f.add(&Route{network: family(network), address: address, min: 1, max: 1})
}

// Handle serves every TCP dial to address with h over HTTP/1.1, any
// number of connections; at least one request is expected (AnyTimes
// lifts that).
func (f *Fake) Handle(address string, h http.Handler) *Route {
	r := &Route{network: "tcp", address: address, min: 1, max: -1}
	r.handler = h
	return f.add(r)
}

func (f *Fake) add(r *Route) *Route {
	r.f = f
	if _, file, line, ok := runtime.Caller(2); ok {
		r.site = shortFile(file) + ":" + strconv.Itoa(line)
	}
	f.mu.Lock()
	f.routes = append(f.routes, r)
	f.mu.Unlock()
	return r
}

func (r *Route) set(change func()) *Route {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	change()
	return r
}

// Recv expects the client to send exactly data next; anything else ends
// the conversation as a mismatch.
func (r *Route) Recv(data string) *Route {
	return r.set(func() { r.steps = append(r.steps, step{stepRecv, data}) })
}

// Send writes data to the client.
func (r *Route) Send(data string) *Route {
	return r.set(func() { r.steps = append(r.steps, step{stepSend, data}) })
}

// Serve runs fn on the server end after the scripted steps; fn owns the
// connection until it returns (the fake closes it then).
func (r *Route) Serve(fn func(net.Conn)) *Route { return r.set(func() { r.serve = fn }) }

// Refuse makes the dial fail with err (syscall.ECONNREFUSED, say),
// wrapped in *net.OpError.
func (r *Route) Refuse(err error) *Route { return r.set(func() { r.refuse = err }) }

// Times expects exactly n dials (for Handle: at least n).
func (r *Route) Times(n int) *Route {
	return r.set(func() {
		r.min = n
		if r.handler == nil {
			r.max = n
		}
	})
}

// AnyTimes allows any number of dials, none included.
func (r *Route) AnyTimes() *Route { return r.set(func() { r.min, r.max = 0, -1 }) }

// String says what the route matches and where it was written.
func (r *Route) String() string {
	var s string
	if r.handler != nil {
		s = "Handle(" + strconv.Quote(r.address) + ")"
	} else {
		s = "Expect(" + strconv.Quote(r.network) + ", " + strconv.Quote(r.address) + ")"
	}
	if r.site != "" {
		s += " at " + r.site
	}
	return s
}

// Used returns how many dials the route served.
func (r *Route) Used() int {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	return r.used
}

// Requests returns the HTTP requests a Handle route served, in order.
func (r *Route) Requests() []Request {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

func (r *Route) matches(network, address string, addrs []netip.Addr) bool {
	if family(network) != r.network {
		return false
	}
	if strings.EqualFold(r.address, address) {
		return true
	}
	ap, err := netip.ParseAddrPort(r.address)
	if err != nil {
		return false
	}
	_, port, err := net.SplitHostPort(address)
	if err != nil || port != strconv.Itoa(int(ap.Port())) {
		return false
	}
	for _, a := range addrs {
		if a == ap.Addr().Unmap() {
			return true
		}
	}
	return false
}

// family folds tcp4/tcp6 into tcp and unixpacket into unix.
func family(network string) string {
	switch network {
	case "tcp", "tcp4", "tcp6":
		return "tcp"
	case "unix", "unixpacket":
		return "unix"
	}
	return network
}

// DialCall is one dial the fake was asked to connect.
type DialCall struct {
	Network, Address string
	Caller           runtime.Frame
	// Route is the route that served it, nil when none matched.
	Route *Route
	// Err is what the dial returned: ErrUnexpected (wrapped), a Refuse
	// error, or a failure to set up the loopback pair.
	Err error
	// Mismatch says how the client left the conversation, "" when it
	// followed it.
	Mismatch string
}

// LookupNetIP implements netguard.Resolver: the addresses Resolve set for
// host, else the stand-in of the network's family.
func (f *Fake) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	as, ok := f.names[strings.ToLower(host)]
	f.mu.Unlock()
	if ok {
		return append([]netip.Addr(nil), as...), nil
	}
	if network == "ip6" {
		return []netip.Addr{StandIn6}, nil
	}
	return []netip.Addr{StandIn4}, nil
}

// DialDouble implements netguard.Double: it connects the first route that
// matches and still has uses left.
func (f *Fake) DialDouble(ctx context.Context, d *netguard.Dial) (net.Conn, error) {
	call := &DialCall{Network: d.Network, Address: d.Address, Caller: d.Caller}
	f.mu.Lock()
	f.dials = append(f.dials, call)
	var r *Route
	for _, x := range f.routes {
		if x.matches(d.Network, d.Address, d.Addrs) && (x.max < 0 || x.used < x.max) {
			r = x
			break
		}
	}
	if r == nil {
		call.Err = fmt.Errorf("%w: %s %s", ErrUnexpected, d.Network, d.Address)
		f.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: d.Network, Err: call.Err}
	}
	r.used++
	call.Route = r
	closed := f.closed
	if r.refuse != nil {
		call.Err = r.refuse
		f.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: d.Network, Err: r.refuse}
	}
	f.mu.Unlock()
	if closed {
		return nil, &net.OpError{Op: "dial", Net: d.Network, Err: errors.New("nettest: the fake was closed")}
	}
	client, server, err := loopbackPair(ctx)
	if err != nil {
		f.mu.Lock()
		call.Err = err
		f.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: d.Network, Err: err}
	}
	if r.handler != nil {
		if err := f.serveHTTP(r, server); err != nil {
			client.Close()
			return nil, &net.OpError{Op: "dial", Net: d.Network, Err: err}
		}
		return client, nil
	}
	f.track(server, true)
	go func() {
		defer f.track(server, false)
		defer server.Close()
		if m := converse(server, r.steps); m != "" {
			f.mu.Lock()
			call.Mismatch = m
			f.mu.Unlock()
			return
		}
		if r.serve != nil {
			r.serve(server)
		}
	}()
	return client, nil
}

// loopbackPair returns both ends of a fresh loopback TCP connection.
func loopbackPair(ctx context.Context) (client, server net.Conn, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		ch <- accepted{c, err}
	}()
	var d net.Dialer
	client, err = d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		if a := <-ch; a.c != nil {
			a.c.Close()
		}
		return nil, nil, err
	}
	a := <-ch
	if a.err != nil {
		client.Close()
		return nil, nil, a.err
	}
	return client, a.c, nil
}

// converse plays the scripted steps on the server end; it returns what
// went wrong, "" when the client followed the script.
func converse(c net.Conn, steps []step) string {
	for i, st := range steps {
		c.SetDeadline(time.Now().Add(StepTimeout))
		switch st.kind {
		case stepSend:
			if _, err := io.WriteString(c, st.data); err != nil {
				return fmt.Sprintf("step %d: Send(%q): %v", i+1, st.data, err)
			}
		case stepRecv:
			if got, err := recv(c, st.data); err != nil {
				return fmt.Sprintf("step %d: Recv(%q): got %q then %v", i+1, st.data, got, err)
			} else if got != st.data {
				return fmt.Sprintf("step %d: Recv(%q): got %q", i+1, st.data, got)
			}
		}
	}
	c.SetDeadline(time.Time{})
	return ""
}

// recv reads until it has len(want) bytes, stopping as soon as what came
// differs from want: a client that says something else is reported at
// once, not after StepTimeout.
func recv(c net.Conn, want string) (string, error) {
	buf := make([]byte, len(want))
	n := 0
	for n < len(buf) {
		m, err := c.Read(buf[n:])
		n += m
		if string(buf[:n]) != want[:n] {
			return string(buf[:n]), nil
		}
		if err != nil {
			return string(buf[:n]), err
		}
	}
	return string(buf), nil
}

func (f *Fake) track(c net.Conn, open bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		f.conns = map[net.Conn]struct{}{}
	}
	if open {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
}

// serveHTTP hands the server end to the route's HTTP server, starting it
// on first use.
func (f *Fake) serveHTTP(r *Route, server net.Conn) error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		server.Close()
		return errors.New("nettest: the fake was closed")
	}
	if r.srv == nil {
		r.ln = newChanListener()
		h := r.handler
		r.srv = &http.Server{
			ReadHeaderTimeout: StepTimeout,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				f.mu.Lock()
				r.requests = append(r.requests, Request{Method: req.Method, Host: req.Host, URL: req.URL.String(), Header: req.Header.Clone()})
				f.mu.Unlock()
				h.ServeHTTP(w, req)
			}),
		}
		go r.srv.Serve(r.ln)
	}
	ln := r.ln
	f.mu.Unlock()
	return ln.push(server)
}

// Close ends every conversation and HTTP server; later dials fail. It is
// idempotent.
func (f *Fake) Close() error {
	f.mu.Lock()
	f.closed = true
	var srvs []*http.Server
	for _, r := range f.routes {
		if r.srv != nil {
			srvs = append(srvs, r.srv)
		}
	}
	conns := f.conns
	f.conns = nil
	f.mu.Unlock()
	for c := range conns {
		c.Close()
	}
	for _, s := range srvs {
		s.Close()
	}
	return nil
}

// Dials returns every dial so far, in order.
func (f *Fake) Dials() []DialCall { return f.filter(func(*DialCall) bool { return true }) }

// Unexpected returns the dials no route matched.
func (f *Fake) Unexpected() []DialCall {
	return f.filter(func(c *DialCall) bool { return c.Route == nil })
}

// Mismatches returns the dials whose client left the conversation.
func (f *Fake) Mismatches() []DialCall {
	return f.filter(func(c *DialCall) bool { return c.Mismatch != "" })
}

func (f *Fake) filter(keep func(*DialCall) bool) []DialCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []DialCall
	for _, c := range f.dials {
		if keep(c) {
			out = append(out, *c)
		}
	}
	return out
}

// Unused returns the routes used fewer times than they expect; a Handle
// route counts requests, not connections.
func (f *Fake) Unused() []*Route {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*Route
	for _, r := range f.routes {
		n := r.used
		if r.handler != nil {
			n = len(r.requests)
		}
		if n < r.min {
			out = append(out, r)
		}
	}
	return out
}

// Expected says how many uses the route expects ("1", "1 or more").
func (r *Route) Expected() string {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	what := " dials"
	if r.handler != nil {
		what = " requests"
	}
	switch {
	case r.max < 0 && r.min == 0:
		return "0 or more" + what
	case r.max < 0:
		return strconv.Itoa(r.min) + " or more" + what
	}
	return strconv.Itoa(r.min) + what
}

// Verify returns every problem so far, joined: unexpected dials,
// conversations not followed, unused routes. Nil means the fake saw exactly
// what it was scripted for.
func (f *Fake) Verify() error {
	var errs []error
	for _, c := range f.Unexpected() {
		errs = append(errs, fmt.Errorf("unexpected dial %s %s at %s", c.Network, c.Address, audit.FormatFrame(c.Caller)))
	}
	for _, c := range f.Mismatches() {
		errs = append(errs, fmt.Errorf("dial %s %s at %s: %s", c.Network, c.Address, audit.FormatFrame(c.Caller), c.Mismatch))
	}
	for _, r := range f.Unused() {
		errs = append(errs, fmt.Errorf("%s was used %d times, expected %s", r, r.Used(), r.Expected()))
	}
	return errors.Join(errs...)
}

// chanListener is a net.Listener whose connections are pushed to it: the
// HTTP server of a Handle route accepts the server ends of its dials.
type chanListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newChanListener() *chanListener {
	return &chanListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) push(c net.Conn) error {
	select {
	case l.ch <- c:
		return nil
	case <-l.done:
		c.Close()
		return net.ErrClosed
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return fakeAddr("nettest") }

type fakeAddr string

func (a fakeAddr) Network() string { return string(a) }
func (a fakeAddr) String() string  { return string(a) }

var _ net.Listener = (*chanListener)(nil)

func shortFile(file string) string {
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		return file[i+1:]
	}
	return file
}
