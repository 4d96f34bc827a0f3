package procguard_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/internal/proctree"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// TestRecycledEgressPerCommand: commands outside a session share a
// recycled sandbox, and each reaches the network through the egress proxy
// of the command that runs. The first leaves a background loop asking the
// proxy for an address no rule allows; it must have asked while its
// command ran, never after its Wait, and no request may be recorded with
// the second command but the second's own. No cgroup, whose kill after
// Wait would end the loop anyway: the sandbox's init must.
func TestRecycledEgressPerCommand(t *testing.T) {
	e, port := egressEnvWith(t, policy.ExecSpec{NoCgroup: true})
	denied := func(of string) int {
		n := 0
		for _, r := range e.rec.Records() {
			if r.Protocol == audit.Net && strings.Contains(r.Target, "127.0.0.3:"+port) && strings.Contains(r.Detail, of) {
				n++
			}
		}
		return n
	}
	out, err, first := runScript(t, e, `
p=$(( $1 + 0 ))
(exec </dev/null >/dev/null 2>&1; while :; do curl -s --max-time 2 "http://127.0.0.3:$p/"; sleep 0.02; done) &
curl -sS -f --max-time 10 "http://127.0.0.1:$p/first"
sleep 0.5`, port, "first")
	if err != nil || !strings.Contains(out, "PROXIED-OK") {
		t.Fatalf("first: %v\n%s", err, out)
	}
	left := denied(first.String())
	if left == 0 {
		t.Fatalf("the first command's background loop never asked the proxy")
	}
	time.Sleep(300 * time.Millisecond)
	out, err, second := runScript(t, e, `
p=$(( $1 + 0 ))
curl -sS -f --max-time 10 "http://127.0.0.1:$p/second"
sleep 0.3`, port, "second")
	if err != nil || !strings.Contains(out, "PROXIED-OK") {
		t.Fatalf("second: %v\n%s", err, out)
	}
	if first.ProcessState.Pid() != second.ProcessState.Pid() {
		t.Errorf("the second command ran in a new sandbox (init %d, then %d)", first.ProcessState.Pid(), second.ProcessState.Pid())
	}
	if n := denied(first.String()); n != left {
		t.Errorf("the first command's loop asked the proxy %d times after its Wait", n-left)
	}
	if n := denied(second.String()); n > 0 {
		t.Errorf("%d of the first command's requests were recorded with the second", n)
	}
	allowed := false
	for _, r := range e.rec.Records() {
		if r.Protocol == audit.Net && r.Outcome == audit.Allowed && strings.Contains(r.Target, "127.0.0.1:"+port) &&
			strings.Contains(r.Detail, "sandbox of "+second.String()) {
			allowed = true
		}
	}
	if !allowed {
		t.Errorf("no allowed request recorded with the second command (%s)", second.String())
	}
}

// TestKeptSandboxDiesWithHost: a sandbox kept idle after its command
// (recycled) is a process of the host's that nobody waits on; when the
// host is killed it must end too. This test binary is re-executed as the
// host, which runs one command, reports the kept init and waits to be
// killed.
func TestKeptSandboxDiesWithHost(t *testing.T) {
	e := sandboxEnv(t, policy.Spec{Exec: shellTools})
	_ = e
	host, line := startHost(t, "TestKeptSandboxHostProcess", "kept", "KEPT ")
	kept, _ := strconv.Atoi(line)
	if kept == 0 || !proctree.Alive(kept) {
		t.Fatalf("the host did not report a kept sandbox (%d)", kept)
	}
	must(t, host.Process.Signal(syscall.SIGKILL))
	deadline := time.Now().Add(10 * time.Second)
	for proctree.Alive(kept) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(kept, syscall.SIGKILL)
			t.Fatalf("the kept init %d survived its host", kept)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKeptSandboxHostProcess is the host of TestKeptSandboxDiesWithHost;
// it runs only when re-executed by it.
func TestKeptSandboxHostProcess(t *testing.T) {
	if os.Getenv("AUDITGUARD_SANDBOX_HOST") != "kept" {
		t.Skip("runs only as TestKeptSandboxDiesWithHost's host")
	}
	e := sandboxEnv(t, policy.Spec{Exec: shellTools})
	c := procguard.CommandContext(e.ctx, "true")
	c.Dir = e.dir
	must(t, c.Run())
	if !sandbox.Recycling() || c.ProcessState == nil || !proctree.Alive(c.ProcessState.Pid()) {
		t.Fatal("no kept sandbox")
	}
	fmt.Printf("KEPT %d\n", c.ProcessState.Pid())
	time.Sleep(25 * time.Second) // the test kills this host before
}

// TestRecycleOffCommands: with recycling off and the pool on, commands
// run in sandboxes of their own that end after their Wait. A command that
// leaves a background writer: the writer is dead by its Wait, nothing of
// its sandbox but init is left, and the next command runs in another
// sandbox; a command killed by its timeout reports the kill; turning
// recycling off again waits for both inits to end.
func TestRecycleOffCommands(t *testing.T) {
	e := sandboxEnv(t, policy.Spec{Exec: shellTools})
	sandbox.SetRecycle(false)
	t.Cleanup(func() { sandbox.SetRecycle(true) })
	if !sandbox.EndsAfterWait() {
		t.Skip("no sandbox outlives its Wait here")
	}
	c := procguard.CommandContext(e.ctx, "sh", "-c", `(while :; do echo x >> tick; sleep 0.02; done) &
sleep 0.2
exit 3`)
	c.Dir = e.dir
	err := c.Run()
	if c.Confinement.Sandbox == nil {
		t.Skipf("no sandbox here: %s", c.Confinement.SandboxNote)
	}
	if c.ProcessState == nil || c.ProcessState.ExitCode() != 3 {
		t.Fatalf("err %v, state %v: want exit 3", err, c.ProcessState)
	}
	if left := leftOf(c); len(left) > 0 {
		t.Errorf("processes of the command outlived its Wait: %v", left)
	}
	size := func() int64 {
		fi, err := os.Stat(e.dir + "/tick")
		if err != nil {
			t.Fatalf("the background writer never wrote: %v", err)
		}
		return fi.Size()
	}
	before := size()
	time.Sleep(300 * time.Millisecond)
	if after := size(); after != before {
		t.Errorf("the background writer still writes after the Wait: %d, then %d bytes", before, after)
	}
	first := c.ProcessState.Pid()

	k := procguard.CommandContext(e.ctx, "sleep", "10")
	k.Dir, k.Timeout = e.dir, 300*time.Millisecond
	start := time.Now()
	err = k.Run()
	var ke *procguard.KilledError
	if !errors.As(err, &ke) || !errors.Is(ke.Cause, procguard.ErrTimeout) || time.Since(start) > 8*time.Second {
		t.Fatalf("a command past its timeout: %v after %v, want a KilledError for the timeout", err, time.Since(start))
	}
	second := k.Confinement.ProcessGroup
	if second == first {
		t.Errorf("the second command ran in the first's sandbox (init %d)", first)
	}
	sandbox.SetRecycle(false) // waits for the ends under way
	for _, pid := range []int{first, second} {
		if proctree.Alive(pid) {
			t.Errorf("init %d outlived SetRecycle(false)", pid)
		}
	}
}
