package procguard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/internal/proctree"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// TestSessionCommandsAsTheirOwn: commands of a Session share one sandbox
// yet each is held as one of its own would be: a failed program's status
// comes back (with no ProcessState), a refused write inside the session
// is recorded with the command that made it, the tree's process limit
// counts the command's own tree (its processes join its cgroup), a
// command killed by its timeout ends the sandbox, and the next command
// builds a new one.
func TestSessionCommandsAsTheirOwn(t *testing.T) {
	e := sandboxEnv(t, policy.Spec{Exec: policy.ExecSpec{Rules: shellTools.Rules,
		Limits: policy.ExecLimits{Processes: 20}}})
	s := &procguard.Session{}
	defer s.Close()

	out, err, first := runScriptIn(t, e, s, `echo first; exit 3`)
	var ee *sandbox.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || first.ProcessState != nil || !strings.Contains(out, "first") {
		t.Fatalf("exit 3 in a session: %v (%T), state %v\n%s", err, err, first.ProcessState, out)
	}

	// A protected name, its spelling built at run time: refused by the
	// supervisor, recorded in the host with this command.
	out, err, second := runScriptIn(t, e, s, `b=.ba; b="${b}shrc"; echo x > "$b" || echo refused`)
	if err != nil || !strings.Contains(out, "refused") {
		t.Fatalf("second: %v\n%s", err, out)
	}
	if second.Process.Pid != first.Process.Pid {
		t.Errorf("the second command built a new sandbox (init %d, then %d)", first.Process.Pid, second.Process.Pid)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".bashrc")); err == nil {
		t.Errorf(".bashrc was written by a session's command")
	}
	found := false
	for _, r := range e.rec.Records() {
		if r.Outcome == audit.Denied && strings.HasSuffix(r.Target, "/.bashrc") && strings.Contains(r.Detail, "sandbox of") {
			found = true
		}
	}
	if !found {
		t.Errorf("the refused .bashrc write is not recorded: %v", e.rec.Records())
	}

	// 19 processes under a limit of 20 (the sandbox's init does not count),
	// 21 not.
	out, err, third := runScriptIn(t, e, s, `for i in $(seq 19); do sleep 1 & done; wait; echo ran`)
	if pids := third.Confinement.Cgroups.Pids; pids.Max == 20 && pids.Via == procguard.CgroupV1 {
		if err != nil || !strings.Contains(out, "ran") || strings.Contains(out, "fork") {
			t.Errorf("19 processes under a limit of 20 in a session: %v %q", err, out)
		}
		out, _, _ = runScriptIn(t, e, s, `for i in $(seq 21); do sleep 1 & done; wait; echo ran`)
		if !strings.Contains(out, "fork") && !strings.Contains(out, "Resource temporarily unavailable") {
			t.Errorf("21 sleeps started under a limit of 20 in a session: %q", out)
		}
	} else {
		t.Logf("no v1 pids controller here: %+v", pids)
	}

	// Killed by its timeout: the sandbox ends; the next command builds one.
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	c := procguard.CommandContext(ctx, "sleep", "30")
	c.Dir, c.Session, c.Timeout = e.dir, s, 300*time.Millisecond
	err = c.Run()
	var ke *procguard.KilledError
	if !errors.As(err, &ke) || !errors.Is(err, procguard.ErrTimeout) {
		t.Fatalf("a session's command past its timeout: %v", err)
	}
	if c.Process.Pid != first.Process.Pid {
		t.Errorf("the timed-out command did not run in the session's sandbox")
	}
	out, err, after := runScriptIn(t, e, s, `echo after`)
	if err != nil || !strings.Contains(out, "after") {
		t.Fatalf("after a timeout: %v\n%s", err, out)
	}
	if after.Process.Pid == first.Process.Pid {
		t.Errorf("the command after a timeout ran in the killed sandbox")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if proctree.Alive(after.Process.Pid) {
		t.Errorf("the session's init %d outlived Close", after.Process.Pid)
	}
}

// TestSessionEgressPerCommand: a session's commands reach the network
// through the egress proxy of the command that runs: each request is
// decided and recorded with that command, an address no rule allows is
// refused in either, and the proxy of an ended command serves no one.
func TestSessionEgressPerCommand(t *testing.T) {
	e, port := egressEnv(t)
	s := &procguard.Session{}
	defer s.Close()
	var pids []int
	for _, name := range []string{"first", "second"} {
		out, err, c := runScriptIn(t, e, s, `
p=$(( $1 + 0 ))
curl -sS -f --max-time 10 "http://127.0.0.1:$p/$2"
curl -sS -f --max-time 10 "http://127.0.0.2:$p/" || echo DENIED-BY-PROXY`, port, name)
		if err != nil || !strings.Contains(out, "PROXIED-OK") || !strings.Contains(out, "DENIED-BY-PROXY") {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		pids = append(pids, c.Process.Pid)
		found := false
		for _, r := range e.rec.Records() {
			if r.Protocol == audit.Net && r.Outcome == audit.Allowed && strings.Contains(r.Target, "127.0.0.1:"+port) &&
				strings.Contains(r.Detail, "sandbox of "+c.String()) && strings.Contains(r.Detail, "via proxy") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no allowed request recorded with this command (%s)", name, c.String())
		}
	}
	if pids[0] != pids[1] {
		t.Errorf("the second command ran in a new sandbox (init %d, then %d)", pids[0], pids[1])
	}
}

// TestSessionEndsWithScope: the release of a scope a session's command
// ran in ends the session's sandbox (no idle init outlives the scope),
// and the session stays usable: a command in another scope builds a new
// sandbox.
func TestSessionEndsWithScope(t *testing.T) {
	e := sandboxEnv(t, policy.Spec{Exec: shellTools})
	g := audit.From(e.ctx).Guard()
	s := &procguard.Session{}
	defer s.Close()
	inScope := func() (context.Context, func()) {
		ctx, release, err := g.Enter(context.Background())
		must(t, err)
		return ctx, release
	}
	ctx, release := inScope()
	c := procguard.CommandContext(ctx, "true")
	c.Dir, c.Session = e.dir, s
	must(t, c.Run())
	if c.Confinement.Sandbox == nil {
		t.Skipf("no sandbox: %s", c.Confinement.SandboxNote)
	}
	first := c.Process.Pid
	if !proctree.Alive(first) {
		t.Fatalf("the session's init %d is gone before its scope ended", first)
	}
	release()
	if proctree.Alive(first) {
		t.Errorf("the session's init %d outlived the release of the scope its command ran in", first)
	}
	ctx, release = inScope()
	defer release()
	c = procguard.CommandContext(ctx, "true")
	c.Dir, c.Session = e.dir, s
	must(t, c.Run())
	if c.Process.Pid == first {
		t.Errorf("the command after the release ran in the ended sandbox")
	}
}
