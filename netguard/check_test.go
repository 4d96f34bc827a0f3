package netguard

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// TestCheckIsTheDialRoute: for each case, Check's answer is what
// DialContext then does, on real loopback and unix sockets: allowed, the
// dial connects; denied, the dial is denied with the same rule, both as a
// *net.OpError around the *audit.DenyError. Check writes no record and
// the host callback sees DryRun; the real dial sees it unset. Unix
// socket names are resolved as the dial resolves them (through a link).
func TestCheckIsTheDialRoute(t *testing.T) {
	srv := newServer(t, "tcp", "127.0.0.1:0")
	dir, err := policy.Resolve(policy.OSFS{}, t.TempDir(), "/", true)
	if err != nil {
		t.Fatal(err)
	}
	sock := dir + "/s.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("no unix sockets here: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if err := os.Symlink(sock, dir+"/link.sock"); err != nil {
		t.Fatal(err)
	}
	other, err := net.Listen("unix", dir+"/other.sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })

	var mu sync.Mutex
	var dry []bool
	res := newFakeResolver().set("api.test", []string{"127.0.0.1"}).set("meta.test", []string{"169.254.169.254"})
	// Unix sockets must lie under a write root as well as have a rule.
	pol, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Net: policy.NetSpec{Rules: []policy.NetRule{
		{CIDR: "127.0.0.1/32", Ports: []string{srv.port}},
		{Host: "api.test", Ports: []string{srv.port}},
		{Host: "meta.test", Ports: []string{"80"}},
		{Path: sock, Network: "unix"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := audit.NewRecorder()
	g, err := audit.New(pol, audit.WithLogger(discard()), audit.WithRecorder(rec), audit.WithLogAllows(),
		audit.WithOnCall(func(_ context.Context, ev *audit.Event) audit.Verdict {
			mu.Lock()
			dry = append(dry, ev.DryRun)
			mu.Unlock()
			return audit.Continue
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	d := &Dialer{Resolver: res}
	for _, tc := range []struct {
		name, network, addr string
		allowed             bool
	}{
		{"loopback literal allowed", "tcp", "127.0.0.1:" + srv.port, true},
		{"other port", "tcp", "127.0.0.1:1", false},
		{"name allowed", "tcp", "api.test:" + srv.port, true},
		{"name to a special-purpose address", "tcp", "meta.test:80", false},
		{"special-purpose literal", "tcp", "10.0.0.1:80", false},
		{"invalid literal", "tcp", "127.1:80", false},
		{"unix socket allowed", "unix", sock, true},
		{"unix socket through a link", "unix", dir + "/link.sock", true},
		{"other unix socket", "unix", dir + "/other.sock", false},
		{"relative unix socket", "unix", "s.sock", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			dry = nil
			mu.Unlock()
			c := d.Check(ctx, tc.network, tc.addr)
			if n := len(rec.Records()); n != 0 {
				t.Fatalf("Check left %d records", n)
			}
			mu.Lock()
			if len(dry) != 1 || !dry[0] {
				t.Fatalf("OnCall saw DryRun %v, want [true]", dry)
			}
			dry = nil
			mu.Unlock()
			if c.Allowed != tc.allowed || c.Allowed != (c.Err == nil) {
				t.Fatalf("Check = %+v, want allowed=%v", c, tc.allowed)
			}

			conn, err := d.DialContext(ctx, tc.network, tc.addr)
			rec.Reset()
			mu.Lock()
			if len(dry) != 1 || dry[0] {
				t.Fatalf("OnCall saw DryRun %v in the dial", dry)
			}
			mu.Unlock()
			if c.Allowed {
				if err != nil {
					t.Fatalf("Check allowed it; the dial failed: %v", err)
				}
				conn.Close()
				return
			}
			var oe, coe *net.OpError
			var de, cde *audit.DenyError
			if !errors.As(err, &oe) || !errors.As(c.Err, &coe) || !errors.As(err, &de) || !errors.As(c.Err, &cde) {
				t.Fatalf("dial: %v; Check: %v: want *net.OpError around *audit.DenyError", err, c.Err)
			}
			if oe.Op != "dial" || coe.Op != "dial" || !errors.Is(err, fs.ErrPermission) {
				t.Fatalf("dial error %#v, Check's %#v", oe, coe)
			}
			if de.Decision.Rule != cde.Decision.Rule || de.Decision.Tier != cde.Decision.Tier || de.Resolved != cde.Resolved || de.By != cde.By {
				t.Fatalf("the dial was denied by %v (%s); Check said %v (%s)", de.Decision.Rule, de.Resolved, cde.Decision.Rule, cde.Resolved)
			}
		})
	}
}
