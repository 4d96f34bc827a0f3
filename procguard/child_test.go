package procguard_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// TestChildFacts: the confinement a child will get is on the event as
// typed facts before the start is decided (what OnCall and BeforeDeny can
// branch on), and on the record; the record's detail text says the same
// in words.
func TestChildFacts(t *testing.T) {
	probe := sandboxEnv(t, policy.Spec{Exec: policy.ExecSpec{Rules: allow("true")}})
	needSandbox(t, probe)
	abi := needLandlock(t)
	tests := []struct {
		name string
		spec policy.Spec
		want audit.Child
	}{
		{"default", policy.Spec{Exec: policy.ExecSpec{Rules: allow("true")}},
			audit.Child{Sandbox: true, Landlock: audit.LandlockExecAllowed, Network: audit.NetworkNone}},
		{"net rule", policy.Spec{Exec: policy.ExecSpec{Rules: allow("true")},
			Net: policy.NetSpec{Rules: []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{"8080"}}}}},
			audit.Child{Sandbox: true, Landlock: audit.LandlockExecAllowed, Network: audit.NetworkForwarded}},
		{"host network", policy.Spec{Exec: policy.ExecSpec{Rules: allow("true"), HostNetwork: true}},
			audit.Child{Sandbox: true, Landlock: audit.LandlockExecAllowed, Network: audit.NetworkHost}},
		{"exec any", policy.Spec{Exec: policy.ExecSpec{Rules: allow("true"), LandlockExecAny: true}},
			audit.Child{Sandbox: true, Landlock: audit.LandlockExecAny, Network: audit.NetworkNone}},
		{"no sandbox, deny network", policy.Spec{Exec: policy.ExecSpec{Rules: allow("true"), NoSandbox: true, DenyNetwork: true}},
			audit.Child{Landlock: audit.LandlockExecAllowed, Network: audit.NetworkHostNoTCP}},
		{"no sandbox, no landlock", policy.Spec{Exec: policy.ExecSpec{Rules: allow("true"), NoSandbox: true, NoLandlock: true}},
			audit.Child{Landlock: audit.LandlockNone, Network: audit.NetworkHost}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []*audit.Child
			onCall := audit.WithOnCall(func(_ context.Context, ev *audit.Event) audit.Verdict {
				if ev.Protocol == audit.Exec {
					mu.Lock()
					seen = append(seen, ev.Child)
					mu.Unlock()
				}
				return audit.Continue
			})
			e := childEnv(t, tt.spec, onCall)
			want := tt.want
			want.Dir = e.dir
			if ok, _ := sandbox.ExecJudgeable(); ok && want.Sandbox {
				// Every exec is judged when it happens: Landlock's execute
				// right is open.
				want.Landlock, want.ExecJudged = audit.LandlockExecAny, true
			}
			if want.Landlock != audit.LandlockNone {
				want.LandlockABI = abi
			}
			c := procguard.CommandContext(e.ctx, "/bin/true")
			c.Dir = e.dir
			if d := c.Check(); !d.Allowed {
				t.Fatalf("Check: %v", d.Err)
			}
			c = procguard.CommandContext(e.ctx, "/bin/true")
			c.Dir = e.dir
			if err := c.Run(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 2 {
				t.Fatalf("OnCall saw %d exec events, want 2 (Check and Run)", len(seen))
			}
			for i, got := range seen {
				if got == nil || got.Dir != want.Dir || got.Sandbox != want.Sandbox || got.Landlock != want.Landlock ||
					got.LandlockABI != want.LandlockABI || got.Network != want.Network || got.ExecJudged != want.ExecJudged {
					t.Errorf("event %d: child %+v, want %+v", i, got, want)
				}
			}
			recs := e.rec.Records()
			if len(recs) == 0 || recs[len(recs)-1].Child != seen[1] {
				t.Errorf("the record does not carry the event's child facts")
			}
			if got := (c.Confinement.Sandbox != nil); got != want.Sandbox {
				t.Errorf("planned sandbox %v, applied %v", want.Sandbox, got)
			}
		})
	}
}

// childEnv enters a guard on spec with one write root (the returned dir),
// recording allowed calls too.
func childEnv(t *testing.T, spec policy.Spec, opts ...audit.Option) *env {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	dir, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	spec.WriteRoots = append(spec.WriteRoots, dir)
	spec.Exec.Timeout = 20 * time.Second
	pol, err := policy.New(spec)
	must(t, err)
	rec := audit.NewRecorder()
	g, err := audit.New(pol, append([]audit.Option{audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		audit.WithRecorder(rec), audit.WithLogAllows()}, opts...)...)
	must(t, err)
	ctx, release, err := g.Enter(context.Background())
	must(t, err)
	t.Cleanup(release)
	return &env{ctx: ctx, dir: dir, rec: rec, pol: pol}
}
