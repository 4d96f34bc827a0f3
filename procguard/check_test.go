package procguard_test

import (
	"context"
	"errors"
	"io/fs"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

// TestCheckIsTheStartRoute: for each case, Check's answer is what Start
// then does: allowed, the command runs; denied, Start is denied with the
// same rule, both as an *exec.Error around the *audit.DenyError; a
// missing program is exec.ErrNotFound for both. Check writes no record
// and the host callback sees DryRun; Start sees it unset.
func TestCheckIsTheStartRoute(t *testing.T) {
	var mu sync.Mutex
	var dry []bool
	e := setup(t, policy.ExecSpec{Rules: allow("true", "echo")},
		audit.WithOnCall(func(_ context.Context, ev *audit.Event) audit.Verdict {
			mu.Lock()
			dry = append(dry, ev.DryRun)
			mu.Unlock()
			return audit.Continue
		}))
	for _, tc := range []struct {
		name    string
		argv    []string
		allowed bool
		missing bool
	}{
		{"allowed", []string{"true"}, true, false},
		{"allowed with args", []string{"echo", "hi"}, true, false},
		{"no rule", []string{"rm", "-rf", "x"}, false, false},
		{"through a shell", []string{"sh", "-c", "rm -rf x"}, false, false},
		{"allowed through a shell", []string{"sh", "-c", "echo hi"}, true, false},
		{"missing", []string{"no-such-program-auditguard"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			defer cancel()
			mu.Lock()
			dry = nil
			mu.Unlock()
			e.rec.Reset()
			c := procguard.CommandContext(ctx, tc.argv[0], tc.argv[1:]...)
			c.Dir = e.dir
			d := c.Check()
			if n := len(e.rec.Records()); n != 0 {
				t.Fatalf("Check left %d records", n)
			}
			mu.Lock()
			if len(dry) != 1 || !dry[0] {
				t.Fatalf("OnCall saw DryRun %v, want [true]", dry)
			}
			dry = nil
			mu.Unlock()
			if d.Allowed != tc.allowed || d.Allowed != (d.Err == nil) {
				t.Fatalf("Check = %+v, want allowed=%v", d, tc.allowed)
			}

			r := procguard.CommandContext(ctx, tc.argv[0], tc.argv[1:]...)
			r.Dir = e.dir
			err := r.Run()
			mu.Lock()
			if len(dry) != 1 || dry[0] {
				t.Fatalf("OnCall saw DryRun %v in Start", dry)
			}
			mu.Unlock()
			switch {
			case tc.allowed:
				if err != nil {
					t.Fatalf("Check allowed it; Run failed: %v", err)
				}
				return
			case tc.missing:
				if !errors.Is(err, exec.ErrNotFound) || !errors.Is(d.Err, exec.ErrNotFound) {
					t.Fatalf("Run: %v; Check: %v: want exec.ErrNotFound", err, d.Err)
				}
				return
			}
			var xe, dxe *exec.Error
			var de, dde *audit.DenyError
			if !errors.As(err, &xe) || !errors.As(d.Err, &dxe) || !errors.As(err, &de) || !errors.As(d.Err, &dde) {
				t.Fatalf("Run: %v; Check: %v: want *exec.Error around *audit.DenyError", err, d.Err)
			}
			if !errors.Is(err, fs.ErrPermission) || xe.Name != dxe.Name || xe.Name != tc.argv[0] {
				t.Fatalf("Run's error %#v, Check's %#v", xe, dxe)
			}
			if de.Decision.Rule != dde.Decision.Rule || de.Decision.Tier != dde.Decision.Tier || de.By != dde.By {
				t.Fatalf("Start was denied by %v; Check said %v", de.Decision.Rule, dde.Decision.Rule)
			}
		})
	}
}
