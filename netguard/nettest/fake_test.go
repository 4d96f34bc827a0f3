package nettest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/netguard"
	"github.com/auditguard/auditguard/netguard/nettest"
	"github.com/auditguard/auditguard/policy"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// enter returns a scope of a guard that serves dials from f and allows
// api.example.com:80 and :443, db.example.com:5432, internal.example.com
// and 127.0.0.1:6379.
func enter(t *testing.T, f *nettest.Fake) context.Context {
	t.Helper()
	pol, err := policy.New(policy.Spec{Net: policy.NetSpec{Rules: []policy.NetRule{
		{Host: "api.example.com", Ports: []string{"80", "443"}},
		{Host: "db.example.com", Ports: []string{"5432"}},
		{Host: "internal.example.com"},
		{CIDR: "127.0.0.1", Ports: []string{"6379"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(pol, audit.WithLogger(quiet), netguard.WithDouble(f))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release(); f.Close() })
	return ctx
}

// redisPing is host code: it speaks a line protocol over a guarded dial.
func redisPing(ctx context.Context, addr string) (string, error) {
	var d netguard.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

func TestConversation(t *testing.T) {
	cases := []struct {
		name     string
		script   func(f *nettest.Fake)
		addr     string
		want     string
		wantIs   error
		problems string // substring of Verify, "" for none
	}{
		{name: "followed", script: func(f *nettest.Fake) {
			f.Expect("tcp", "127.0.0.1:6379").Recv("PING\r\n").Send("+PONG\r\n")
		}, addr: "127.0.0.1:6379", want: "+PONG\r\n"},
		{name: "client says something else", script: func(f *nettest.Fake) {
			f.Expect("tcp", "127.0.0.1:6379").Recv("AUTH x\r\n").Send("+OK\r\n")
		}, addr: "127.0.0.1:6379", wantIs: io.EOF, problems: `Recv("AUTH x\r\n"): got "PING\r\n"`},
		{name: "ip route matches a name", script: func(f *nettest.Fake) {
			f.Resolve("db.example.com", "93.184.215.20")
			f.Expect("tcp", "93.184.215.20:5432").Recv("PING\r\n").Send("+PONG\r\n")
		}, addr: "db.example.com:5432", want: "+PONG\r\n"},
		{name: "unscripted", script: func(f *nettest.Fake) {},
			addr: "db.example.com:5432", wantIs: nettest.ErrUnexpected, problems: "unexpected dial tcp db.example.com:5432 at fake_test.go:"},
		{name: "refused", script: func(f *nettest.Fake) { f.Expect("tcp", "db.example.com:5432").Refuse(syscall.ECONNREFUSED) },
			addr: "db.example.com:5432", wantIs: syscall.ECONNREFUSED},
		{name: "second dial past Times", script: func(f *nettest.Fake) {
			f.Expect("tcp", "127.0.0.1:6379").Recv("PING\r\n").Send("+PONG\r\n")
			f.Expect("tcp", "127.0.0.1:6379").Recv("PING\r\n").Send("+PONG 2\r\n")
		}, addr: "127.0.0.1:6379", want: "+PONG\r\n", problems: "was used 0 times, expected 1 dials"},
		{name: "denied by the policy never reaches the fake", script: func(f *nettest.Fake) {
			f.Expect("tcp", "127.0.0.1:22").AnyTimes()
		}, addr: "127.0.0.1:22", wantIs: fs.ErrPermission},
		{name: "a faked name is judged by what it resolves to", script: func(f *nettest.Fake) {
			f.Resolve("internal.example.com", "10.0.0.5")
			f.Expect("tcp", "internal.example.com:80").AnyTimes()
		}, addr: "internal.example.com:80", wantIs: audit.ErrDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &nettest.Fake{}
			tc.script(f)
			ctx := enter(t, f)
			got, err := redisPing(ctx, tc.addr)
			if got != tc.want || (tc.wantIs == nil) != (err == nil) || (tc.wantIs != nil && !errors.Is(err, tc.wantIs)) {
				t.Fatalf("got %q %v, want %q %v", got, err, tc.want, tc.wantIs)
			}
			if errors.Is(err, audit.ErrDenied) && len(f.Dials()) != 0 {
				t.Fatalf("a denied dial reached the fake: %+v", f.Dials())
			}
			v := f.Verify()
			if (v == nil) != (tc.problems == "") || (v != nil && !strings.Contains(v.Error(), tc.problems)) {
				t.Fatalf("Verify: %v, want %q", v, tc.problems)
			}
		})
	}
}

func TestConnIsRealTCP(t *testing.T) {
	f := &nettest.Fake{}
	f.Expect("tcp", "127.0.0.1:6379").Serve(func(c net.Conn) { io.Copy(c, c) })
	ctx := enter(t, f)
	var d netguard.Dialer
	c, err := d.DialContext(ctx, "tcp", "127.0.0.1:6379")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The dialer hands back its tracked *netguard.Conn (release closes
	// it); the connection underneath is the real one.
	gc, ok := c.(*netguard.Conn)
	if !ok {
		t.Fatalf("%T, want *netguard.Conn", c)
	}
	tc, ok := gc.NetConn().(*net.TCPConn)
	if !ok {
		t.Fatalf("%T underneath", gc.NetConn())
	}
	io.WriteString(tc, "echo")
	tc.CloseWrite()
	b, err := io.ReadAll(tc)
	if err != nil || string(b) != "echo" {
		t.Fatalf("%q %v", b, err)
	}
}

func TestHandleServesNewClient(t *testing.T) {
	f := &nettest.Fake{}
	route := f.Handle("api.example.com:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
	}))
	ctx := enter(t, f)
	client := netguard.NewClient(ctx)
	for _, p := range []string{"/a", "/b", "/c"} {
		resp, err := client.Get("http://api.example.com" + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "GET "+p {
			t.Fatalf("%q", b)
		}
	}
	if reqs := route.Requests(); len(reqs) != 3 || reqs[2].URL != "/c" {
		t.Fatalf("%+v", reqs)
	}
	// Pooled keep-alive connections: fewer dials than requests.
	if d := route.Used(); d < 1 || d > 3 {
		t.Fatalf("%d dials", d)
	}
	// An https URL to the same host is another address, unscripted.
	if _, err := client.Get("https://api.example.com/"); !errors.Is(err, nettest.ErrUnexpected) {
		t.Fatalf("%v", err)
	}
	if err := f.Verify(); err == nil || !strings.Contains(err.Error(), "unexpected dial tcp api.example.com:443") {
		t.Fatalf("Verify: %v", err)
	}
}

// TestUnusedHandle: a Handle route nobody requested is unused.
func TestUnusedHandle(t *testing.T) {
	f := &nettest.Fake{}
	f.Handle("api.example.com:80", http.NotFoundHandler())
	f.Handle("api.example.com:443", http.NotFoundHandler()).AnyTimes()
	enter(t, f)
	err := f.Verify()
	if err == nil || !strings.Contains(err.Error(), `Handle("api.example.com:80") at fake_test.go:`) || strings.Contains(err.Error(), ":443") {
		t.Fatalf("Verify: %v", err)
	}
}
