package netguard

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	xproxy "golang.org/x/net/proxy"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// dnsServer is a DNS server on loopback UDP that answers every A question
// with 127.0.0.1 (and every other one with no answer) and counts the
// questions by name.
type dnsServer struct {
	pc      net.PacketConn
	mu      sync.Mutex
	queries map[string]int
}

func newDNSServer(t *testing.T) *dnsServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("cannot listen on loopback UDP: %v", err)
	}
	s := &dnsServer{pc: pc, queries: map[string]int{}}
	t.Cleanup(func() { pc.Close() })
	go s.serve()
	return s
}

func (s *dnsServer) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		name := strings.TrimSuffix(q.Name.String(), ".")
		s.mu.Lock()
		s.queries[name]++
		s.mu.Unlock()
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
		b.EnableCompression()
		_ = b.StartQuestions()
		_ = b.Question(q)
		_ = b.StartAnswers()
		if q.Type == dnsmessage.TypeA {
			_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0},
				dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}})
		}
		if msg, err := b.Finish(); err == nil {
			_, _ = s.pc.WriteTo(msg, from)
		}
	}
}

func (s *dnsServer) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[name]
}

// resolver is a pure-Go resolver that asks only this server.
func (s *dnsServer) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.pc.LocalAddr().String())
	}}
}

// TestProxyDeniedNameNeverQueried: through every protocol the proxy
// speaks, a name no rule allows by name is refused without a single DNS
// question reaching the server (a question is a way out: its labels reach
// whoever answers for the domain), even where the address it would resolve
// to is allowed by an address rule; an allowed name is asked and served.
func TestProxyDeniedNameNeverQueried(t *testing.T) {
	dns := newDNSServer(t)
	srv, hits := origin(t, false)
	port := portOf(t, srv.URL)
	e := startProxy(t, []policy.NetRule{{Host: "allowed.test"}, {CIDR: "127.0.0.1", Ports: []string{port}}},
		[]string{"127.0.0.1:" + port}, func(p *Proxy) { p.Dialer.Resolver = dns.resolver() })

	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(e.url("http"))}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	get := func(u string) int {
		resp, err := client.Get(u)
		if err != nil {
			return -1
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("http://allowed.test:" + port + "/a"); code != 200 {
		t.Fatalf("allowed name: status %d", code)
	}
	if dns.count("allowed.test") == 0 {
		t.Fatal("the allowed name was never asked: the server is not the proxy's resolver")
	}
	socks, err := xproxy.SOCKS5("tcp", e.addr, nil, xproxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	connect := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(e.url("http")),
		DialContext: (&net.Dialer{}).DialContext, ForceAttemptHTTP2: false}, Timeout: 10 * time.Second}
	defer connect.CloseIdleConnections()
	for _, name := range []string{"leak.test", "c2VjcmV0.exfil.example", "sub.allowed.test.evil"} {
		if code := get("http://" + name + ":" + port + "/b"); code != http.StatusForbidden {
			t.Errorf("%s over http: status %d, want 403", name, code)
		}
		if _, err := connect.Get("https://" + name + ":" + port + "/c"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("%s over CONNECT: %v", name, err)
		}
		if c, err := socks.Dial("tcp", name+":"+port); err == nil {
			c.Close()
			t.Errorf("%s over socks5: connected", name)
		}
		if n := dns.count(name); n != 0 {
			t.Errorf("%s: %d DNS questions reached the server", name, n)
		}
	}
	if hits.Load() != 1 {
		t.Errorf("origin saw %d requests, want 1", hits.Load())
	}
	// localhost is the machine's own name: looked up (its answer never
	// leaves the machine) and judged by its addresses.
	get("http://localhost:" + port + "/d")
	var decided []audit.Record
	for _, r := range e.rec.Records() {
		if r.Target == "localhost:"+port {
			decided = append(decided, r)
		}
	}
	if len(decided) != 1 || !strings.Contains(decided[0].Resolved, "127.0.0.1") {
		t.Errorf("localhost: decisions %+v, want one on its loopback addresses", decided)
	}
}
