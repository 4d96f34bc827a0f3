package procguard_test

import (
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
