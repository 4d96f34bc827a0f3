package netguard

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// fakeResolver answers from a table. It is a mock because tests may not use
// real DNS; connections in these tests are real (loopback). Each name has a
// list of successive answers; the last one repeats.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	queries map[string]int
}

var _ Resolver = (*fakeResolver)(nil)

func newFakeResolver() *fakeResolver {
	return &fakeResolver{answers: map[string][][]netip.Addr{}, queries: map[string]int{}}
}

// set gives name one answer per call of LookupNetIP, in order.
func (f *fakeResolver) set(name string, answers ...[]string) *fakeResolver {
	f.mu.Lock()
	defer f.mu.Unlock()
	var as [][]netip.Addr
	for _, a := range answers {
		var one []netip.Addr
		for _, s := range a {
			one = append(one, netip.MustParseAddr(s))
		}
		as = append(as, one)
	}
	f.answers[name] = as
	return f
}

func (f *fakeResolver) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queries[name]
}

func (f *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.queries[host]
	f.queries[host] = n + 1
	as, ok := f.answers[host]
	if !ok || len(as) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if n >= len(as) {
		n = len(as) - 1
	}
	return as[n], nil
}

// enter builds a guard on rules and returns a context inside its scope and
// the recorder (which also keeps allows).
func enter(t testing.TB, rules []policy.NetRule, opts ...audit.Option) (context.Context, *audit.Recorder) {
	t.Helper()
	p, err := policy.New(policy.Spec{Net: policy.NetSpec{Rules: rules}})
	if err != nil {
		t.Fatal(err)
	}
	rec := audit.NewRecorder()
	opts = append([]audit.Option{audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		audit.WithRecorder(rec), audit.WithLogAllows()}, opts...)
	g, err := audit.New(p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return ctx, rec
}

// server is a real loopback TCP server that counts accepted connections
// and writes "hi" on each.
type server struct {
	ln       net.Listener
	accepted atomic.Int32
	port     string
}

func newServer(t testing.TB, network, addr string) *server {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	s := &server{ln: ln}
	_, s.port, _ = net.SplitHostPort(ln.Addr().String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return s
}

var errAbort = errors.New("test: connect aborted before any packet was sent")

// probe is a socket hook that records every address the kernel is asked
// to connect to and aborts all of them except allow, so no test ever sends
// a packet beyond loopback.
type probe struct {
	mu    sync.Mutex
	seen  []string
	allow map[string]bool
}

func (p *probe) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, address)
	if p.allow[address] {
		return nil
	}
	return errAbort
}

func (p *probe) addresses() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func denyTier(t testing.TB, err error) policy.Tier {
	t.Helper()
	var de *audit.DenyError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *audit.DenyError", err, err)
	}
	return de.Decision.Tier
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func parseAddrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}
