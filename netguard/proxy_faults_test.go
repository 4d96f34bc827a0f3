package netguard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	xproxy "golang.org/x/net/proxy"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// TestProxyBadInput: malformed HTTP, truncated SOCKS handshakes, unknown
// address types and commands, oversized heads and slow clients each get
// their protocol's error or a closed connection, and nothing is dialed.
func TestProxyBadInput(t *testing.T) {
	e := startProxy(t, []policy.NetRule{{CIDR: "0.0.0.0/0"}}, nil, func(p *Proxy) {
		p.MaxHeaderBytes = 1024
		p.HeaderTimeout = 300 * time.Millisecond
	})
	for _, tc := range []struct {
		name  string
		send  string
		slow  bool   // keep the connection open after sending
		want  string // prefix of the answer; "" means closed without one
		maxMS int    // the answer or close must come within (when slow)
	}{
		{"garbage", "\x00\x01\x02 nonsense\r\n\r\n", false, "HTTP/1.1 400", 0},
		{"origin form", "GET / HTTP/1.1\r\nHost: example.org\r\n\r\n", false, "HTTP/1.1 400", 0},
		{"https absolute URI", "GET https://93.184.216.34/ HTTP/1.1\r\nHost: x\r\n\r\n", false, "HTTP/1.1 400", 0},
		{"CONNECT without port", "CONNECT 93.184.216.34 HTTP/1.1\r\nHost: x\r\n\r\n", false, "HTTP/1.1 403", 0},
		{"CONNECT path", "CONNECT /x HTTP/1.1\r\nHost: x\r\n\r\n", false, "HTTP/1.1 400", 0},
		{"bad header line", "GET http://93.184.216.34/ HTTP/1.1\r\nno colon here\r\n\r\n", false, "HTTP/1.1 400", 0},
		{"oversized head", "GET http://93.184.216.34/ HTTP/1.1\r\nX-Big: " + strings.Repeat("a", 4096) + "\r\n\r\n", false, "HTTP/1.1 431", 0},
		{"slowloris", "GET http://93.184.216.34/ HTTP/1.1\r\nX-A: 1\r\n", true, "HTTP/1.1 408", 3000},
		{"silent client", "", true, "", 3000},
		{"socks truncated greeting", "\x05\x02\x00", false, "", 0},
		{"socks zero methods", "\x05\x00", false, "", 0},
		{"socks auth only", "\x05\x01\x02", false, "\x05\xff", 0},
		{"socks truncated request", "\x05\x01\x00\x05\x01\x00\x01\x7f", false, "\x05\x00", 0},
		{"socks unknown address type", "\x05\x01\x00\x05\x01\x00\x09\x00\x00", false, "\x05\x00\x05\x08", 0},
		{"socks bind", "\x05\x01\x00\x05\x02\x00\x01\x5d\xb8\xd8\x22\x00\x50", false, "\x05\x00\x05\x07", 0},
		{"socks udp associate", "\x05\x01\x00\x05\x03\x00\x01\x5d\xb8\xd8\x22\x00\x50", false, "\x05\x00\x05\x07", 0},
		{"socks empty domain", "\x05\x01\x00\x05\x01\x00\x03\x00\x00\x50", false, "\x05\x00\x05\x01", 0},
		{"socks bad domain", "\x05\x01\x00\x05\x01\x00\x03\x05a\x00b:c\x00\x50", false, "\x05\x00\x05\x02", 0},
		{"socks numeric domain", "\x05\x01\x00\x05\x01\x00\x03\x05127.1\x00\x50", false, "\x05\x00\x05\x02", 0},
		{"socks wrong request version", "\x05\x01\x00\x04\x01\x00\x01\x7f\x00\x00\x01\x00\x50", false, "\x05\x00", 0},
		{"socks4", "\x04\x01\x00\x50\x7f\x00\x00\x01\x00", false, "", 0},
		{"socks slow handshake", "\x05\x01", true, "", 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialProxy(t, e)
			defer c.Close()
			start := time.Now()
			io.WriteString(c, tc.send)
			if !tc.slow {
				c.(*net.TCPConn).CloseWrite()
			}
			got, _ := io.ReadAll(c)
			if !strings.HasPrefix(string(got), tc.want) || (tc.want == "" && len(got) > 0) {
				t.Errorf("answer %q, want prefix %q", got, tc.want)
			}
			if tc.slow && time.Since(start) > time.Duration(tc.maxMS)*time.Millisecond {
				t.Errorf("a slow client held the connection for %v", time.Since(start))
			}
		})
	}
	if a := e.probe.addresses(); len(a) != 0 {
		t.Errorf("bad input was dialed: %v", a)
	}
}

// TestProxyUpstreamReset: an upstream that resets the connection gets the
// client a 502 (HTTP) or a closed tunnel, never a hang.
func TestProxyUpstreamReset(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	e := startProxy(t, []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{port}}}, []string{"127.0.0.1:" + port}, nil)
	c := dialProxy(t, e)
	fmt.Fprintf(c, "GET http://127.0.0.1:%s/ HTTP/1.1\r\nHost: x\r\n\r\n", port)
	if st := readStatus(t, c); st != http.StatusBadGateway {
		t.Errorf("status %d, want 502", st)
	}
	c.Close()
	d, _ := xproxy.SOCKS5("tcp", e.addr, nil, xproxy.Direct)
	tc, err := d.Dial("tcp", "127.0.0.1:"+port)
	if err == nil {
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(tc); err != nil && isTimeout(err) {
			t.Error("the tunnel hung after an upstream reset")
		}
		tc.Close()
	}
}

// TestProxyMaxConns: with MaxConns 2, a third client waits until one of
// the first two leaves.
func TestProxyMaxConns(t *testing.T) {
	srv := newServer(t, "tcp", "127.0.0.1:0")
	e := startProxy(t, []policy.NetRule{{CIDR: "127.0.0.1"}}, []string{"127.0.0.1:" + srv.port}, func(p *Proxy) { p.MaxConns = 2 })
	hold := []net.Conn{dialProxy(t, e), dialProxy(t, e)}
	for _, c := range hold {
		c.Write([]byte{5}) // a SOCKS greeting started, not finished
	}
	third := dialProxy(t, e)
	defer third.Close()
	io.WriteString(third, "\x05\x01\x00")
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := third.Read(make([]byte, 2)); !isTimeout(err) {
		t.Fatalf("a third connection was served beyond MaxConns: %v", err)
	}
	hold[0].Close()
	third.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [2]byte
	if _, err := io.ReadFull(third, b[:]); err != nil || b != [2]byte{5, 0} {
		t.Fatalf("the third connection was not served after a slot freed: %v %v", b, err)
	}
	hold[1].Close()
}

// TestProxyIdleTimeout: a silent tunnel is closed after IdleTimeout; one
// that only moves bytes downstream is not.
func TestProxyIdleTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var first [1]byte
				if _, err := c.Read(first[:]); err != nil || first[0] != 't' {
					return // silent mode: the client sent 's' or nothing
				}
				for range 12 { // ticks for 600 ms, three idle periods
					time.Sleep(50 * time.Millisecond)
					if _, err := c.Write([]byte{'.'}); err != nil {
						return
					}
				}
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	e := startProxy(t, []policy.NetRule{{CIDR: "127.0.0.1"}}, []string{"127.0.0.1:" + port}, func(p *Proxy) { p.IdleTimeout = 200 * time.Millisecond })
	d, _ := xproxy.SOCKS5("tcp", e.addr, nil, xproxy.Direct)

	c, err := d.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte{'t'})
	c.SetDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c)
	c.Close()
	if len(b) != 12 {
		t.Errorf("a tunnel moving bytes one way was cut after %d ticks", len(b))
	}

	c, err = d.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); isTimeout(err) {
		t.Fatal("an idle tunnel was not closed")
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("an idle tunnel lived %v", el)
	}
}

// TestProxyClose: Close ends Serve, closes every tunnel and leaves no
// goroutine behind.
func TestProxyClose(t *testing.T) {
	echo := newEcho(t)
	before := runtime.NumGoroutine()
	ctx, _ := enter(t, []policy.NetRule{{CIDR: "127.0.0.1"}})
	p := NewProxy(ctx)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	d, _ := xproxy.SOCKS5("tcp", ln.Addr().String(), nil, xproxy.Direct)
	var tunnels []net.Conn
	for range 10 {
		c, err := d.Dial("tcp", echo)
		if err != nil {
			t.Fatal(err)
		}
		tunnels = append(tunnels, c)
	}
	p.Close()
	if err := <-served; !errors.Is(err, ErrProxyClosed) {
		t.Errorf("Serve: %v", err)
	}
	for _, c := range tunnels {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); isTimeout(err) {
			t.Error("a tunnel outlived Close")
		}
		c.Close()
	}
	if err := p.ServeConn(ctx, nopConn()); !errors.Is(err, ErrProxyClosed) {
		t.Errorf("ServeConn after Close: %v", err)
	}
	waitGoroutines(t, before)
}

func nopConn() net.Conn {
	a, b := net.Pipe()
	b.Close()
	return a
}

// waitGoroutines waits (bounded) until the goroutine count is back to n.
func waitGoroutines(t testing.TB, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left over (want %d):\n%s", runtime.NumGoroutine()-n, n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProxyServeConn: a forwarder hands over connections with its own
// context; requests are judged and attributed with it.
func TestProxyServeConn(t *testing.T) {
	srv := newServer(t, "tcp", "127.0.0.1:0")
	ctx, rec := enter(t, []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{srv.port}}})
	p := &Proxy{} // no Context: ServeConn brings its own
	defer p.Close()
	a, b := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- p.ServeConn(WithClient(ctx, "sandbox of make test"), b) }()
	a.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(a, "CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: x\r\n\r\n", srv.port)
	br := bufio.NewReader(a)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	if got, _ := io.ReadAll(br); string(got) != "hi" {
		t.Errorf("read %q", got)
	}
	a.Close()
	if err := <-done; err != nil {
		t.Error(err)
	}
	if len(records(rec, audit.Allowed, "for sandbox of make test")) != 1 {
		t.Errorf("no attributed record: %+v", rec.Records())
	}
}

// TestProxyNoScope: a proxy with no scope refuses, naming the fields that
// give it one.
func TestProxyNoScope(t *testing.T) {
	p := &Proxy{}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go p.Serve(ln)
	defer p.Close()
	c, _ := net.Dial("tcp", ln.Addr().String())
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "CONNECT 93.184.216.34:443 HTTP/1.1\r\nHost: x\r\n\r\n")
	b, _ := io.ReadAll(c)
	if !strings.Contains(string(b), "403") || !strings.Contains(string(b), "no guard scope") {
		t.Errorf("answer %q", b)
	}
}

// TestProxyCurl runs curl through both proxy kinds, and through the
// environment variables a sandboxed child would get.
func TestProxyCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed:", err)
	}
	srv, hits := origin(t, false)
	port := portOf(t, srv.URL)
	// metadata.test is allowed by name and resolves to the metadata
	// address, which no rule unlocks; a name no rule allows is refused
	// before any lookup.
	e := startProxy(t, []policy.NetRule{{Host: "allowed.test"}, {Host: "metadata.test"}, {CIDR: "127.0.0.1", Ports: []string{port}}},
		[]string{"127.0.0.1:" + port}, nil)
	e.res.set("allowed.test", []string{"127.0.0.1"}).set("metadata.test", []string{"169.254.169.254"}).set("other.test", []string{"127.0.0.1"})
	home := t.TempDir()
	run := func(env []string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, curl, append([]string{"-q", "-sS", "--max-time", "8", "-w", " %{http_code}"}, args...)...)
		cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	ok := "origin GET /c 200"
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"http proxy", nil, []string{"-x", "http://" + e.addr, "http://allowed.test:" + port + "/c"}, ok},
		{"http proxy CONNECT", nil, []string{"-p", "-x", "http://" + e.addr, "http://allowed.test:" + port + "/c"}, ok},
		{"socks5h", nil, []string{"-x", "socks5h://" + e.addr, "http://allowed.test:" + port + "/c"}, ok},
		{"http_proxy variable", []string{"http_proxy=http://" + e.addr}, []string{"http://allowed.test:" + port + "/c"}, ok},
		{"ALL_PROXY variable", []string{"ALL_PROXY=socks5h://" + e.addr}, []string{"http://allowed.test:" + port + "/c"}, ok},
		{"denied over http", nil, []string{"-x", "http://" + e.addr, "http://metadata.test/latest/"}, "cloud metadata"},
		{"denied over CONNECT", nil, []string{"-p", "-x", "http://" + e.addr, "http://metadata.test/latest/"}, "403"},
		{"denied over socks5h", nil, []string{"-x", "socks5h://" + e.addr, "http://metadata.test/latest/"}, "SOCKS5 connection to metadata.test. (2)"}, // 2: not allowed by ruleset
		{"unresolved over http", nil, []string{"-x", "http://" + e.addr, "http://other.test:" + port + "/c"}, "connections need a net rule"},
		{"unresolved over CONNECT", nil, []string{"-p", "-x", "http://" + e.addr, "http://other.test:" + port + "/c"}, "403"},
		{"unresolved over socks5h", nil, []string{"-x", "socks5h://" + e.addr, "http://other.test:" + port + "/c"}, "SOCKS5 connection to other.test. (2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(tc.env, tc.args...)
			if !strings.Contains(out, tc.want) {
				t.Errorf("curl: %q (%v), want %q", out, err, tc.want)
			}
		})
	}
	if hits.Load() != 5 {
		t.Errorf("origin saw %d requests, want 5", hits.Load())
	}
	if n := len(records(e.rec, audit.Denied, "metadata.test")); n != 3 {
		t.Errorf("%d denial records, want 3", n)
	}
	// other.test resolves to an address a CIDR rule allows, but no rule
	// allows it by name: refused three times, never looked up.
	if n := len(records(e.rec, audit.Denied, "other.test")); n != 3 {
		t.Errorf("%d denial records for other.test, want 3", n)
	}
	if n := e.res.count("other.test"); n != 0 {
		t.Errorf("other.test was looked up %d times", n)
	}
}

func TestControl(t *testing.T) {
	srv := newServer(t, "tcp", "127.0.0.1:0")
	ctx, rec := enter(t, []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{srv.port}}})
	nd := &net.Dialer{Control: Control(ctx), Timeout: 5 * time.Second}
	c, err := nd.Dial("tcp", "127.0.0.1:"+srv.port)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	_, err = nd.Dial("tcp", "127.0.0.2:"+srv.port)
	var de *audit.DenyError
	if !errors.As(err, &de) || !errors.Is(err, audit.ErrDenied) {
		t.Fatalf("dial of an unapproved address: %v", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) {
		t.Errorf("%T is not a *net.OpError", err)
	}
	// ControlContext judges in the dial's own context.
	nd2 := &net.Dialer{ControlContext: ControlContext}
	if c, err := nd2.DialContext(ctx, "tcp", "127.0.0.1:"+srv.port); err != nil {
		t.Error(err)
	} else {
		c.Close()
	}
	_, err = nd2.DialContext(context.Background(), "tcp", "127.0.0.1:"+srv.port)
	if !errors.Is(err, audit.ErrNoScope) || !strings.Contains(err.Error(), "netguard.Control") {
		t.Errorf("no scope: %v", err)
	}
	if len(records(rec, audit.Denied, "socket hook")) != 1 {
		t.Errorf("records: %+v", rec.Records())
	}
}

func TestDialNoScopeNamesIdiom(t *testing.T) {
	_, err := (&Dialer{}).Dial("tcp", "127.0.0.1:1")
	if !errors.Is(err, audit.ErrNoScope) || !strings.Contains(err.Error(), "Dialer.Context") {
		t.Errorf("%v", err)
	}
	if d := Check(context.Background(), "tcp", "127.0.0.1:1"); d.Allowed || !strings.Contains(d.Rule.Hint, "netguard.Control") {
		t.Errorf("%+v", d)
	}
}

func TestCheckModes(t *testing.T) {
	for _, tc := range []struct {
		mode    audit.Mode
		addr    string
		allowed bool
		out     audit.Outcome
	}{
		{audit.Enforce, "10.0.0.1:80", false, audit.Denied},
		// Warn refuses hard denials as DialContext does (WithWarnHard
		// opts in), and carries out soft ones.
		{audit.Warn, "10.0.0.1:80", false, audit.Denied},
		{audit.Warn, "8.8.8.8:80", true, audit.Warned},
		{audit.Warn, "127.1:80", false, audit.Denied}, // invalid input is denied in Warn too
		{audit.Off, "10.0.0.1:80", true, audit.Allowed},
		{audit.Off, "127.1:80", true, audit.Allowed},
	} {
		ctx, _ := enter(t, nil, audit.WithMode(audit.Net, tc.mode))
		d := Check(ctx, "tcp", tc.addr)
		if d.Allowed != tc.allowed || d.Outcome != tc.out {
			t.Errorf("%v %s: %+v", tc.mode, tc.addr, d)
		}
	}
}

// TestProxyServeConnCancel: cancelling ServeConn's context closes its
// tunnel.
func TestProxyServeConnCancel(t *testing.T) {
	echo := newEcho(t)
	ctx, _ := enter(t, []policy.NetRule{{CIDR: "127.0.0.1"}})
	cctx, cancel := context.WithCancel(ctx)
	p := &Proxy{}
	defer p.Close()
	a, b := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- p.ServeConn(cctx, b) }()
	a.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(a, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", echo)
	br := bufio.NewReader(a)
	if resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	cancel()
	if _, err := br.ReadByte(); isTimeout(err) {
		t.Error("the tunnel outlived its context")
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("ServeConn did not return")
	}
}
