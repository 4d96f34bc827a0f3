package isolate_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/internal/proctree"
	"github.com/auditguard/auditguard/isolate"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

type env struct {
	ctx context.Context
	dir string // the only write root
	rec *audit.Recorder
}

// setup enters a guard whose only write root is a temp dir and whose exec
// rules allow sleep; it skips when the host cannot build the sandbox.
func setup(t testing.TB, opts ...audit.Option) *env {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Spec{WriteRoots: []string{dir},
		Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: "sleep"}, {Program: "true"}}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := audit.NewRecorder()
	base := []audit.Option{audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), audit.WithRecorder(rec)}
	g, err := audit.New(pol, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	e := &env{ctx: ctx, dir: dir, rec: rec}
	needSandbox(t, e)
	return e
}

// needSandbox skips when this host cannot run an isolated call at all.
func needSandbox(t testing.TB, e *env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 60*time.Second)
	defer cancel()
	var out string
	err := isolate.Call(ctx, "echo", "x", &out, isolate.Timeout(time.Minute))
	if err == nil {
		e.rec.Reset()
		return
	}
	if strings.Contains(err.Error(), "unavailable") {
		t.Skipf("no sandbox on this host: %v", err)
	}
	t.Fatalf("a trivial call failed: %v", err)
}

// callCtx bounds one call from the test side, far above its own timeout.
func (e *env) callCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// noSurvivors fails when a process of the call's sandbox is alive. A
// sandbox recycled for later calls (sandbox.StartRecycled) keeps its init
// (one ended after the call's Wait keeps it a few milliseconds more)
// and may already run a later call, or a pooled process, of the same
// policy, which are no survivors of this one and cannot be told apart
// from them by namespace: there, the call's own process must be gone (that
// init kills whatever else a call left before its Wait returns is
// procguard/sandbox's TestRecycledCommands).
func noSurvivors(t testing.TB, c *procguard.Confinement) {
	t.Helper()
	if c.Sandbox == nil {
		t.Fatalf("the call ran without a sandbox: %s", c.SandboxNote)
	}
	ns, init := c.Sandbox.PidNamespace, c.ProcessGroup
	if sandbox.EndsAfterWait() && proctree.Alive(init) {
		if pid := proctree.HostPid(ns, c.Sandbox.Pid); pid != 0 && proctree.Alive(pid) {
			t.Errorf("the call's process %d survived it", pid)
		}
		return
	}
	if m := proctree.NamespaceMembers(ns, init); len(m) > 0 {
		t.Errorf("processes of the call survived: %v", m)
	}
}

// children lists this process's live children (zombies excluded).
func children(t testing.TB) []int {
	t.Helper()
	kids, err := proctree.Children()
	if err != nil {
		t.Skipf("no /proc task list: %v", err)
	}
	return kids
}

// fdCount counts this process's descriptors, leaving out those of
// procguard's pool of empty cgroups (kept open for reuse, by design).
func fdCount(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "/sys/fs/cgroup/") {
			continue
		}
		n++
	}
	return n
}

func errorsAs[T error](err error, target *T) bool { return errors.As(err, target) }
