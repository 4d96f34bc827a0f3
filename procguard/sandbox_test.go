package procguard_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/internal/proctree"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// Every test here runs real children in the sandbox and tries a forbidden
// effect through an opaque shell script (variables, $(...)), so no argv
// rule can see it: what stops it is the kernel. Each asserts on disk,
// output or /proc that the effect did not happen. Each child has a
// timeout; the sandbox's pid namespace is checked empty afterwards.

// sandboxEnv enters a guard built from spec (the write root dir is added)
// and skips when this host cannot build the sandbox.
func sandboxEnv(t *testing.T, spec policy.Spec, opts ...audit.Option) *env {
	t.Helper()
	return newSandboxEnv(t, spec, append(pastArgv(), opts...)...)
}

// newSandboxEnv is sandboxEnv with only the options given (the argv
// layer's refusals stand).
func newSandboxEnv(t *testing.T, spec policy.Spec, opts ...audit.Option) *env {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spec.WriteRoots = append(spec.WriteRoots, dir)
	if spec.Exec.Timeout == 0 {
		spec.Exec.Timeout = 20 * time.Second
	}
	pol, err := policy.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	rec := audit.NewRecorder()
	g, err := audit.New(pol, append([]audit.Option{audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), audit.WithRecorder(rec)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	e := &env{ctx: ctx, dir: dir, rec: rec, pol: pol}
	needSandbox(t, e)
	return e
}

// needSandbox skips when the host cannot build the sandbox.
func needSandbox(t *testing.T, e *env) {
	t.Helper()
	c := procguard.CommandContext(e.ctx, "true")
	c.Dir = e.dir
	c.Path = "/bin/true"
	if d := c.Check(); !d.Allowed {
		return // true is not allowed here: the test's own commands will say
	}
	if err := c.Run(); err != nil {
		t.Fatalf("true: %v", err)
	}
	if c.Confinement.Sandbox == nil {
		t.Skipf("no sandbox on this host: %s", c.Confinement.SandboxNote)
	}
}

// runScript runs sh -c script in e.dir and returns its combined output;
// it checks that nothing of the sandbox survived.
func runScript(t *testing.T, e *env, script string, args ...string) (string, error, *procguard.Cmd) {
	t.Helper()
	return runScriptIn(t, e, nil, script, args...)
}

// runScriptIn is runScript as a command of session s (nil: none). After a
// session's command only the sandbox's init may be left.
func runScriptIn(t *testing.T, e *env, s *procguard.Session, script string, args ...string) (string, error, *procguard.Cmd) {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	c := procguard.CommandContext(ctx, "sh", append([]string{"-c", script, "sh"}, args...)...)
	c.Dir = e.dir
	c.Session = s
	out, err := c.CombinedOutput()
	if m := leftOf(c); len(m) > 0 {
		t.Errorf("processes of the sandbox survived: %v", m)
	}
	return string(out), err, c
}

var shellTools = policy.ExecSpec{Rules: allow("sh", "cat", "echo", "mkdir", "printf", "ls", "cp", "chmod", "mv", "ln", "rm", "sleep", "setsid", "touch", "head", "seq", "bash", "true")}

func TestSandboxProtectedNames(t *testing.T) {
	e := sandboxEnv(t, policy.Spec{Exec: shellTools})
	must(t, os.WriteFile(filepath.Join(e.dir, ".bashrc"), []byte("orig\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(e.dir, "repo/.git/hooks"), 0o755))
	must(t, os.WriteFile(filepath.Join(e.dir, "repo/.git/hooks/pre-push"), []byte("orig\n"), 0o755))
	// Every target name is built at run time, so the argv layer sees none.
	script := `
b=.ba; b="${b}shrc"
echo pwned > "$b"; echo pwned >> "$b"; rm -f "$b"; mv "$b" moved
h=$(printf '%s/%s' repo/.git hooks)
echo pwned > "$h/pre-commit"; echo pwned > "$h/pre-push"; rm -f "$h/pre-push"
mkdir -p new/.git/hooks; echo pwned > "new/$(printf .git)/hooks/pre-commit"
e=$(printf '.e%s' nv); echo KEY=1 > "$e"; echo KEY=1 > "deep/er/$e" 2>/dev/null; mkdir -p deep/er; echo KEY=1 > "deep/er/$e"
touch "x.$(printf pem)"; ln -s /tmp "$e"
echo ok > fine.txt
echo done`
	out, err, c := runScript(t, e, script)
	if err != nil || !strings.Contains(out, "done") {
		t.Fatalf("script: %v %q", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, ".bashrc")); string(b) != "orig\n" {
		t.Errorf(".bashrc changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "repo/.git/hooks/pre-push")); string(b) != "orig\n" {
		t.Errorf("existing hook changed: %q", b)
	}
	for _, gone := range []string{"moved", "repo/.git/hooks/pre-commit", "new/.git/hooks/pre-commit", ".env", "deep/er/.env", "x.pem"} {
		if _, err := os.Lstat(filepath.Join(e.dir, gone)); err == nil {
			t.Errorf("%s was created (sandbox %v)", gone, c.Confinement.Sandbox)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "fine.txt")); string(b) != "ok\n" {
		t.Errorf("an allowed write failed: %q", b)
	}
}

func TestSandboxReadDeny(t *testing.T) {
	secretDir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(secretDir, "token"), []byte("TOKEN-ABS\n"), 0o644))
	e := sandboxEnv(t, policy.Spec{Exec: shellTools, ReadDeny: []string{secretDir, "*.secret", "credentials.json"}})
	must(t, os.MkdirAll(filepath.Join(e.dir, "a/b/c/d/e/f/g/h"), 0o755))
	must(t, os.WriteFile(filepath.Join(e.dir, "db.secret"), []byte("TOKEN-TOP\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(e.dir, "a/b/c/d/e/f/g/h/deep.secret"), []byte("TOKEN-DEEP\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(e.dir, "a/credentials.json"), []byte("TOKEN-JSON\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(e.dir, "public.txt"), []byte("visible\n"), 0o644))
	script := `
s=$(printf '%s' "$1"); cat "$s/tok""en"; ls "$s"
f=db; cat "$f.sec""ret"; cat a/b/c/d/e/f/g/h/"deep.$(printf secret)"
x=a/cred; cat "${x}entials.json"; cp "${x}entials.json" copy.json; cat copy.json
cat public.txt; echo done`
	out, err, _ := runScript(t, e, script, secretDir)
	if !strings.Contains(out, "visible") || !strings.Contains(out, "done") {
		t.Fatalf("script did not run: %v %q", err, out)
	}
	if strings.Contains(out, "TOKEN") {
		t.Fatalf("a read-denied file was read: %q", out)
	}
}

func TestSandboxReadRoots(t *testing.T) {
	readable, outside := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(readable, "in.txt"), []byte("INSIDE\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "out.txt"), []byte("OUTSIDE\n"), 0o644))
	e := sandboxEnv(t, policy.Spec{Exec: shellTools, ReadRoots: []string{readable}})
	out, _, _ := runScript(t, e, `d=$(printf '%s' "$1"); cat "$d/in.txt"; o=$(printf '%s' "$2"); cat "$o/out.txt"; cat /etc/hostname; echo done`, readable, outside)
	if !strings.Contains(out, "INSIDE") || !strings.Contains(out, "done") {
		t.Fatalf("read root not readable: %q", out)
	}
	host, _ := os.ReadFile("/etc/hostname")
	if strings.Contains(out, "OUTSIDE") || (len(host) > 1 && strings.Contains(out, strings.TrimSpace(string(host)))) {
		t.Fatalf("read outside the read roots: %q", out)
	}
}

func TestSandboxOutsideWritesAndExec(t *testing.T) {
	outside := t.TempDir()
	e := sandboxEnv(t, policy.Spec{Exec: shellTools})
	script := `
o=$(printf '%s' "$1"); echo x > "$o/escaped"; mkdir "$o/dir"
cp /bin/true ./mytrue; ./mytrue && echo RAN-COPY
printf '#!/bin/sh\necho RAN-SCRIPT\n' > run.sh; chmod +x run.sh; ./run.sh
echo done`
	out, _, _ := runScript(t, e, script, outside)
	if !strings.Contains(out, "done") {
		t.Fatalf("script: %q", out)
	}
	if strings.Contains(out, "RAN-") {
		t.Fatalf("a program written in the workspace ran: %q", out)
	}
	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Fatalf("wrote outside the write roots: %v", ents)
	}
}

func TestSandboxNetwork(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash (for /dev/tcp, /dev/udp) not installed")
	}
	var hits sync.WaitGroup
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "FORWARDED-OK")
	}), ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	other, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { other.Close() })
	accepted := make(chan struct{}, 1)
	hits.Add(1)
	go func() {
		defer hits.Done()
		if c, err := other.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { udp.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	otherPort := other.Addr().(*net.TCPAddr).Port
	udpPort := udp.LocalAddr().(*net.UDPAddr).Port

	tools := shellTools
	tools.Rules = append(allow("curl"), tools.Rules...)
	for _, withRule := range []bool{false, true} {
		spec := policy.Spec{Exec: tools}
		if withRule {
			spec.Net.Rules = []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{strconv.Itoa(port)}}}
		}
		e := sandboxEnv(t, spec)
		script := `
p=$(( $1 + 0 )); exec 3<>"/dev/tcp/127.0.0.1/$p" && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && cat <&3
q=$(( $2 + 0 )); echo hi > "/dev/tcp/127.0.0.1/$q" && echo TCP-OTHER-CONNECTED
u=$(( $3 + 0 )); echo datagram > "/dev/udp/127.0.0.1/$u"
echo done`
		c := procguard.CommandContext(e.ctx, "bash", "-c", script, "bash", strconv.Itoa(port), strconv.Itoa(otherPort), strconv.Itoa(udpPort))
		c.Dir = e.dir
		c.Timeout = 20 * time.Second
		out, _ := c.CombinedOutput()
		got := string(out)
		if !strings.Contains(got, "done") {
			t.Fatalf("script: %q", got)
		}
		if strings.Contains(got, "FORWARDED-OK") != withRule {
			t.Errorf("rule=%v: loopback port reached=%v: %q (forwarded %v)", withRule, !withRule, got, c.Confinement.Sandbox.Forwarded)
		}
		if strings.Contains(got, "TCP-OTHER-CONNECTED") {
			t.Errorf("a port no rule allows was reached: %q", got)
		}
	}
	udp.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 64)
	if n, _, err := udp.ReadFrom(buf); err == nil {
		t.Errorf("a UDP datagram left the sandbox: %q", buf[:n])
	}
	select {
	case <-accepted:
		t.Error("the unforwarded TCP server accepted a connection")
	default:
	}
	other.Close()
	hits.Wait()
}

// egressEnv serves "PROXIED-OK" on a loopback port and enters a policy
// whose one net rule allows that port, with curl and the shell tools
// allowed and allowed calls recorded. The host's own proxy variable is
// set, to show it never reaches a child.
func egressEnv(t *testing.T) (*env, string) {
	t.Helper()
	return egressEnvWith(t, policy.ExecSpec{})
}

// egressEnvWith is egressEnv with the exec spec's other fields from base.
func egressEnvWith(t *testing.T, base policy.ExecSpec) (*env, string) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "PROXIED-OK")
	}), ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	t.Setenv("HTTP_PROXY", "http://host-proxy.invalid:1")
	tools := base
	tools.Rules = append(allow("curl"), shellTools.Rules...)
	spec := policy.Spec{Exec: tools}
	spec.Net.Rules = []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{port}}}
	return sandboxEnv(t, spec, audit.WithLogAllows()), port
}

// TestSandboxEgressProxy: with net rules, the child's only route out is
// the egress proxy the proxy variables name; each request through it is
// decided by the policy and recorded for the command, and the host's own
// proxy variables never reach the child.
func TestSandboxEgressProxy(t *testing.T) {
	e, port := egressEnv(t)
	t.Setenv("no_proxy", "*")
	// The allowed server through the proxy (curl reads http_proxy), a
	// loopback address no rule allows, and the variables the child sees.
	out, err, c := runScript(t, e, `
p=$(( $1 + 0 ))
curl -sS -f --max-time 10 "http://127.0.0.1:$p/"
curl -sS -f --max-time 10 "http://127.0.0.2:$p/" || echo DENIED-BY-PROXY
echo "vars $HTTP_PROXY $https_proxy $ALL_PROXY no_proxy=$no_proxy"`, port)
	if err != nil {
		t.Fatalf("script: %v %q", err, out)
	}
	sb := c.Confinement.Sandbox
	if sb == nil || sb.Proxy == "" {
		t.Fatalf("no egress proxy in the sandbox: %+v", sb)
	}
	if !strings.Contains(out, "PROXIED-OK") {
		t.Errorf("the allowed server was not reached through the proxy: %q", out)
	}
	if !strings.Contains(out, "DENIED-BY-PROXY") || !strings.Contains(out, "403") {
		t.Errorf("a loopback address no rule allows was not refused with 403: %q", out)
	}
	want := "vars http://" + sb.Proxy + " http://" + sb.Proxy + " socks5h://" + sb.Proxy + " no_proxy=\n"
	if !strings.Contains(out, want) {
		t.Errorf("proxy variables: got %q, want the line %q", out, want)
	}
	var allowed, denied bool
	for _, r := range e.rec.Records() {
		if r.Protocol != audit.Net || !strings.Contains(r.Detail, "sandbox of") {
			continue
		}
		switch {
		case r.Outcome == audit.Allowed && r.Target == "127.0.0.1:"+port && strings.Contains(r.Detail, "via proxy"):
			allowed = true
		case r.Outcome != audit.Allowed && strings.HasPrefix(r.Target, "127.0.0.2:"):
			denied = true
		}
	}
	if !allowed || !denied {
		for _, r := range e.rec.Records() {
			t.Logf("record: %s %s %s %q %v", r.Protocol, r.Op, r.Target, r.Detail, r.Outcome)
		}
		t.Errorf("records: allowed proxied request %v, denied one %v (both attributed to the command)", allowed, denied)
	}
}

func TestSandboxCannotSignalHost(t *testing.T) {
	e := sandboxEnv(t, policy.Spec{Exec: shellTools})
	out, err, _ := runScript(t, e, `p=$(( $1 + 0 )); kill -TERM "$p" && echo SIGNALLED; kill -0 1 && echo INIT-SIGNALLED; echo done`, strconv.Itoa(os.Getpid()))
	if err != nil || !strings.Contains(out, "done") || strings.Contains(out, "SIGNALLED") {
		t.Fatalf("signal: %v %q", err, out)
	}
}

// TestSandboxRlimitsFromTheStart: 100 starts at once, each child reads
// its limits as its first action: every one sees them.
func TestSandboxRlimitsFromTheStart(t *testing.T) {
	e := sandboxEnv(t, policy.Spec{Exec: policy.ExecSpec{Rules: allow("sh"), Limits: policy.ExecLimits{OpenFiles: 64, CPUSeconds: 30}}})
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := procguard.CommandContext(e.ctx, "sh", "-c", "ulimit -n; ulimit -t")
			c.Dir = e.dir
			c.Timeout = 60 * time.Second
			// 100 starts at once on a loaded machine can leave the
			// output's copier unscheduled for longer than the default
			// 2 s after the sandbox ended; the limits are what is tested.
			c.WaitDelay = 20 * time.Second
			out, err := c.Output()
			if err != nil || string(out) != "64\n30\n" {
				errs <- fmt.Errorf("start %d: %v %q", i, err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSandboxSetupErrorNamesTheStep: a program whose interpreter is
// missing fails to exec inside the sandbox; Start returns a *SetupError
// naming the step and the program, and nothing ran.
func TestSandboxSetupErrorNamesTheStep(t *testing.T) {
	bin := t.TempDir()
	prog := filepath.Join(bin, "broken")
	must(t, os.WriteFile(prog, []byte("#!/nonexistent/interpreter\necho ran > ran.txt\n"), 0o755))
	e := sandboxEnv(t, policy.Spec{Exec: policy.ExecSpec{Rules: allow(prog, "true")}})
	c := procguard.CommandContext(e.ctx, prog)
	c.Dir = e.dir
	err := c.Run()
	var se *sandbox.SetupError
	if !errors.As(err, &se) || se.Step != "exec" || se.Path != prog || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v (%T)", err, err)
	}
	if c.Process != nil {
		t.Fatal("a failed start left a Process")
	}
	if _, err := os.Stat(filepath.Join(e.dir, "ran.txt")); err == nil {
		t.Fatal("the command ran")
	}
}

func TestSandboxSignalledExit(t *testing.T) {
	e := sandboxEnv(t, policy.Spec{Exec: shellTools})
	_, err, c := runScript(t, e, `kill -KILL $$`)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || c.Signal != syscall.SIGKILL || ee.ExitCode() != 128+9 {
		t.Fatalf("err %v signal %v", err, c.Signal)
	}
}

// TestSandboxDiesWithHost re-executes this test binary as a host that
// starts a sandboxed child with a setsid'd grandchild, SIGKILLs that host
// and finds zero survivors in the sandbox's pid namespace.
func TestSandboxDiesWithHost(t *testing.T) {
	e := sandboxEnv(t, policy.Spec{Exec: shellTools})
	_ = e
	host, ns := startHost(t, "TestSandboxHostProcess", "1", "NS ")
	if ns == "" {
		t.Fatal("the host did not report its sandbox")
	}
	m := proctree.NamespaceMembers(ns, 0)
	if len(m) < 3 {
		t.Fatalf("the sandbox should hold init, sh, and the setsid'd sleep: %v", m)
	}
	initPid := 0
	for _, pid := range m {
		if proctree.NsPid(pid) == 1 {
			initPid = pid
		}
	}
	must(t, host.Process.Signal(syscall.SIGKILL))
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := proctree.NamespaceMembers(ns, initPid)
		if len(m) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, pid := range m {
				if p, err := os.FindProcess(pid); err == nil {
					_ = p.Kill()
				}
			}
			t.Fatalf("survived their host: %v", m)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startHost re-executes this test binary to run only the test named run,
// as a host (AUDITGUARD_SANDBOX_HOST=mode), bounded by 30 s and killed by
// the test's end, and returns it with the rest of the first line it
// prints that starts with prefix ("" if none).
func startHost(t *testing.T, run, mode, prefix string) (*exec.Cmd, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	host := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+run+"$")
	host.Env = append(os.Environ(), "AUDITGUARD_SANDBOX_HOST="+mode)
	out, err := host.StdoutPipe()
	must(t, err)
	must(t, host.Start())
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			return host, v
		}
	}
	return host, ""
}

// TestSandboxHostProcess is the host of TestSandboxDiesWithHost; it runs
// only when re-executed by it.
func TestSandboxHostProcess(t *testing.T) {
	if os.Getenv("AUDITGUARD_SANDBOX_HOST") != "1" {
		t.Skip("runs only as TestSandboxDiesWithHost's host")
	}
	e := sandboxEnv(t, policy.Spec{Exec: shellTools})
	c := procguard.CommandContext(e.ctx, "sh", "-c", "setsid sleep 60 & sleep 60")
	c.Dir = e.dir
	c.Timeout = 25 * time.Second
	must(t, c.Start())
	// Wait until the setsid'd sleep exists, then report.
	deadline := time.Now().Add(10 * time.Second)
	for len(proctree.NamespaceMembers(c.Confinement.Sandbox.PidNamespace, 0)) < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Println("NS " + c.Confinement.Sandbox.PidNamespace)
	_ = c.Wait()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSandboxProcessLimit: a script that starts 60 background sleeps hits
// the command's process limit; the rest of the machine is untouched and
// nothing survives.
func TestSandboxProcessLimit(t *testing.T) {
	e := sandboxEnv(t, policy.Spec{Exec: policy.ExecSpec{Rules: allow("sh", "seq", "sleep"), Limits: policy.ExecLimits{Processes: 30}}})
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	c := procguard.CommandContext(ctx, "sh", "-c", `for i in $(seq 60); do sleep 2 & done; wait`)
	c.Dir = e.dir
	out, err := c.CombinedOutput()
	if pids := c.Confinement.Cgroups.Pids; pids.Max != 30 {
		if pids.Max != 0 || pids.Why == procguard.CgroupInForce {
			t.Fatalf("pids limit %+v for a policy of 30 (%s)", pids, c.Confinement.CgroupNote)
		}
		t.Skipf("no pids controller here: %s", c.Confinement.CgroupNote)
	}
	if !strings.Contains(c.Confinement.CgroupNote, "pids=30") {
		t.Fatalf("the note %q does not render the limit", c.Confinement.CgroupNote)
	}
	// dash gives up at the first failed fork ("Cannot fork"), bash
	// reports each; either way the script ends on its own, not killed.
	var ke *procguard.KilledError
	if errors.As(err, &ke) {
		t.Fatalf("killed instead of limited: %v", err)
	}
	if !strings.Contains(string(out), "fork") && !strings.Contains(string(out), "Resource temporarily unavailable") {
		t.Fatalf("60 sleeps started under a limit of 30: %q", out)
	}
	if m := leftOf(c); len(m) > 0 {
		t.Fatalf("survivors: %v", m)
	}
}

// TestSandboxProcessLimitCountsTree: where every exec is judged, the
// process limit counts the command's tree only, not the sandbox's own
// threads: under a limit of 20, a script runs 19 processes at once, and
// not 21.
func TestSandboxProcessLimitCountsTree(t *testing.T) {
	e := sandboxEnv(t, policy.Spec{Exec: policy.ExecSpec{Rules: allow("sh", "seq", "sleep"), Limits: policy.ExecLimits{Processes: 20}}})
	run := func(n int) (string, *procguard.Cmd) {
		ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
		defer cancel()
		c := procguard.CommandContext(ctx, "sh", "-c", fmt.Sprintf(`for i in $(seq %d); do sleep 1 & done; wait; echo ran`, n))
		c.Dir = e.dir
		out, _ := c.CombinedOutput()
		return string(out), c
	}
	out, c := run(19)
	if pids := c.Confinement.Cgroups.Pids; pids.Max != 20 || pids.Via != procguard.CgroupV1 {
		t.Skipf("no v1 pids controller here: %+v (%s)", pids, c.Confinement.CgroupNote)
	}
	if !c.Confinement.ExecJudged {
		t.Skipf("execs are not judged here: %s", c.Confinement.SandboxNote)
	}
	if !strings.Contains(out, "ran") || strings.Contains(out, "fork") || strings.Contains(out, "unavailable") {
		t.Errorf("19 processes under a limit of 20: %q", out)
	}
	if out, _ := run(21); !strings.Contains(out, "fork") && !strings.Contains(out, "Resource temporarily unavailable") {
		t.Errorf("21 sleeps started under a limit of 20: %q", out)
	}
}

// TestHostProcessLimitCountsTree: a host command (StartHost: its execs
// are not judged, the target is held at a ptrace stop at its exec to join
// the tree's cgroup) counts its tree only too: init's threads stay
// outside the limit, so init can make one when the tree has reached it
// (a Go init that cannot make a thread dies, taking the command's outcome
// with it).
func TestHostProcessLimitCountsTree(t *testing.T) {
	e := sandboxEnv(t, policy.Spec{Exec: policy.ExecSpec{Rules: allow("sh", "seq", "sleep")}})
	run := func(n int) (string, *procguard.HostProcess) {
		ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
		defer cancel()
		var out bytes.Buffer
		hp, err := procguard.StartHost(ctx, &procguard.HostCommand{
			Path: "/bin/sh", Args: []string{"sh", "-c", fmt.Sprintf(`for i in $(seq %d); do sleep 1 & done; wait; echo ran`, n)},
			Env: []string{"PATH=/usr/bin:/bin"}, Dir: e.dir, Stdout: &out, Stderr: &out,
			Limits: policy.ExecLimits{Processes: 20}, Timeout: 20 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := hp.Wait(); err != nil {
			out.WriteString("wait: " + err.Error())
		}
		return out.String(), hp
	}
	out, hp := run(19)
	if pids := hp.Confinement.Cgroups.Pids; pids.Max != 20 || pids.Via != procguard.CgroupV1 {
		t.Skipf("no v1 pids controller here: %+v (%s)", pids, hp.Confinement.CgroupNote)
	}
	if hp.Confinement.ExecJudged {
		t.Fatal("a host command's execs were judged")
	}
	if !strings.Contains(out, "ran") || strings.Contains(out, "fork") || strings.Contains(out, "unavailable") {
		t.Errorf("19 processes under a limit of 20: %q", out)
	}
	if out, _ := run(21); !strings.Contains(out, "fork") && !strings.Contains(out, "Resource temporarily unavailable") {
		t.Errorf("21 sleeps started under a limit of 20: %q", out)
	}
}

// TestScopeReleaseKillsChildren: releasing the scope a command was started
// in kills its whole tree; Wait reports audit.ErrScopeClosed.
func TestScopeReleaseKillsChildren(t *testing.T) {
	for _, session := range []bool{false, true} {
		t.Run(map[bool]string{false: "own sandbox", true: "session"}[session], func(t *testing.T) {
			e := sandboxEnv(t, policy.Spec{Exec: shellTools})
			g := audit.From(e.ctx).Guard()
			ctx, release, err := g.Enter(e.ctx)
			must(t, err)
			c := procguard.CommandContext(ctx, "sh", "-c", "setsid sleep 60 & sleep 60")
			c.Dir = e.dir
			c.Timeout = 20 * time.Second
			if session {
				c.Session = &procguard.Session{}
				defer c.Session.Close()
			}
			must(t, c.Start())
			start := time.Now()
			release() // returns once the command is killed
			if d := time.Since(start); d > time.Second {
				t.Errorf("release took %v", d)
			}
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			select {
			case err := <-done:
				if !errors.Is(err, audit.ErrScopeClosed) {
					t.Fatalf("err %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("release did not kill the command")
			}
			if sb := c.Confinement.Sandbox; sb != nil {
				if m := proctree.NamespaceMembers(sb.PidNamespace, c.Confinement.ProcessGroup); len(m) > 0 {
					t.Fatalf("survivors: %v", m)
				}
			}
		})
	}
}

// TestSandboxRefusalsReachHost: a file call the supervisor refuses inside
// the sandbox is decided again in the host's pipeline, so it is recorded
// with the command's tool call and the name as resolved (here reached
// through a /proc alias), and a host's BeforeDeny may rescue it.
func TestSandboxRefusalsReachHost(t *testing.T) {
	rescue := audit.WithBeforeDeny(func(ctx context.Context, ev *audit.Event) bool {
		return ev.Call != nil && ev.Call.Name == "trusted" && strings.HasSuffix(ev.Resolved, "/.env")
	})
	e := sandboxEnv(t, policy.Spec{Exec: shellTools}, rescue, audit.WithRescueHard())
	run := func(tool, script string) string { return runAsTool(t, e, tool, script) }
	e.rec.Reset()
	run("agent-bash", `r=$(printf .bash); echo x > "/proc/self/cwd/${r}rc"; echo x > /proc/self/cwd/.env; echo done`)
	for _, p := range []string{".bashrc", ".env"} {
		if _, err := os.Lstat(filepath.Join(e.dir, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	var seen []string
	for _, r := range e.rec.Records() {
		if r.Protocol != audit.FS || !strings.Contains(r.Detail, "in the sandbox") {
			continue
		}
		seen = append(seen, r.Resolved)
		if r.Outcome != audit.Denied || r.Tool != "agent-bash" || !strings.HasPrefix(r.Resolved, e.dir+"/") {
			t.Errorf("record %+v: want a denial of the resolved name attributed to agent-bash", r)
		}
	}
	if !slices.Contains(seen, filepath.Join(e.dir, ".bashrc")) || !slices.Contains(seen, filepath.Join(e.dir, ".env")) {
		t.Errorf("the host saw %q, want both refusals", seen)
	}

	e.rec.Reset()
	run("trusted", `echo KEY=1 > .env; echo x > .bashrc; echo done`)
	if b, err := os.ReadFile(filepath.Join(e.dir, ".env")); err != nil || string(b) != "KEY=1\n" {
		t.Errorf(".env rescued by BeforeDeny: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(e.dir, ".bashrc")); err == nil {
		t.Error(".bashrc was created: BeforeDeny did not rescue it")
	}
	var rescued bool
	for _, r := range e.rec.Records() {
		if r.Outcome == audit.Rescued && strings.HasSuffix(r.Resolved, "/.env") && r.Tool == "trusted" {
			rescued = true
		}
	}
	if !rescued {
		t.Errorf("no rescued record for .env: %+v", e.rec.Records())
	}
}

// runAsTool runs script (from a file: the argv layer does not read what
// it runs) in e's sandbox under the tool call tool, and returns its
// output, which must say "done".
func runAsTool(t *testing.T, e *env, tool, script string) string {
	t.Helper()
	ctx, done := audit.WithCall(e.ctx, tool, nil)
	defer done()
	saved := e.ctx
	e.ctx = ctx
	defer func() { e.ctx = saved }()
	must(t, os.WriteFile(filepath.Join(e.dir, "t.sh"), []byte(script), 0o644))
	out, err, _ := runScript(t, e, "sh ./t.sh")
	if !strings.Contains(out, "done") {
		t.Fatalf("%s: %v %q", tool, err, out)
	}
	return out
}

// TestSandboxAllowedCallsReachHost: a guard that asks for them
// (WithChildFileCalls) sees the file calls the supervisor allows a child
// too, decided again in the host with the command's tool call and the
// name as resolved (here through a /proc alias), and its OnCall may
// refuse one: the child's create then fails and nothing is made. Without
// it, allowed child calls leave no record, even where allowed calls are
// logged (WithLogAllows).
func TestSandboxAllowedCallsReachHost(t *testing.T) {
	veto := audit.WithOnCall(func(ctx context.Context, ev *audit.Event) audit.Verdict {
		if ev.Protocol == audit.FS && strings.HasSuffix(ev.Resolved, "/vetoed.txt") {
			return audit.Deny
		}
		return audit.Continue
	})
	script := `echo a > made.txt; echo b > /proc/self/cwd/alias.txt; mkdir sub; mv made.txt sub/moved.txt; echo c > vetoed.txt || echo refused; echo done`
	run := func(e *env) string { return runAsTool(t, e, "agent-bash", script) }

	e := sandboxEnv(t, policy.Spec{Exec: shellTools}, veto, audit.WithChildFileCalls(), audit.WithLogAllows())
	e.rec.Reset()
	out := run(e)
	if !strings.Contains(out, "refused") {
		t.Errorf("the vetoed create did not fail in the child: %q", out)
	}
	if _, err := os.Lstat(filepath.Join(e.dir, "vetoed.txt")); err == nil {
		t.Error("vetoed.txt was created")
	}
	for _, p := range []string{"alias.txt", "sub/moved.txt"} {
		if _, err := os.Lstat(filepath.Join(e.dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	got := map[string]audit.Outcome{}
	for _, r := range e.rec.Records() {
		if r.Protocol != audit.FS || !strings.Contains(r.Detail, "in the sandbox") {
			continue
		}
		if r.Tool != "agent-bash" {
			t.Errorf("record %+v: not attributed to the tool call", r)
		}
		got[strings.TrimPrefix(r.Resolved, e.dir+"/")+" "+r.Op.String()] = r.Outcome
	}
	for k, want := range map[string]audit.Outcome{
		"made.txt write": audit.Allowed, "alias.txt write": audit.Allowed, "sub create": audit.Allowed,
		"made.txt move": audit.Allowed, "vetoed.txt write": audit.Denied,
	} {
		if got[k] != want {
			t.Errorf("%s: outcome %v, want %v (records: %v)", k, got[k], want, got)
		}
	}

	quiet := sandboxEnv(t, policy.Spec{Exec: shellTools}, audit.WithLogAllows())
	quiet.rec.Reset()
	run(quiet)
	for _, r := range quiet.rec.Records() {
		if r.Protocol == audit.FS && r.Outcome == audit.Allowed && strings.Contains(r.Detail, "in the sandbox") {
			t.Errorf("allowed child call recorded without WithChildFileCalls: %+v", r)
		}
	}
}

// TestSandboxGitMetadata is a child that tries to make the host's next
// git command read configuration or hooks it wrote: by exchanging a
// crafted directory with .git, moving .git away and putting one back, a
// commondir redirect, a .git pointer file where there was no repository,
// and writing config through a /proc alias. The host's git, asked after,
// still sees its own repository; an ordinary commit in the sandbox works.
func TestSandboxGitMetadata(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	e := sandboxEnv(t, policy.Spec{Exec: policy.ExecSpec{Rules: allow("sh", "git", "python3", "cat")}})
	hostGit := func(dir string, args ...string) (string, error) {
		c := exec.Command(git, args...)
		c.Dir = dir
		c.Env = []string{"HOME=" + e.dir, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
		out, err := c.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	repo := filepath.Join(e.dir, "repo")
	plain := filepath.Join(e.dir, "plain")
	must(t, os.MkdirAll(plain, 0o755))
	if out, err := hostGit(e.dir, "init", "-q", repo); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	want := map[string]string{}
	for _, q := range []string{"--git-common-dir", "--git-path hooks", "--git-dir"} {
		out, err := hostGit(repo, append([]string{"rev-parse"}, strings.Fields(q)...)...)
		if err != nil {
			t.Fatal(err)
		}
		want[q] = out
	}
	const program = `
import os, sys, errno, ctypes
def try_(key, fn):
    try:
        fn()
        print(key + "=ok", flush=True)
    except OSError as e:
        print(key + "=" + errno.errorcode.get(e.errno, str(e.errno)), flush=True)
def write(path, text):
    def f():
        with open(path, "w") as fh:
            fh.write(text)
    return f
repo, plain = sys.argv[1], sys.argv[2]
os.makedirs(repo + "/../crafted/hooks", exist_ok=True)
try_("crafted_config", write(repo + "/../crafted/config", "[core]\n\thooksPath = /tmp/evil\n"))
try_("crafted_hook", write(repo + "/../crafted/hooks/pre-commit", "#!/bin/sh\necho pwned\n"))
libc = ctypes.CDLL(None, use_errno=True)
def exchange(a, b):
    def f():
        if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:  # RENAME_EXCHANGE
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
    return f
try_("exchange", exchange(repo + "/../crafted", repo + "/.git"))
try_("move_away", lambda: os.rename(repo + "/.git", repo + "/../old-git"))
try_("commondir", write(repo + "/.git/commondir", "../../crafted\n"))
try_("config_alias", write("/proc/self/cwd/repo/.git/config", "[core]\n\thooksPath = /tmp/evil\n"))
try_("hook_alias", write("/proc/self/root" + repo + "/.git/hooks/pre-commit", "#!/bin/sh\n"))
try_("pointer", write(plain + "/.git", "gitdir: ../crafted\n"))
try_("pointer_link", lambda: os.symlink("../crafted", plain + "/.git"))
print("done=1")
`
	out, _, _ := runScript(t, e, `python3 -c "$1" "$2" "$3"`, program, repo, plain)
	st := statuses(out)
	if st["done"] != "1" || st["crafted_config"] != "ok" || st["crafted_hook"] != "ok" {
		t.Fatalf("the attacker did not run as planned: %q", out)
	}
	t.Logf("attacker:\n%s", out)
	for _, k := range []string{"exchange", "move_away", "commondir", "config_alias", "hook_alias", "pointer", "pointer_link"} {
		if v := st[k]; v == "ok" || v == "" {
			t.Errorf("%s = %q, want a refusal", k, v)
		}
	}
	for q, w := range want {
		got, err := hostGit(repo, append([]string{"rev-parse"}, strings.Fields(q)...)...)
		if err != nil || got != w {
			t.Errorf("host git rev-parse %s = %q (%v), want %q", q, got, err, w)
		}
	}
	if got, err := hostGit(repo, "config", "--get", "core.hooksPath"); err == nil || got != "" {
		t.Errorf("core.hooksPath is set for the host's git: %q", got)
	}
	if got, err := hostGit(plain, "rev-parse", "--git-dir"); err == nil {
		t.Errorf("the host's git sees a repository in %s: %q", plain, got)
	}

	// Ordinary work still goes: a commit in the sandbox.
	must(t, os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644))
	out, err, _ = runScript(t, e, `cd repo && git -c user.name=a -c user.email=a@example.com add a.txt && git -c user.name=a -c user.email=a@example.com commit -qm one && echo committed`)
	if !strings.Contains(out, "committed") {
		t.Fatalf("a commit in the sandbox failed: %v %q", err, out)
	}
	if got, err := hostGit(repo, "log", "--format=%s"); err != nil || got != "one" {
		t.Errorf("host git log = %q (%v), want the sandbox's commit", got, err)
	}
}

// statuses parses the "key=value" lines a program printed.
func statuses(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}
