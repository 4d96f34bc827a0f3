package netguard

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	xproxy "golang.org/x/net/proxy"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// proxyEnv is a proxy served on loopback with a table resolver and a probe
// that sees every address the proxy asks the kernel to connect to.
type proxyEnv struct {
	p     *Proxy
	addr  string // host:port of the proxy
	res   *fakeResolver
	probe *probe
	rec   *audit.Recorder
	ctx   context.Context
	serve chan error
}

// startProxy serves a proxy judging in a scope with rules. Connections
// only go to addresses in allow (host:port literals); every other connect
// the policy approved is aborted by the probe before a packet is sent.
func startProxy(t testing.TB, rules []policy.NetRule, allow []string, configure func(*Proxy), opts ...audit.Option) *proxyEnv {
	t.Helper()
	ctx, rec := enter(t, rules, opts...)
	e := &proxyEnv{res: newFakeResolver(), rec: rec, ctx: ctx, serve: make(chan error, 1)}
	e.probe = &probe{allow: map[string]bool{}}
	for _, a := range allow {
		e.probe.allow[a] = true
	}
	e.p = NewProxy(ctx)
	e.p.Dialer = &Dialer{Resolver: e.res, Base: net.Dialer{ControlContext: e.probe.control}}
	e.p.HeaderTimeout = 5 * time.Second
	e.p.IdleTimeout = 10 * time.Second
	if configure != nil {
		configure(e.p)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	go func() { e.serve <- e.p.Serve(ln) }()
	t.Cleanup(func() {
		e.p.Close()
		select {
		case err := <-e.serve:
			if !errors.Is(err, ErrProxyClosed) {
				t.Errorf("Serve returned %v, want ErrProxyClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return after Close")
		}
	})
	return e
}

func (e *proxyEnv) url(scheme string) *url.URL { return &url.URL{Scheme: scheme, Host: e.addr} }

// origin is a loopback HTTP server that counts its requests.
func origin(t testing.TB, tlsToo bool) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		fmt.Fprintf(w, "origin %s %s", r.Method, r.URL.Path)
	})
	var s *httptest.Server
	if tlsToo {
		s = httptest.NewTLSServer(h)
	} else {
		s = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s, &n
}

func records(rec *audit.Recorder, outcome audit.Outcome, detailHas string) []audit.Record {
	var out []audit.Record
	for _, r := range rec.Records() {
		if r.Outcome == outcome && strings.Contains(r.Detail, detailHas) {
			out = append(out, r)
		}
	}
	return out
}

func TestProxyHTTPForward(t *testing.T) {
	srv, hits := origin(t, false)
	port := portOf(t, srv.URL)
	e := startProxy(t, []policy.NetRule{{Host: "allowed.test"}, {CIDR: "127.0.0.1", Ports: []string{port}}},
		[]string{"127.0.0.1:" + port}, nil)
	e.res.set("allowed.test", []string{"127.0.0.1"}).set("denied.test", []string{"127.0.0.2"})
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(e.url("http"))}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()

	for i := range 3 { // keep-alive: each request is its own decision
		resp, err := client.Get("http://allowed.test:" + port + "/a")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "origin GET /a" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
	if got := len(records(e.rec, audit.Allowed, "via proxy: GET http://allowed.test")); got != 3 {
		t.Errorf("%d allow records for 3 requests", got)
	}
	if n := e.res.count("allowed.test"); n != 3 {
		t.Errorf("%d lookups for 3 requests, want one each", n)
	}

	// A name no host rule allows is refused on its name, before any
	// lookup: the query would leave the sandbox.
	resp, err := client.Get("http://denied.test:" + port + "/b")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "denied") || !strings.Contains(string(body), "connections need a net rule") {
		t.Errorf("denied request: %d %q", resp.StatusCode, body)
	}
	if n := e.res.count("denied.test"); n != 0 {
		t.Errorf("the denied name was looked up %d times", n)
	}
	if ps := resp.Header.Get("Proxy-Status"); !strings.Contains(ps, "destination_ip_prohibited") {
		t.Errorf("Proxy-Status %q", ps)
	}
	if len(records(e.rec, audit.Denied, "denied.test")) != 1 {
		t.Errorf("no denial record: %+v", e.rec.Records())
	}
	if hits.Load() != 3 {
		t.Errorf("origin saw %d requests, want 3", hits.Load())
	}
	for _, a := range e.probe.addresses() {
		if a != "127.0.0.1:"+port {
			t.Errorf("the proxy tried to connect to %s", a)
		}
	}
}

func TestProxyHTTPConnect(t *testing.T) {
	srv, hits := origin(t, true)
	port := portOf(t, srv.URL)
	e := startProxy(t, []policy.NetRule{{Host: "allowed.test"}, {CIDR: "127.0.0.1", Ports: []string{port}}},
		[]string{"127.0.0.1:" + port}, nil)
	e.res.set("allowed.test", []string{"127.0.0.1"}).set("other.test", []string{"169.254.169.254"})
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(e.url("http")),
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "example.com"}, // httptest's certificate names example.com
	}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("https://allowed.test:" + port + "/tls")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "origin GET /tls" {
		t.Fatalf("through CONNECT: %q", body)
	}
	_, err = client.Get("https://other.test:" + port + "/tls")
	if err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("CONNECT to metadata: %v", err)
	}
	if len(records(e.rec, audit.Denied, "CONNECT other.test")) != 1 {
		t.Errorf("no denial record")
	}
	if hits.Load() != 1 {
		t.Errorf("origin saw %d requests", hits.Load())
	}
}

func TestProxySOCKS5(t *testing.T) {
	srv := newServer(t, "tcp", "127.0.0.1:0")
	srv6 := newServer(t, "tcp", "[::1]:0")
	e := startProxy(t, []policy.NetRule{
		{Host: "allowed.test"}, {CIDR: "127.0.0.1", Ports: []string{srv.port}}, {CIDR: "::1", Ports: []string{srv6.port}},
	}, []string{"127.0.0.1:" + srv.port, "[::1]:" + srv6.port}, nil)
	e.res.set("allowed.test", []string{"127.0.0.1"}).set("meta.test", []string{"169.254.169.254"})
	d, err := xproxy.SOCKS5("tcp", e.addr, nil, xproxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{
		"allowed.test:" + srv.port, // domain name address type
		"127.0.0.1:" + srv.port,    // IPv4
		"[::1]:" + srv6.port,       // IPv6
	} {
		c, err := d.Dial("tcp", target)
		if err != nil {
			t.Errorf("%s: %v", target, err)
			continue
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		c.Close()
		if string(b) != "hi" {
			t.Errorf("%s: read %q, %v", target, b, err)
		}
	}
	for _, target := range []string{"meta.test:80", "127.0.0.2:" + srv.port, "allowed.test:" + srv6.port} {
		_, err := d.Dial("tcp", target)
		if err == nil || !strings.Contains(err.Error(), "not allowed by ruleset") {
			t.Errorf("%s: %v, want a ruleset refusal", target, err)
		}
	}
	if got := len(records(e.rec, audit.Denied, "socks5 CONNECT")); got != 3 {
		t.Errorf("%d denial records, want 3", got)
	}
}

// TestProxyRebinding: a resolver that answers differently each time cannot
// steer a request: each request resolves once and dials what was judged.
func TestProxyRebinding(t *testing.T) {
	srv := newServer(t, "tcp", "127.0.0.1:0")
	hsrv, _ := origin(t, false)
	hport := portOf(t, hsrv.URL)
	e := startProxy(t, []policy.NetRule{{Host: "rebind.test"}, {CIDR: "127.0.0.1", Ports: []string{srv.port, hport}}},
		[]string{"127.0.0.1:" + srv.port, "127.0.0.1:" + hport}, nil)
	// Good first, then the metadata address.
	e.res.set("rebind.test", []string{"127.0.0.1"}, []string{"169.254.169.254"})
	e.res.set("bad-first.test", []string{"169.254.169.254"}, []string{"127.0.0.1"})

	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "CONNECT rebind.test:%s HTTP/1.1\r\nHost: rebind.test:%s\r\n\r\n", srv.port, srv.port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	if b, _ := io.ReadAll(br); string(b) != "hi" {
		t.Errorf("tunnel read %q", b)
	}
	if n := e.res.count("rebind.test"); n != 1 {
		t.Errorf("%d lookups for one CONNECT", n)
	}

	// Keep-alive forwarding: the second request's own lookup says
	// metadata, so it is refused although a connection to the same
	// host:port is open.
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(e.url("http"))}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	e.res.set("rebind.test", []string{"127.0.0.1"}, []string{"169.254.169.254"})
	e.res.queries["rebind.test"] = 0
	for i, want := range []int{200, 403} {
		resp, err := client.Get("http://rebind.test:" + hport + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("request %d: %d, want %d", i, resp.StatusCode, want)
		}
	}

	// Bad first: refused; nothing dialed to either address.
	before := len(e.probe.addresses())
	d, _ := xproxy.SOCKS5("tcp", e.addr, nil, xproxy.Direct)
	if _, err := d.Dial("tcp", "bad-first.test:"+srv.port); err == nil {
		t.Error("bad first answer was dialed")
	}
	if after := len(e.probe.addresses()); after != before {
		t.Errorf("a refused request reached the socket layer: %v", e.probe.addresses()[before:])
	}
}

// metadataSpellings are the ways a client can name 169.254.169.254 (and
// the AWS IPv6 endpoint) to a proxy.
var metadataSpellings = []string{
	"169.254.169.254:80",
	"[::ffff:169.254.169.254]:80",
	"[::ffff:a9fe:a9fe]:80",
	"[::169.254.169.254]:80",    // IPv4-compatible
	"[::ffff:0:a9fe:a9fe]:80",   // IPv4-translated
	"[64:ff9b::a9fe:a9fe]:80",   // NAT64
	"[64:ff9b:1::a9fe:a9fe]:80", // local-use NAT64
	"[2002:a9fe:a9fe::1]:80",    // 6to4
	"[fd00:ec2::254]:80",
	"2852039166:80",
	"0xa9fea9fe:80",
	"0251.0376.0251.0376:80",
	"169.254.43518:80",
	"169.254.169.254.:80",
	"[169.254.169.254]:80",
	"[fe80::a9fe:a9fe%25eth0]:80",
	"metadata.test:80",
	"METADATA.test.:80",
}

// TestProxyMetadataEverySpelling sends every spelling through HTTP
// CONNECT, HTTP forwarding and SOCKS5 (domain type; IPv4 and IPv6 types
// where the spelling is an address) under catch-all rules: each is refused
// and nothing is dialed.
func TestProxyMetadataEverySpelling(t *testing.T) {
	e := startProxy(t, []policy.NetRule{{CIDR: "0.0.0.0/0"}, {CIDR: "::/0"}, {Host: "metadata.test"}}, nil, nil)
	e.res.set("metadata.test", []string{"169.254.169.254"})
	for _, sp := range metadataSpellings {
		// CONNECT
		c := dialProxy(t, e)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", sp, sp)
		if st := readStatus(t, c); st != 403 && st != 400 {
			t.Errorf("CONNECT %s: status %d", sp, st)
		}
		c.Close()
		// Absolute URI
		c = dialProxy(t, e)
		fmt.Fprintf(c, "GET http://%s/latest/meta-data/ HTTP/1.1\r\nHost: x\r\n\r\n", sp)
		if st := readStatus(t, c); st != 403 && st != 400 {
			t.Errorf("GET %s: status %d", sp, st)
		}
		c.Close()
		// SOCKS5, domain address type
		host, port, _ := strings.Cut(sp, "]:")
		if port == "" {
			i := strings.LastIndexByte(sp, ':')
			host, port = sp[:i], sp[i+1:]
		} else {
			host = strings.TrimPrefix(host, "[")
		}
		if code := socksConnect(t, e, socksAtypDomain, []byte(host), 80); code != socksNotAllowed {
			t.Errorf("SOCKS5 domain %q: reply %d", host, code)
		}
	}
	for _, raw := range [][]byte{
		{169, 254, 169, 254},
	} {
		if code := socksConnect(t, e, socksAtypIPv4, raw, 80); code != socksNotAllowed {
			t.Errorf("SOCKS5 IPv4 %v: reply %d", raw, code)
		}
	}
	for _, s := range []string{"::ffff:169.254.169.254", "::169.254.169.254", "64:ff9b::a9fe:a9fe", "::ffff:0:a9fe:a9fe", "fd00:ec2::254"} {
		a := netipMust(s).As16()
		if code := socksConnect(t, e, socksAtypIPv6, a[:], 80); code != socksNotAllowed {
			t.Errorf("SOCKS5 IPv6 %s: reply %d", s, code)
		}
	}
	if a := e.probe.addresses(); len(a) != 0 {
		t.Errorf("the proxy tried to connect to %v", a)
	}
}

func dialProxy(t testing.TB, e *proxyEnv) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}

func readStatus(t testing.TB, c net.Conn) int {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Errorf("reading the proxy's answer: %v", err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// socksConnect runs a raw SOCKS5 CONNECT and returns the reply code (or
// 0xff when the proxy closed without one).
func socksConnect(t testing.TB, e *proxyEnv, atyp byte, addr []byte, port uint16) byte {
	t.Helper()
	c := dialProxy(t, e)
	defer c.Close()
	msg := []byte{5, 1, 0, 5, 1, 0, atyp}
	if atyp == socksAtypDomain {
		msg = append(msg, byte(len(addr)))
	}
	msg = append(msg, addr...)
	msg = append(msg, byte(port>>8), byte(port))
	c.Write(msg)
	var r [4]byte
	if _, err := io.ReadFull(c, r[:2]); err != nil || r[1] != 0 {
		return 0xff
	}
	if _, err := io.ReadFull(c, r[:]); err != nil {
		return 0xff
	}
	return r[1]
}

func TestProxyAttribution(t *testing.T) {
	e := startProxy(t, []policy.NetRule{{CIDR: "0.0.0.0/0"}}, nil, func(p *Proxy) {
		p.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			ctx, _ = audit.WithCall(ctx, "web_fetch", nil)
			return WithClient(ctx, "sandbox of curl https://example.org")
		}
	})
	c := dialProxy(t, e)
	fmt.Fprintf(c, "CONNECT 10.0.0.1:443 HTTP/1.1\r\nHost: x\r\n\r\n")
	if st := readStatus(t, c); st != 403 {
		t.Errorf("status %d", st)
	}
	c.Close()
	rs := records(e.rec, audit.Denied, "for sandbox of curl https://example.org")
	if len(rs) != 1 || rs[0].Tool != "web_fetch" {
		t.Errorf("records do not attribute the connection: %+v", e.rec.Records())
	}
}

func TestProxyModes(t *testing.T) {
	srv := newServer(t, "tcp", "127.0.0.1:0")
	// No rule allows the loopback server, a special-purpose (hard-tier)
	// address: Warn carries it out only where the host opted in for net.
	t.Run("warn without WithWarnHard", func(t *testing.T) {
		e := startProxy(t, nil, []string{"127.0.0.1:" + srv.port}, nil, audit.WithMode(audit.Net, audit.Warn))
		d, _ := xproxy.SOCKS5("tcp", e.addr, nil, xproxy.Direct)
		if c, err := d.Dial("tcp", "127.0.0.1:"+srv.port); err == nil {
			c.Close()
			t.Fatal("Warn carried out a hard-tier denial without the host's opt-in")
		}
	})
	for _, mode := range []audit.Mode{audit.Warn, audit.Off} {
		t.Run(mode.String(), func(t *testing.T) {
			e := startProxy(t, nil, []string{"127.0.0.1:" + srv.port}, nil, audit.WithMode(audit.Net, mode), audit.WithWarnHard(audit.Net))
			d, _ := xproxy.SOCKS5("tcp", e.addr, nil, xproxy.Direct)
			c, err := d.Dial("tcp", "127.0.0.1:"+srv.port)
			if err != nil {
				t.Fatalf("%v mode refused: %v", mode, err)
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if b, _ := io.ReadAll(c); string(b) != "hi" {
				t.Errorf("read %q", b)
			}
			c.Close()
			if mode == audit.Warn && len(records(e.rec, audit.Warned, "socks5")) != 1 {
				t.Errorf("no warning record: %+v", e.rec.Records())
			}
		})
	}
}

// TestProxyScopeReleased: releasing the scope closes the tunnels judged in
// it and refuses new requests.
func TestProxyScopeReleased(t *testing.T) {
	echo := newEcho(t)
	p, err := policy.New(policy.Spec{Net: policy.NetSpec{Rules: []policy.NetRule{{CIDR: "127.0.0.1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := audit.New(p, audit.WithLogger(discard()))
	ctx, release, _ := g.Enter(context.Background())
	px := NewProxy(ctx)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go px.Serve(ln)
	defer px.Close()
	d, _ := xproxy.SOCKS5("tcp", ln.Addr().String(), nil, xproxy.Direct)
	c, err := d.Dial("tcp", echo)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	release()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the tunnel outlived its scope")
	}
	if _, err := d.Dial("tcp", echo); err == nil {
		t.Error("a released scope still proxies")
	}
}

// newEcho is a loopback echo server; it returns its address.
func newEcho(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	conns := make(chan net.Conn, 4096)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
			go func() {
				// A user-space copy: io.Copy between TCP sockets would
				// splice through pipes the runtime caches, which the
				// descriptor count would see.
				io.Copy(struct{ io.Writer }{c}, struct{ io.Reader }{c})
				c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		close(conns)
		for c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

func netipMust(s string) netip.Addr { return netip.MustParseAddr(s) }
