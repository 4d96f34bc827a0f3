package netguard

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

func portOf(t testing.TB, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

func get(c *http.Client, ctx context.Context, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestRedirectToDeniedHost: a redirect from an allowed host to a denied one
// is refused, and the denied server never sees a request.
func TestRedirectToDeniedHost(t *testing.T) {
	var bHits atomic.Int32
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bHits.Add(1)
		io.WriteString(w, "B")
	}))
	defer b.Close()
	bPort := portOf(t, b.URL)
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "A")
		case "/same":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/by-name":
			http.Redirect(w, r, "http://denied.test:"+bPort+"/", http.StatusFound)
		case "/by-address":
			http.Redirect(w, r, "http://127.0.0.1:"+bPort+"/", http.StatusFound)
		case "/metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		}
	}))
	defer a.Close()
	aPort := portOf(t, a.URL)

	res := newFakeResolver().set("allowed.test", []string{"127.0.0.1"}).set("denied.test", []string{"127.0.0.1"})
	ctx, _ := enter(t, []policy.NetRule{
		{Host: "allowed.test", Ports: []string{aPort}},
		{CIDR: "127.0.0.1", Ports: []string{aPort}},
	})
	c := NewClient(ctx)
	c.Transport.(*Transport).Dialer = &Dialer{Resolver: res}
	defer c.CloseIdleConnections()

	base := "http://allowed.test:" + aPort
	for _, path := range []string{"/ok", "/same"} {
		if body, err := get(c, ctx, base+path); err != nil || body != "A" {
			t.Fatalf("%s: %q, %v", path, body, err)
		}
	}
	for _, path := range []string{"/by-name", "/by-address", "/metadata"} {
		_, err := get(c, ctx, base+path)
		if !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("%s: err = %v, want a permission error", path, err)
		}
		var de *audit.DenyError
		if !errors.As(err, &de) {
			t.Fatalf("%s: no DenyError in %v", path, err)
		}
		// The dial ran on net/http's goroutine; the caller is still the
		// code that made the request.
		if c := audit.FormatFrame(de.Caller); !strings.HasPrefix(c, "http_test.go:") || !strings.HasSuffix(c, "netguard.get") {
			t.Fatalf("%s: caller = %q, want the test's get helper", path, c)
		}
	}
	if n := bHits.Load(); n != 0 {
		t.Fatalf("the denied server saw %d requests", n)
	}
}

// TestProxyDoesNotBypass: with a proxy configured, the proxy itself must be
// allowed and each request's own host is checked before it is sent.
func TestProxyDoesNotBypass(t *testing.T) {
	var hits atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A forward proxy that answers itself instead of connecting out.
		hits.Add(1)
		io.WriteString(w, "via proxy "+r.Method+" "+r.URL.String())
	}))
	defer proxy.Close()
	pu, _ := url.Parse(proxy.URL)

	res := newFakeResolver().set("allowed.test", []string{pubA}).set("denied.test", []string{pubB}).
		set("private.test", []string{"10.0.0.8"})
	rules := []policy.NetRule{{Host: "allowed.test", Ports: []string{"80", "443"}}, {Host: "private.test"}}
	ctx, _ := enter(t, append(rules, policy.NetRule{CIDR: "127.0.0.1", Ports: []string{pu.Port()}}))
	tr := &Transport{Context: ctx, Dialer: &Dialer{Resolver: res}, Proxy: http.ProxyURL(pu)}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}

	body, err := get(c, ctx, "http://allowed.test/x")
	if err != nil || !strings.HasPrefix(body, "via proxy GET http://allowed.test/x") {
		t.Fatalf("allowed via proxy: %q, %v", body, err)
	}
	for _, u := range []string{"http://denied.test/", "https://denied.test/", "http://169.254.169.254/",
		"http://private.test/", "http://127.1/", "http://allowed.test:8080/"} {
		if _, err := get(c, ctx, u); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("%s via proxy: err = %v, want a permission error", u, err)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the proxy saw %d requests, want 1", n)
	}

	// The proxy itself needs a rule.
	ctx2, _ := enter(t, rules)
	tr2 := &Transport{Dialer: &Dialer{Resolver: res}, Proxy: http.ProxyURL(pu)}
	defer tr2.CloseIdleConnections()
	if _, err := get(&http.Client{Transport: tr2}, ctx2, "http://allowed.test/"); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("unlisted proxy: %v", err)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the proxy saw %d requests, want 1", n)
	}
}

// TestTLSGoesThroughDialer: HTTPS is dialed by the guarded dialer too (no
// DialTLSContext path around it).
func TestTLSGoesThroughDialer(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "tls")
	}))
	defer srv.Close()
	tlsConf := srv.Client().Transport.(*http.Transport).TLSClientConfig

	ctx, _ := enter(t, nil)
	tr := &Transport{Context: ctx, TLSClientConfig: tlsConf}
	defer tr.CloseIdleConnections()
	if _, err := get(&http.Client{Transport: tr}, ctx, srv.URL); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("no rule: %v", err)
	}
	ctx, _ = enter(t, []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{portOf(t, srv.URL)}}})
	tr = &Transport{Context: ctx, TLSClientConfig: tlsConf}
	defer tr.CloseIdleConnections()
	if body, err := get(&http.Client{Transport: tr}, ctx, srv.URL); err != nil || body != "tls" {
		t.Fatalf("with rule: %q, %v", body, err)
	}
}

// TestPoolsPerScope: a pooled connection made in one scope is not reused by
// another, and a released scope's transport refuses even with a connection
// in the pool.
func TestPoolsPerScope(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	p, err := policy.New(policy.Spec{Net: policy.NetSpec{Rules: []policy.NetRule{{CIDR: "127.0.0.1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := audit.New(p, audit.WithLogger(discard()))
	ctxA, releaseA, _ := g.Enter(context.Background())
	ctxB, releaseB, _ := g.Enter(context.Background())
	defer releaseB()
	tr := NewTransport(ctxA)
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}

	for range 3 {
		if body, err := get(c, ctxA, srv.URL); err != nil || body != "ok" {
			t.Fatalf("scope A: %q, %v", body, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections in one scope, want 1 (pooled)", n)
	}
	if body, err := get(c, ctxB, srv.URL); err != nil || body != "ok" {
		t.Fatalf("scope B: %q, %v", body, err)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections after scope B, want 2 (no sharing)", n)
	}
	// A request without a scope of its own uses the Transport's (A).
	if body, err := get(c, context.Background(), srv.URL); err != nil || body != "ok" {
		t.Fatalf("default scope: %q, %v", body, err)
	}
	// A restricted scope gets its own pool and its narrower policy.
	empty, _ := policy.New(policy.Spec{})
	rctx, rrelease, _ := audit.Restrict(ctxA, empty)
	defer rrelease()
	if _, err := get(c, rctx, srv.URL); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("restricted scope reused a pooled connection: %v", err)
	}
	releaseA()
	if _, err := get(c, ctxA, srv.URL); !errors.Is(err, audit.ErrScopeClosed) {
		t.Fatalf("released scope: %v", err)
	}
	if _, err := get(c, context.Background(), srv.URL); !errors.Is(err, audit.ErrScopeClosed) {
		t.Fatalf("released default scope: %v", err)
	}
}

// TestHTTPClientGuards: the HTTPClient type decides like NewClient: an
// allowed loopback server answers, a denied address is refused.
func TestHTTPClientGuards(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	ctx, _ := enter(t, []policy.NetRule{{CIDR: host, Ports: []string{port}}})
	c := NewHTTPClient(ctx)
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hi" {
		t.Errorf("body %q", b)
	}
	if _, err := c.Get("http://169.254.169.254/"); !errors.Is(err, audit.ErrDenied) {
		t.Errorf("metadata address: %v", err)
	}
}
