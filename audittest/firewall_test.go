package audittest_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/audittest"
	"github.com/auditguard/auditguard/audittest/internal/toolrunner"
	"github.com/auditguard/auditguard/policy"
)

func tempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// toolSpec is the policy the tool runner's tests run under: git status and
// git commit, HTTP to api.example.com, a line protocol on loopback 7000,
// writes in dir.
func toolSpec(dir string) policy.Spec {
	return policy.Spec{
		WriteRoots: []string{dir},
		Exec: policy.ExecSpec{Rules: []policy.ExecRule{
			{Program: "git", Args: []string{"status"}},
			{Program: "git", Args: []string{"commit"}},
		}},
		Net: policy.NetSpec{Rules: []policy.NetRule{
			{Host: "api.example.com", Ports: []string{"80"}},
			{CIDR: "127.0.0.1", Ports: []string{"7000"}},
		}},
	}
}

func TestScriptedToolRunPasses(t *testing.T) {
	dir := tempDir(t)
	fw := audittest.Enter(t, toolSpec(dir))
	fw.Exec.Expect("git", "status", "--short").Stdout(" M main.go\n")
	fw.Exec.Expect("git", "commit", "-F", "-").Stdin("fix: typo\n").Stdout("[main 1a2b3c] fix: typo\n")
	api := fw.Net.Handle("api.example.com:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.URL.Path)
	}))
	fw.Net.Expect("tcp", "127.0.0.1:7000").Recv("PING\n").Send("PONG\n")

	r := &toolrunner.Runner{Dir: dir}
	ctx := fw.Context()
	if err := r.Report(ctx); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "status.txt")); err != nil || string(b) != " M main.go\n" {
		t.Fatalf("status.txt: %q %v", b, err)
	}
	if err := r.Commit(ctx, "fix: typo\n"); err != nil {
		t.Fatal(err)
	}
	body, err := r.Fetch(ctx, "http://api.example.com/v1/issues")
	if err != nil || body != "hello /v1/issues" {
		t.Fatalf("fetch: %q %v", body, err)
	}
	if reqs := api.Requests(); len(reqs) != 1 || reqs[0].Method != "GET" || reqs[0].Host != "api.example.com" {
		t.Fatalf("requests %+v", reqs)
	}
	pong, err := r.Ping(ctx, "127.0.0.1:7000")
	if err != nil || pong != "PONG" {
		t.Fatalf("ping: %q %v", pong, err)
	}
	fw.Recorder.AssertNoDenials(t)
}

// TestDeniedCallNeverReachesTheFake: the policy decides first; a denied
// command and a denied dial are not seen by the fakes, even when scripted.
func TestDeniedCallNeverReachesTheFake(t *testing.T) {
	dir := tempDir(t)
	fw := audittest.Enter(t, toolSpec(dir))
	fw.Exec.Expect("git", "push").AnyTimes()
	fw.Net.Handle("evil.example.com:80", http.NotFoundHandler()).AnyTimes()
	r := &toolrunner.Runner{Dir: dir}
	if _, err := r.Shell(fw.Context(), "git", "push"); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("git push: %v", err)
	}
	if _, err := r.Fetch(fw.Context(), "http://evil.example.com/"); !errors.Is(err, audit.ErrDenied) {
		t.Fatalf("fetch: %v", err)
	}
	if err := r.Save(fw.Context(), "/etc/auditguard-test", "x"); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("save: %v", err)
	}
	if n := len(fw.Exec.Calls()); n != 0 {
		t.Fatalf("the exec fake saw %d calls", n)
	}
	if n := len(fw.Net.Dials()); n != 0 {
		t.Fatalf("the net fake saw %d dials", n)
	}
	fw.Recorder.AssertDenied(t, audit.Exec, "git")
	fw.Recorder.AssertDenied(t, audit.Net, "evil.example.com:80")
	fw.Recorder.AssertDenied(t, audit.FS, "/etc/auditguard-test")
}

func TestExitCodesAndStderr(t *testing.T) {
	dir := tempDir(t)
	fw := audittest.Enter(t, toolSpec(dir))
	fw.Exec.Expect("git", "status", "--short").Stderr("fatal: not a git repository\n").Exit(128)
	r := &toolrunner.Runner{Dir: dir}
	_, err := r.Shell(fw.Context(), "git", "status", "--short")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128 || string(ee.Stderr) != "fatal: not a git repository\n" {
		t.Fatalf("%v", err)
	}
}

func TestModeWarnLetsDeniedCallsReachTheFakes(t *testing.T) {
	dir := tempDir(t)
	fw := audittest.Enter(t, toolSpec(dir), audittest.Mode(audit.Exec, audit.Warn))
	fw.Exec.Expect("git", "push").Stdout("pushed\n")
	r := &toolrunner.Runner{Dir: dir}
	out, err := r.Shell(fw.Context(), "git", "push")
	if err != nil || out != "pushed\n" {
		t.Fatalf("%q %v", out, err)
	}
	fw.Recorder.AssertNoDenials(t)
	warned := 0
	for _, rec := range fw.Recorder.Records() {
		if rec.Outcome == audit.Warned {
			warned++
		}
	}
	if warned != 1 {
		t.Fatalf("%d would-deny records", warned)
	}
}

// TestAfterTheTestOnceReleased: a goroutine that outlives the firewall's
// cleanup is denied with ErrScopeClosed; it cannot fail a finished test.
func TestAfterTheTestOnceReleased(t *testing.T) {
	dir := tempDir(t)
	var ctx context.Context
	t.Run("inner", func(t *testing.T) {
		fw := audittest.Enter(t, toolSpec(dir))
		ctx = fw.Context()
	})
	r := &toolrunner.Runner{Dir: dir}
	if _, err := r.Shell(ctx, "git", "status"); !errors.Is(err, audit.ErrScopeClosed) {
		t.Fatalf("%v", err)
	}
}

// TestParallelFirewalls runs 100 parallel subtests, each with its own
// fakes scripted with its own number: any cross-talk shows as a wrong
// answer, an unexpected call or an unused script.
func TestParallelFirewalls(t *testing.T) {
	dir := tempDir(t)
	for i := range 100 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			fw := audittest.Enter(t, toolSpec(dir))
			want := fmt.Sprintf("run %d\n", i)
			fw.Exec.Expect("git", "status", "--short").Stdout(want).Delay(time.Duration(i%7) * time.Millisecond)
			fw.Net.Handle("api.example.com:80", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprint(w, i)
			}))
			r := &toolrunner.Runner{Dir: dir}
			out, err := r.Shell(fw.Context(), "git", "status", "--short")
			if err != nil || out != want {
				t.Fatalf("exec: %q %v", out, err)
			}
			body, err := r.Fetch(fw.Context(), "http://api.example.com/")
			if err != nil || body != fmt.Sprint(i) {
				t.Fatalf("fetch: %q %v", body, err)
			}
			if n := len(fw.Exec.Calls()) + len(fw.Net.Dials()); n != 2 {
				t.Fatalf("%d calls", n)
			}
		})
	}
}

// TestRealExec: with Real(audit.Exec) allowed commands run for real, in
// the sandbox as in production.
func TestRealExec(t *testing.T) {
	dir := tempDir(t)
	fw := audittest.Enter(t, policy.Spec{WriteRoots: []string{dir},
		Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: "echo"}}, Timeout: 10 * time.Second}},
		audittest.Real(audit.Exec))
	if fw.Exec != nil {
		t.Fatal("Real(audit.Exec) installed an exec fake")
	}
	r := &toolrunner.Runner{Dir: dir}
	out, err := r.Shell(fw.Context(), "echo", "real")
	if err != nil || out != "real\n" {
		t.Fatalf("%q %v", out, err)
	}
}

// TestHostCallbacks: BeforeDeny given with GuardOptions rescues a denied
// command, which then reaches the fake; OnCall is asked after the
// firewall's own check.
func TestHostCallbacks(t *testing.T) {
	dir := tempDir(t)
	var seen []string
	fw := audittest.Enter(t, toolSpec(dir),
		audittest.GuardOptions(audit.WithBeforeDeny(func(_ context.Context, ev *audit.Event) bool {
			return len(ev.Argv) > 1 && ev.Argv[0] == "git" && ev.Argv[1] == "fetch"
		})),
		audittest.OnCall(func(_ context.Context, ev *audit.Event) audit.Verdict {
			seen = append(seen, ev.Target)
			return audit.Continue
		}))
	fw.Exec.Expect("git", "fetch").Stdout("fetched\n")
	r := &toolrunner.Runner{Dir: dir}
	out, err := r.Shell(fw.Context(), "git", "fetch")
	if err != nil || out != "fetched\n" {
		t.Fatalf("%q %v", out, err)
	}
	if len(seen) != 1 || seen[0] != "git" {
		t.Fatalf("OnCall saw %v", seen)
	}
	fw.Recorder.AssertNoDenials(t)
}

// TestSkippedTestAssertsNothing: a test skipped after scripting is not
// failed for its unused scripts.
func TestSkippedTestAssertsNothing(t *testing.T) {
	fw := audittest.Enter(t, toolSpec(tempDir(t)))
	fw.Exec.Expect("git", "status", "--short")
	t.Skip("skipped after scripting, on purpose")
}

// TestProgramTheMachineLacks: a stub in the policy's PATH lets the policy
// judge a program that is not installed; the fake plays it and the stub
// never runs (it would exit 99).
func TestProgramTheMachineLacks(t *testing.T) {
	dir, bin := tempDir(t), tempDir(t)
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte("#!/bin/sh\nexit 99\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fw := audittest.Enter(t, policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{
		Path:  append([]string{bin}, policy.DefaultExecPath...),
		Rules: []policy.ExecRule{{Program: "kubectl", Args: []string{"get"}}},
	}})
	fw.Exec.Expect("kubectl", "get", "pods").Stdout("web-1 Running\n")
	r := &toolrunner.Runner{Dir: dir}
	out, err := r.Shell(fw.Context(), "kubectl", "get", "pods")
	if err != nil || out != "web-1 Running\n" {
		t.Fatalf("%q %v", out, err)
	}
	if _, err := r.Shell(fw.Context(), "kubectl", "delete", "pod", "web-1"); !errors.Is(err, audit.ErrDenied) {
		t.Fatalf("delete: %v", err)
	}
	fw.Recorder.AssertDenied(t, audit.Exec, "kubectl")
}
