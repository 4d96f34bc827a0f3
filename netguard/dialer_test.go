package netguard

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

const pubA, pubB = "93.184.216.34", "93.184.216.35"

// TestDialTable dials every input of the table through a guarded
// Dialer. No rule unlocks a special-purpose address here, so every such
// input must be denied before any socket is made; allowed public targets
// are aborted in the socket hook, before a packet leaves.
func TestDialTable(t *testing.T) {
	res := newFakeResolver().
		set("public.test", []string{pubA}).
		set("loop.test", []string{"127.0.0.1"}).
		set("mixed.test", []string{pubA, "10.0.0.7"}).
		set("unlisted.test", []string{pubB})
	ctx, rec := enter(t, []policy.NetRule{
		{Host: "public.test"}, {Host: "loop.test"}, {Host: "mixed.test"},
	})
	const (
		allowed = policy.TierNone
		soft    = policy.TierSoft
		hard    = policy.TierHard
		invalid = policy.TierInvalid
	)
	for _, tc := range []struct {
		network, address string
		want             policy.Tier
		rule             string // substring of the deciding rule or detail
	}{
		{"tcp", "127.0.0.1:80", hard, "loopback"},
		{"tcp", "127.1:80", invalid, "numeric IPv4"},
		{"tcp", "2130706433:80", invalid, "numeric IPv4"},
		{"tcp", "0x7f000001:80", invalid, "numeric IPv4"},
		{"tcp", "0177.0.0.1:80", invalid, "numeric IPv4"},
		{"tcp", "0.0.0.0:80", hard, "this network"},
		{"tcp", "[::]:80", hard, "unspecified"},
		{"tcp", "[::1]:80", hard, "loopback"},
		{"tcp", "[::ffff:127.0.0.1]:80", hard, "loopback"},
		{"tcp", "[::ffff:7f00:1]:80", hard, "loopback"},
		{"tcp", "169.254.169.254:80", hard, "cloud metadata"},
		{"tcp", "[fd00:ec2::254]:80", hard, "cloud metadata"},
		{"tcp", "100.64.0.1:80", hard, "CGNAT"},
		{"tcp", "10.0.0.1:80", hard, "private use"},
		{"tcp", "172.16.0.1:80", hard, "private use"},
		{"tcp", "192.168.1.1:80", hard, "private use"},
		{"tcp", "[fe80::1%eth0]:80", invalid, "zones"},
		{"tcp", "[64:ff9b::7f00:1]:80", hard, "NAT64"},
		{"tcp", "[2002:7f00:1::]:80", hard, "6to4"},
		{"tcp", ":80", invalid, "empty host"},
		{"tcp", "loop.test:80", hard, "loopback"},
		{"tcp", "mixed.test:443", hard, "private use"},
		{"tcp", "public.test:443", allowed, "public.test"},
		{"tcp", "PUBLIC.test.:443", allowed, "public.test"},
		{"tcp", "unlisted.test:443", soft, "need a net rule"},
		{"tcp", "nxdomain.test:443", soft, "need a net rule"},
		{"tcp", pubA + ":443", soft, "need a net rule"},
		{"tcp", "public.test", invalid, "missing port"},
		{"tcp", "public.test:https", invalid, "port"},
		{"tcp", "[127.0.0.1]:80", invalid, "brackets"},
		{"tcp4", "[2606:2800:220:1::1]:80", invalid, "family"},
		{"udp", "public.test:53", soft, ""},
		{"ip", "public.test:443", invalid, "unknown network"},
		{"sctp", "public.test:443", invalid, "unknown network"},
	} {
		t.Run(tc.network+" "+tc.address, func(t *testing.T) {
			rec.Reset()
			pr := &probe{}
			d := &Dialer{Resolver: res}
			d.Base.ControlContext = pr.control
			conn, err := d.DialContext(ctx, tc.network, tc.address)
			if conn != nil {
				conn.Close()
				t.Fatal("a connection was made")
			}
			if n := len(rec.Records()); n != 1 {
				t.Errorf("%d records, want one per dial", n)
			}
			if tc.want == allowed {
				if !errors.Is(err, errAbort) {
					t.Fatalf("err = %v, want the probe's abort", err)
				}
				if got := pr.addresses(); !slices.Equal(got, []string{pubA + ":443"}) {
					t.Fatalf("socket asked for %v", got)
				}
				return
			}
			if got := pr.addresses(); len(got) != 0 {
				t.Fatalf("a socket was made for a denied dial: %v", got)
			}
			if !errors.Is(err, fs.ErrPermission) || !errors.Is(err, audit.ErrDenied) {
				t.Fatalf("err = %v, want a permission error", err)
			}
			if tier := denyTier(t, err); tier != tc.want {
				t.Fatalf("tier %v, want %v: %v", tier, tc.want, err)
			}
			if !strings.Contains(err.Error(), tc.rule) {
				t.Errorf("error does not mention %q:\n%v", tc.rule, err)
			}
			if !strings.Contains(err.Error(), "dialer_test.go") {
				t.Errorf("error does not name the caller:\n%v", err)
			}
		})
	}
}

// TestRebinding: the resolver answers public first and loopback next. The
// dial connects only to what was approved, with one lookup per dial, and
// the next dial (which sees loopback) is denied.
func TestRebinding(t *testing.T) {
	res := newFakeResolver().set("rebind.test", []string{pubA}, []string{"127.0.0.1"})
	ctx, _ := enter(t, []policy.NetRule{{Host: "rebind.test"}})
	pr := &probe{}
	d := &Dialer{Resolver: res}
	d.Base.ControlContext = pr.control
	if _, err := d.DialContext(ctx, "tcp", "rebind.test:443"); !errors.Is(err, errAbort) {
		t.Fatalf("first dial: %v", err)
	}
	if n := res.count("rebind.test"); n != 1 {
		t.Fatalf("%d lookups for one dial", n)
	}
	_, err := d.DialContext(ctx, "tcp", "rebind.test:443")
	if tier := denyTier(t, err); tier != policy.TierHard {
		t.Fatalf("second dial: tier %v", tier)
	}
	if got := pr.addresses(); !slices.Equal(got, []string{pubA + ":443"}) {
		t.Fatalf("socket asked for %v; never the private answer", got)
	}
}

// TestLoopbackNeedsRule: a real loopback server is reachable only with an
// explicit address rule naming it, by literal or by a name resolving to it.
func TestLoopbackNeedsRule(t *testing.T) {
	srv := newServer(t, "tcp", "127.0.0.1:0")
	res := newFakeResolver().set("svc.test", []string{"127.0.0.1"})
	addr := "127.0.0.1:" + srv.port

	for _, tc := range []struct {
		name    string
		rules   []policy.NetRule
		target  string
		allowed bool
	}{
		{"no rule", nil, addr, false},
		{"host rule alone", []policy.NetRule{{Host: "svc.test"}}, "svc.test:" + srv.port, false},
		{"catch-all", []policy.NetRule{{CIDR: "0.0.0.0/0"}, {CIDR: "::/0"}}, addr, false},
		{"other port", []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{"1"}}}, addr, false},
		{"exact rule", []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{srv.port}}}, addr, true},
		{"loopback block", []policy.NetRule{{CIDR: "127.0.0.0/8"}}, addr, true},
		{"name and rule", []policy.NetRule{{Host: "svc.test"}, {CIDR: "127.0.0.1"}}, "svc.test:" + srv.port, true},
		{"deny wins", []policy.NetRule{{CIDR: "127.0.0.1"}, {CIDR: "127.0.0.0/8", Deny: true}}, addr, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, _ := enter(t, tc.rules)
			before := srv.accepted.Load()
			conn, err := (&Dialer{Resolver: res}).DialContext(ctx, "tcp", tc.target)
			if !tc.allowed {
				if err == nil {
					conn.Close()
					t.Fatal("dial allowed")
				}
				if !errors.Is(err, fs.ErrPermission) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			b, err := io.ReadAll(conn)
			if err != nil || string(b) != "hi" {
				t.Fatalf("read %q, %v", b, err)
			}
			if srv.accepted.Load() != before+1 {
				t.Fatal("server did not see the connection")
			}
		})
	}
}

// TestCallbacksOncePerDial: a name with two loopback answers, the first of
// which refuses, costs one OnCall and one record, and the dial falls back to
// the second address.
func TestCallbacksOncePerDial(t *testing.T) {
	srv := newServer(t, "tcp", "127.0.0.1:0")
	// 127.0.0.2 is loopback on Linux but nothing listens there on this port.
	res := newFakeResolver().set("two.test", []string{"127.0.0.2", "127.0.0.1"})
	var calls int
	ctx, rec := enter(t, []policy.NetRule{{Host: "two.test"}, {CIDR: "127.0.0.0/8"}},
		audit.WithOnCall(func(ctx context.Context, ev *audit.Event) audit.Verdict {
			calls++
			if ev.Protocol != audit.Net || ev.Op != policy.OpConnect || ev.Target != "two.test:"+srv.port ||
				ev.Resolved != "127.0.0.2, 127.0.0.1" || ev.Detail != "tcp" {
				t.Errorf("event %+v", ev)
			}
			return audit.Continue
		}))
	conn, err := (&Dialer{Resolver: res}).DialContext(ctx, "tcp", "two.test:"+srv.port)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if calls != 1 || len(rec.Records()) != 1 {
		t.Fatalf("OnCall ran %d times, %d records", calls, len(rec.Records()))
	}
}

func TestBeforeDenyTiers(t *testing.T) {
	srv := newServer(t, "tcp", "127.0.0.1:0")
	addr := "127.0.0.1:" + srv.port
	rescue := audit.WithBeforeDeny(func(context.Context, *audit.Event) bool { return true })

	// Hard (special-purpose) is not rescued without opt-in.
	ctx, _ := enter(t, nil, rescue)
	if _, err := (&Dialer{}).DialContext(ctx, "tcp", addr); denyTier(t, err) != policy.TierHard {
		t.Fatalf("hard denial rescued: %v", err)
	}
	// With WithRescueHard it is.
	ctx, _ = enter(t, nil, rescue, audit.WithRescueHard())
	conn, err := (&Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("rescued dial: %v", err)
	}
	conn.Close()
	// Invalid input never is.
	if _, err := (&Dialer{}).DialContext(ctx, "tcp", "127.1:"+srv.port); denyTier(t, err) != policy.TierInvalid {
		t.Fatalf("invalid input: %v", err)
	}
	// OnCall Allow cannot overturn invalid input either: callbacks never
	// outrank it.
	ctx, _ = enter(t, nil, audit.WithOnCall(func(context.Context, *audit.Event) audit.Verdict { return audit.Allow }),
		audit.WithRescueHard(), audit.WithTrustSiteHard())
	if _, err := (&Dialer{}).DialContext(ctx, "tcp", "127.1:"+srv.port); denyTier(t, err) != policy.TierInvalid {
		t.Fatalf("invalid input after OnCall Allow: %v", err)
	}
}

func TestWarnAndOffModes(t *testing.T) {
	srv := newServer(t, "tcp", "127.0.0.1:0")
	addr := "127.0.0.1:" + srv.port
	// Loopback is a special-purpose range: a hard-tier denial, which Warn
	// still refuses. The metadata address likewise; the probe aborts any
	// connect the guard would let through, so nothing leaves the host.
	ctx, rec := enter(t, nil, audit.WithMode(audit.Net, audit.Warn))
	if _, err := (&Dialer{}).DialContext(ctx, "tcp", addr); denyTier(t, err) != policy.TierHard {
		t.Fatalf("warn mode carried out a hard-tier dial: %v", err)
	}
	pr := &probe{}
	md := &Dialer{}
	md.Base.ControlContext = pr.control
	if _, err := md.DialContext(ctx, "tcp", "169.254.169.254:80"); denyTier(t, err) != policy.TierHard {
		t.Fatalf("warn mode carried out a dial to the metadata address: %v", err)
	}
	if seen := pr.addresses(); len(seen) != 0 || srv.accepted.Load() != 0 {
		t.Fatalf("warn mode connected: probe saw %v, server accepted %d", seen, srv.accepted.Load())
	}
	if rs := rec.Records(); len(rs) != 2 || rs[0].Outcome != audit.Denied {
		t.Fatalf("records %+v", rs)
	}
	// With the per-protocol opt-in, Warn carries it out and records it.
	ctx, rec = enter(t, nil, audit.WithMode(audit.Net, audit.Warn), audit.WithWarnHard(audit.Net))
	conn, err := (&Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("warn mode with WithWarnHard: %v", err)
	}
	conn.Close()
	if rs := rec.Records(); len(rs) != 1 || rs[0].Outcome != audit.Warned {
		t.Fatalf("records %+v", rs)
	}
	if _, err := (&Dialer{}).DialContext(ctx, "tcp", "0x7f000001:"+srv.port); err == nil {
		t.Fatal("warn mode let invalid input through")
	}
	ctx, _ = enter(t, nil, audit.WithMode(audit.Net, audit.Off))
	conn, err = (&Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("off mode: %v", err)
	}
	conn.Close()
}

func TestScope(t *testing.T) {
	srv := newServer(t, "tcp", "127.0.0.1:0")
	addr := "127.0.0.1:" + srv.port
	rules := []policy.NetRule{{CIDR: "127.0.0.1"}}

	// No scope: DialContext and Dial without Context fail with ErrNoScope.
	if _, err := (&Dialer{}).DialContext(context.Background(), "tcp", addr); !errors.Is(err, audit.ErrNoScope) {
		t.Fatalf("no scope: %v", err)
	}
	if _, err := (&Dialer{}).Dial("tcp", addr); !errors.Is(err, audit.ErrNoScope) {
		t.Fatalf("Dial without Context: %v", err)
	}
	ctx, _ := enter(t, rules)
	d := &Dialer{Context: ctx}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()

	// A released scope revokes the dialer, without a lookup.
	p, _ := policy.New(policy.Spec{Net: policy.NetSpec{Rules: rules}})
	g, _ := audit.New(p, audit.WithLogger(discard()))
	sctx, release, _ := g.Enter(context.Background())
	res := newFakeResolver().set("x.test", []string{"127.0.0.1"})
	release()
	if _, err := (&Dialer{Resolver: res}).DialContext(sctx, "tcp", "x.test:1"); !errors.Is(err, audit.ErrScopeClosed) {
		t.Fatalf("released scope: %v", err)
	}
	if res.count("x.test") != 0 {
		t.Fatal("a released scope still looked the name up")
	}

	// Restrict narrows: the inner policy has no rule, so the dial is denied.
	empty, _ := policy.New(policy.Spec{})
	rctx, rrelease, err := audit.Restrict(ctx, empty)
	if err != nil {
		t.Fatal(err)
	}
	defer rrelease()
	if _, err := (&Dialer{}).DialContext(rctx, "tcp", addr); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("restricted: %v", err)
	}
	if d := Check(rctx, "tcp", addr); d.Allowed {
		t.Fatalf("Check in restricted scope: %+v", d)
	}
	if d := Check(ctx, "tcp", addr); !d.Allowed {
		t.Fatalf("Check: %+v", d)
	}
}

func TestCheck(t *testing.T) {
	res := newFakeResolver().set("api.test", []string{pubA}).set("meta.test", []string{"169.254.169.254"})
	ctx, rec := enter(t, []policy.NetRule{{Host: "api.test", Ports: []string{"443"}, Source: "test rules"}, {Host: "meta.test"}})
	d := &Dialer{Resolver: res}
	for _, tc := range []struct {
		address string
		allowed bool
		tier    policy.Tier
	}{
		{"api.test:443", true, 0},
		{"api.test:80", false, policy.TierSoft},
		{"meta.test:80", false, policy.TierHard},
		{"169.254.169.254:80", false, policy.TierHard},
		{"127.1:80", false, policy.TierInvalid},
	} {
		dec := d.Check(ctx, "tcp", tc.address)
		if dec.Allowed != tc.allowed || dec.Tier != tc.tier || dec.Rule == nil {
			t.Errorf("Check(%q) = %+v", tc.address, dec)
		}
	}
	if dec := d.Check(ctx, "tcp", "api.test:443"); dec.Rule.Source != "test rules" {
		t.Errorf("provenance %q", dec.Rule.Source)
	}
	if n := len(rec.Records()); n != 0 {
		t.Errorf("Check recorded %d decisions", n)
	}
	if dec := Check(context.Background(), "tcp", "api.test:443"); dec.Allowed {
		t.Error("Check without scope allowed")
	}
}

func TestDialTimeoutAndCancel(t *testing.T) {
	ctx, _ := enter(t, []policy.NetRule{{CIDR: "127.0.0.1"}})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := (&Dialer{}).DialContext(cctx, "tcp", "127.0.0.1:1"); err == nil {
		t.Fatal("canceled dial succeeded")
	}
	srv := newServer(t, "tcp", "127.0.0.1:0")
	d := &Dialer{}
	d.Base.Timeout = 5e9
	conn, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+srv.port)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

func TestSecondLine(t *testing.T) {
	// The socket hook refuses any address the pipeline did not approve.
	g := grant{addrs: parseAddrs("127.0.0.1"), port: 80}
	c := control(policy.OpConnect, g, nil)
	for addr, ok := range map[string]bool{
		"127.0.0.1:80": true, "[::ffff:127.0.0.1]:80": true, "127.0.0.1:81": false,
		"127.0.0.2:80": false, "[fe80::1%eth0]:80": false, "garbage": false,
	} {
		err := c(context.Background(), "tcp4", addr, nil)
		if (err == nil) != ok {
			t.Errorf("control(%q) = %v", addr, err)
		}
		if err != nil && !errors.Is(err, fs.ErrPermission) {
			t.Errorf("control(%q) error is not a permission error: %v", addr, err)
		}
	}
}

func TestDialUnix(t *testing.T) {
	dir := t.TempDir()
	real, err := policy.Resolve(policy.OSFS{}, dir, "/", true)
	if err != nil {
		t.Fatal(err)
	}
	sock := real + "/s.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Skip(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	p, err := policy.New(policy.Spec{WriteRoots: []string{real},
		Net: policy.NetSpec{Rules: []policy.NetRule{{Path: sock, Network: "unix"}}}})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := audit.New(p, audit.WithLogger(discard()))
	ctx, release, _ := g.Enter(context.Background())
	defer release()
	conn, err := (&Dialer{}).DialContext(ctx, "unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if _, err := (&Dialer{}).DialContext(ctx, "unix", real+"/other.sock"); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("other socket: %v", err)
	}
	// A symlink loop cannot be resolved: fail closed.
	if err := os.Symlink(real+"/loop.sock", real+"/loop.sock"); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Dialer{}).DialContext(ctx, "unix", real+"/loop.sock"); denyTier(t, err) != policy.TierInvalid {
		t.Fatalf("symlink loop: %v", err)
	}
	if d := Check(ctx, "unix", real+"/loop.sock"); d.Tier != policy.TierInvalid {
		t.Fatalf("Check symlink loop: %+v", d)
	}
	if d := Check(ctx, "unix", sock); !d.Allowed {
		t.Fatalf("Check socket: %+v", d)
	}
	if _, err := (&Dialer{}).DialContext(ctx, "unix", "relative.sock"); denyTier(t, err) != policy.TierInvalid {
		t.Fatalf("relative socket: %v", err)
	}
}

// TestDialUDP: udp needs a udp rule; an allowed datagram reaches a real
// loopback socket.
func TestDialUDP(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	defer pc.Close()
	_, port, _ := net.SplitHostPort(pc.LocalAddr().String())
	addr := "127.0.0.1:" + port

	ctx, _ := enter(t, []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{port}}})
	if _, err := (&Dialer{}).DialContext(ctx, "udp", addr); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("udp with a tcp rule: %v", err)
	}
	ctx, _ = enter(t, []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{port}, Network: "udp"}})
	conn, err := (&Dialer{}).DialContext(ctx, "udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	pc.SetReadDeadline(time.Now().Add(10 * time.Second)) // bounded, not a sleep
	n, _, err := pc.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if _, err := (&Dialer{}).DialContext(ctx, "tcp", addr); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("tcp with a udp rule: %v", err)
	}
}
