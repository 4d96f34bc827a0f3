package procguard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/landlock"
)

func needLandlock(t *testing.T) int {
	t.Helper()
	abi, err := landlock.ABI()
	if err != nil {
		t.Skipf("Landlock unavailable: %v", err)
	}
	return abi
}

// TestLandlockConfinesChildNotHost: an allowed shell (judged as itself, so
// the in-process plan does not see the target) cannot write outside the
// write roots because the kernel refuses, while the host keeps writing
// there from many goroutines afterwards.
func TestLandlockConfinesChildNotHost(t *testing.T) {
	abi := needLandlock(t)
	e := setup(t, policy.ExecSpec{Rules: allow("sh")}, pastArgv()...)
	outside := t.TempDir()
	target := filepath.Join(outside, "f")

	c := procguard.CommandContext(e.ctx, "sh", "-c", `echo x > "$1"`, "sh", target)
	c.Dir = e.dir
	out, err := c.CombinedOutput()
	if err == nil {
		t.Fatalf("the child wrote outside the write roots: %q", out)
	}
	if !strings.Contains(string(out), "Permission denied") {
		t.Fatalf("not a kernel denial: %v %q", err, out)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists: %v", target, err)
	}
	if got := c.Confinement.Landlock; got.ABI != abi || len(got.Rules) == 0 {
		t.Fatalf("confinement %+v", got)
	}
	// The exec record says what is enforced; the child's refused write
	// is recorded after it (the sandbox's supervisor, decided again in
	// the host).
	var execRec *audit.Record
	for _, r := range e.rec.Records() {
		if r.Protocol == audit.Exec {
			execRec = &r
		}
	}
	if execRec == nil || !strings.Contains(execRec.Detail, "landlock=abi "+strconv.Itoa(abi)) {
		t.Fatalf("event detail does not say what is enforced: %+v", e.rec.Records())
	}

	// Inside the write root the same child may write.
	c = procguard.CommandContext(e.ctx, "sh", "-c", `echo x > "$1"`, "sh", filepath.Join(e.dir, "ok"))
	c.Dir = e.dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("inside write root: %v %q", err, out)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- os.WriteFile(filepath.Join(outside, "host-"+strconv.Itoa(i)), []byte("host"), 0o644)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("the host was restricted: %v", err)
		}
	}
}

func TestLandlockOffAndRequired(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("true"), NoLandlock: true})
	c := procguard.CommandContext(e.ctx, "true")
	c.Dir = e.dir
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if c.Confinement.Landlock.ABI != 0 || !strings.Contains(c.Confinement.LandlockNote, "disabled") {
		t.Fatalf("%+v", c.Confinement)
	}
	if _, err := policy.New(policy.Spec{Exec: policy.ExecSpec{NoLandlock: true, RequireLandlock: true}}); err == nil {
		t.Fatal("contradictory switches accepted")
	}
	if _, err := landlock.ABI(); err == nil {
		e := setup(t, policy.ExecSpec{Rules: allow("true"), RequireLandlock: true})
		c := procguard.CommandContext(e.ctx, "true")
		c.Dir = e.dir
		if err := c.Run(); err != nil || c.Confinement.Landlock.ABI == 0 {
			t.Fatalf("required Landlock: %v %+v", err, c.Confinement)
		}
	}
}

// copyOf copies the real file behind prog into dir and returns the copy.
func copyOf(t *testing.T, prog, dir string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(prog)
	if err != nil {
		t.Skip(err)
	}
	b, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "my"+filepath.Base(real))
	if err := os.WriteFile(cp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return cp
}

// TestLandlockExecOnlyAllowedByDefault: by default a shell judged as itself
// (its script is opaque, so it is allowed as "sh" while the plan cannot see
// what it runs) can run an allowed program but not another one, nor a copy
// of an allowed program placed in a write root: the kernel refuses the
// execve. With LandlockExecAny the old behaviour comes back.
func TestLandlockExecOnlyAllowedByDefault(t *testing.T) {
	needLandlock(t)
	tru, err := filepath.EvalSymlinks("/usr/bin/true")
	if err != nil {
		t.Skip(err)
	}
	id, err := exec.LookPath("id")
	if err != nil {
		t.Skip("id not installed")
	}
	for _, execAny := range []bool{false, true} {
		e := setup(t, policy.ExecSpec{Rules: allow("sh", "true"), LandlockExecAny: execAny})
		copyTrue := copyOf(t, tru, e.dir)
		tests := []struct {
			prog string
			ok   bool
		}{
			{tru, true},
			{id, execAny},
			{copyTrue, execAny},
		}
		for _, tt := range tests {
			c := procguard.CommandContext(e.ctx, "sh", "-c", `"$1"`, "sh", tt.prog)
			c.Dir = e.dir
			if d := c.Check(); !d.Allowed || d.Plan.Opaque == "" {
				t.Fatalf("the script should be allowed as an opaque sh: %+v", d)
			}
			c = procguard.CommandContext(e.ctx, "sh", "-c", `"$1"`, "sh", tt.prog)
			c.Dir = e.dir
			out, err := c.CombinedOutput()
			if c.Confinement.ExecJudged && tt.prog != tru {
				// Every exec is judged when it happens: a program no rule
				// allows is refused there, whatever Landlock would let run.
				tt.ok = false
			}
			if tt.ok != (err == nil) {
				t.Errorf("exec any %v, %s: err %v out %q", execAny, tt.prog, err, out)
			}
			if !tt.ok && !strings.Contains(string(out), "Permission denied") {
				t.Errorf("exec any %v, %s: not a kernel denial: %q", execAny, tt.prog, out)
			}
			var detail string
			for _, r := range e.rec.Records() {
				if r.Protocol == audit.Exec && len(r.Argv) > 0 && r.Argv[0] == "sh" {
					detail = r.Detail // the command's own record, not its programs'
				}
			}
			switch want := "execute only allowed programs"; {
			case c.Confinement.ExecJudged && !execAny:
				if !strings.Contains(detail, "every exec is judged when it happens") {
					t.Errorf("exec judged: event detail %q", detail)
				}
			case strings.Contains(detail, want) == execAny:
				t.Errorf("exec any %v: event detail %q", execAny, detail)
			}
		}
	}
}

// TestLandlockExecRescued: a command without any allow rule that BeforeDeny
// rescues runs under the default exec restriction, with every program of
// its plan (the shell of a plain script and the commands it runs) made
// executable for that command only; what the plan could not see (an
// opaque script's programs) stays refused, and the next, unrescued
// command in the same guard does not get the rescued programs (restricted
// threads are reused per ruleset, and the extra programs are part of it).
func TestLandlockExecRescued(t *testing.T) {
	needLandlock(t)
	if _, err := exec.LookPath("id"); err != nil {
		t.Skip("id not installed")
	}
	e := setup(t, policy.ExecSpec{Rules: allow("sh", "true")}, audit.WithBeforeDeny(func(ctx context.Context, ev *audit.Event) bool {
		return ev.Call != nil && ev.Call.Name == "trusted"
	}))
	tool, done := audit.WithCall(e.ctx, "trusted", nil)
	defer done()
	tests := []struct {
		name string
		argv []string
		ok   bool
	}{
		{"program", []string{"id", "-u"}, true},
		{"plain script", []string{"sh", "-c", "id -u && true"}, true},
		{"wrapper", []string{"env", "id", "-u"}, true},
		{"opaque script", []string{"sh", "-c", `"$1" -u`, "sh", "id"}, false},
	}
	for _, tt := range tests {
		c := procguard.CommandContext(tool, tt.argv[0], tt.argv[1:]...)
		c.Dir = e.dir
		out, err := c.CombinedOutput()
		if c.Confinement.ExecJudged {
			// What the opaque script runs is judged, and rescued, at its
			// exec: the tool call is trusted there too.
			tt.ok = true
		}
		if tt.ok != (err == nil) {
			t.Errorf("%s: err %v out %q", tt.name, err, out)
		}
		if !tt.ok && !strings.Contains(string(out), "Permission denied") {
			t.Errorf("%s: not a kernel denial: %q", tt.name, out)
		}
		if tt.ok && strings.TrimSpace(string(out)) != strconv.Itoa(os.Getuid()) {
			t.Errorf("%s: output %q", tt.name, out)
		}
	}
	// Generated code (no tool call) is refused id, and an allowed opaque
	// script cannot reach the program rescued just before.
	c := procguard.CommandContext(e.ctx, "id", "-u")
	c.Dir = e.dir
	if err := c.Run(); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("unrescued id: %v", err)
	}
	for range 2 {
		c := procguard.CommandContext(e.ctx, "sh", "-c", `"$1" -u`, "sh", "id")
		c.Dir = e.dir
		if out, err := c.CombinedOutput(); err == nil || !strings.Contains(string(out), "Permission denied") {
			t.Errorf("an unrescued script ran id: %v %q", err, out)
		}
	}
}

// TestLandlockExecEnvShebang: an allowed "#!/usr/bin/env sh" script runs
// under the default exec restriction: env and the program it names (found
// in the policy's PATH) are executable for it.
func TestLandlockExecEnvShebang(t *testing.T) {
	needLandlock(t)
	if _, err := os.Stat("/usr/bin/env"); err != nil {
		t.Skip("no /usr/bin/env")
	}
	bin := t.TempDir()
	script := filepath.Join(bin, "hello")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := setup(t, policy.ExecSpec{Rules: allow(script)})
	c := procguard.CommandContext(e.ctx, script)
	c.Dir = e.dir
	out, err := c.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "hello" {
		t.Fatalf("env script: %v %q (%v)", err, out, c.Confinement.Landlock)
	}
}

// TestLandlockChildCannotSignalHost: from ABI 6 the child's domain is
// scoped for signals, so generated code cannot kill the agent host. (In
// the sandbox the host is not even visible: this tests the fallback.)
func TestLandlockChildCannotSignalHost(t *testing.T) {
	if abi := needLandlock(t); abi < 6 {
		t.Skipf("Landlock ABI %d has no signal scoping (needs 6)", abi)
	}
	e := setup(t, policy.ExecSpec{Rules: allow("sh", "sleep"), NoSandbox: true})
	c := procguard.CommandContext(e.ctx, "sh", "-c", `kill -0 "$1"`, "sh", strconv.Itoa(os.Getpid()))
	c.Dir = e.dir
	out, err := c.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not permitted") {
		t.Fatalf("the child could signal the host: %v %q", err, out)
	}
	if c.Confinement.Landlock.Scoped&landlock.ScopeSignal == 0 {
		t.Fatalf("scope not recorded: %+v", c.Confinement.Landlock)
	}
	// Inside its own group it still may (job control keeps working).
	// (wait reports 128+15: the job died of the SIGTERM.)
	c = procguard.CommandContext(e.ctx, "sh", "-c", `sleep 5 & kill $!; wait $!; test $? -eq 143`)
	c.Dir = e.dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("signal inside the domain: %v %q", err, out)
	}
}

// TestLandlockDenyNetwork: with ExecSpec.DenyNetwork a child cannot connect
// to a loopback server that an unrestricted child reaches. The sandbox's
// network namespace would hide the server anyway: this tests Landlock's
// own TCP rule, in the host's network.
func TestLandlockDenyNetwork(t *testing.T) {
	if abi := needLandlock(t); abi < 4 {
		t.Skipf("Landlock ABI %d cannot restrict TCP (needs 4)", abi)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash (for /dev/tcp) not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	for _, deny := range []bool{false, true} {
		e := setup(t, policy.ExecSpec{Rules: allow("bash"), DenyNetwork: deny, HostNetwork: true}, pastArgv()...)
		c := procguard.CommandContext(e.ctx, "bash", "-c", `echo hi > "/dev/tcp/127.0.0.1/$1"`, "bash", port)
		c.Dir = e.dir
		out, err := c.CombinedOutput()
		if !deny {
			if err != nil {
				t.Fatalf("control: %v %q", err, out)
			}
			continue
		}
		if err == nil || !strings.Contains(string(out), "Permission denied") {
			t.Fatalf("DenyNetwork child connected: %v %q", err, out)
		}
		if c.Confinement.Landlock.HandledNet == 0 {
			t.Fatalf("not recorded: %+v", c.Confinement.Landlock)
		}
	}
	// The host still dials freely.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("host restricted: %v", err)
	}
	conn.Close()
}

// TestLandlockRootMadeLater: what a child's ruleset needs from the policy
// is worked out once per policy snapshot, but a write root that did not
// exist at the first start and was made afterwards is writable for the
// next child all the same (existence is checked on every start).
func TestLandlockRootMadeLater(t *testing.T) {
	needLandlock(t)
	dir := t.TempDir()
	later := filepath.Join(t.TempDir(), "later")
	pol, err := policy.New(policy.Spec{WriteRoots: []string{dir, later},
		Exec: policy.ExecSpec{Rules: allow("sh", "true"), NoSandbox: true}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), audit.WithBeforeDeny(func(context.Context, *audit.Event) bool { return true }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	write := func() error {
		c := procguard.CommandContext(ctx, "sh", "-c", "echo x > "+later+"/f")
		c.Dir = dir
		out, err := c.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	// The first start builds the policy's part of the ruleset while the
	// root is missing: the shell fails on its own (no such directory),
	// not by a policy decision.
	if err := write(); err == nil || errors.Is(err, audit.ErrDenied) || !strings.Contains(err.Error(), "nonexistent") && !strings.Contains(err.Error(), "No such file") {
		t.Fatalf("the write into a root that does not exist yet: %v", err)
	}
	if err := os.Mkdir(later, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := write(); err != nil {
		t.Fatalf("the root made after the first start is not writable: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(later, "f")); err != nil || string(got) != "x\n" {
		t.Fatalf("later/f = %q, %v", got, err)
	}
}
