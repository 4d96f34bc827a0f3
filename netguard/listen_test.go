package netguard

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

func TestListen(t *testing.T) {
	res := newFakeResolver().set("localhost", []string{"127.0.0.1", "::1"})
	ctx, _ := enter(t, []policy.NetRule{
		{CIDR: "127.0.0.1", Listen: true},
		{CIDR: "127.0.0.1", Network: "udp", Listen: true, Ports: []string{"0"}},
		{CIDR: "127.0.0.1"}, // so the test can connect back
	})
	lc := &ListenConfig{Resolver: res}
	for _, tc := range []struct {
		network, address string
		tier             policy.Tier // TierNone: allowed
	}{
		{"tcp", "127.0.0.1:0", policy.TierNone},
		{"tcp", "localhost:0", policy.TierHard}, // ::1 is not unlocked
		{"tcp4", "localhost:0", policy.TierNone},
		{"tcp", ":0", policy.TierInvalid},
		{"tcp", "0.0.0.0:0", policy.TierHard},
		{"tcp", "[::]:0", policy.TierHard},
		{"tcp", "[::1]:0", policy.TierHard},
		{"tcp", "127.0.0.2:0", policy.TierHard},
		{"tcp", "0177.0.0.1:0", policy.TierInvalid},
	} {
		ln, err := lc.Listen(ctx, tc.network, tc.address)
		if tc.tier == policy.TierNone {
			if err != nil {
				t.Errorf("Listen(%s, %s): %v", tc.network, tc.address, err)
				continue
			}
			conn, err := (&Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
			if err != nil {
				t.Errorf("dial back to %v: %v", ln.Addr(), err)
			} else {
				conn.Close()
			}
			ln.Close()
			continue
		}
		if err == nil {
			ln.Close()
			t.Errorf("Listen(%s, %s) allowed", tc.network, tc.address)
			continue
		}
		if !errors.Is(err, fs.ErrPermission) || denyTier(t, err) != tc.tier {
			t.Errorf("Listen(%s, %s): %v, want tier %v", tc.network, tc.address, err, tc.tier)
		}
		// net.ListenConfig's shape, with the denial inside.
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "listen" || oe.Net != tc.network {
			t.Errorf("Listen(%s, %s): %T %v, want a *net.OpError", tc.network, tc.address, err, err)
		}
	}

	pc, err := lc.ListenPacket(ctx, "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc.Close()
	var oe *net.OpError
	if _, err := lc.ListenPacket(ctx, "udp", "127.0.0.1:5353"); !errors.Is(err, fs.ErrPermission) || !errors.As(err, &oe) {
		t.Fatalf("udp port without rule: %T %v", err, err)
	}
	// A connect rule does not allow binding.
	ctx2, _ := enter(t, []policy.NetRule{{CIDR: "127.0.0.1"}})
	if _, err := Listen(ctx2, "tcp", "127.0.0.1:0"); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("connect rule allowed a bind: %v", err)
	}
	if _, err := Listen(context.Background(), "tcp", "127.0.0.1:0"); !errors.Is(err, audit.ErrNoScope) {
		t.Fatalf("no scope: %v", err)
	}
}

func TestListenSecondLine(t *testing.T) {
	// The bind hook refuses an address the pipeline did not approve.
	lc := &ListenConfig{}
	g := grant{addrs: parseAddrs("127.0.0.1"), port: 0}
	base := lc.guarded(context.Background(), g)
	if _, err := base.Listen(context.Background(), "tcp", "127.0.0.2:0"); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("unapproved bind: %v", err)
	}
	ln, err := base.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	var _ net.Listener = ln
}

// TestReleaseClosesListeners: a scope's release closes the listeners and
// packet sockets made in it and the connections they accepted; nothing is
// accepted afterwards.
func TestReleaseClosesListeners(t *testing.T) {
	p, err := policy.New(policy.Spec{Net: policy.NetSpec{Rules: []policy.NetRule{
		{CIDR: "127.0.0.1", Listen: true},
		{CIDR: "127.0.0.1", Network: "udp", Listen: true, Ports: []string{"0"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(p, audit.WithLogger(discard()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ln.(*Listener); !ok {
		t.Fatalf("Listen returned %T, want *Listener", ln)
	}
	pc, err := (&ListenConfig{}).ListenPacket(ctx, "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	served, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := served.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write on an accepted connection after release: %v, want net.ErrClosed", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("accept after release: %v, want net.ErrClosed", err)
	}
	if _, _, err := pc.ReadFrom(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read on a packet socket after release: %v, want net.ErrClosed", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts connections after release")
	}
}
