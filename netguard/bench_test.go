package netguard

import (
	"context"
	"net"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// BenchmarkDial compares a guarded dial with a raw net.Dialer dial to the
// same loopback listener, in one run. Each iteration connects and closes.
func BenchmarkDial(b *testing.B) {
	srv := newServer(b, "tcp", "127.0.0.1:0")
	addr := "127.0.0.1:" + srv.port
	ctx := benchScope(b, []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{srv.port}}, {Host: "svc.test"}})
	res := newFakeResolver().set("svc.test", []string{"127.0.0.1"})

	run := func(b *testing.B, dial func(context.Context) (net.Conn, error)) {
		for b.Loop() {
			c, err := dial(ctx)
			if err != nil {
				b.Fatal(err)
			}
			// Reset instead of a FIN so that no TIME_WAIT state piles up
			// and skews later iterations; raw and guarded alike.
			// A guarded dial returns a *Conn: the TCP connection is
			// its NetConn.
			tc := c
			if nc, ok := c.(interface{ NetConn() net.Conn }); ok {
				tc = nc.NetConn()
			}
			tc.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}
	raw := &net.Dialer{}
	b.Run("raw", func(b *testing.B) {
		run(b, func(ctx context.Context) (net.Conn, error) { return raw.DialContext(ctx, "tcp", addr) })
	})
	g := &Dialer{}
	b.Run("guarded", func(b *testing.B) {
		run(b, func(ctx context.Context) (net.Conn, error) { return g.DialContext(ctx, "tcp", addr) })
	})
	gn := &Dialer{Resolver: res}
	b.Run("guarded-name", func(b *testing.B) {
		run(b, func(ctx context.Context) (net.Conn, error) { return gn.DialContext(ctx, "tcp", "svc.test:"+srv.port) })
	})
}

// BenchmarkCheck is the decision alone, without a socket.
func BenchmarkCheck(b *testing.B) {
	ctx := benchScope(b, []policy.NetRule{{CIDR: "127.0.0.1"}})
	for b.Loop() {
		Check(ctx, "tcp", "127.0.0.1:80")
	}
}

// benchScope enters a guard as a host would run it: allows are not logged
// (denials, rescues and warnings are).
func benchScope(b *testing.B, rules []policy.NetRule) context.Context {
	p, err := policy.New(policy.Spec{Net: policy.NetSpec{Rules: rules}})
	if err != nil {
		b.Fatal(err)
	}
	g, err := audit.New(p, audit.WithLogger(discard()))
	if err != nil {
		b.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(release)
	return ctx
}
