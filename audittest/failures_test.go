package audittest_test

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/audittest"
	"github.com/auditguard/auditguard/audittest/internal/toolrunner"
)

// The TestFailing* tests fail on purpose. They run only inside
// TestFailuresAreReported, which starts this test binary again with
// failingEnv set and reads what they report.
const failingEnv = "AUDITTEST_RUN_FAILING"

func failing(t *testing.T) {
	if os.Getenv(failingEnv) != "1" {
		t.Skip("fails on purpose; run by TestFailuresAreReported")
	}
}

func TestFailingUnscriptedExec(t *testing.T) {
	failing(t)
	dir := tempDir(t)
	fw := audittest.Enter(t, toolSpec(dir))
	r := &toolrunner.Runner{Dir: dir}
	r.Shell(fw.Context(), "git", "status", "--short")
}

func TestFailingUnscriptedDial(t *testing.T) {
	failing(t)
	dir := tempDir(t)
	fw := audittest.Enter(t, toolSpec(dir))
	r := &toolrunner.Runner{Dir: dir}
	r.Fetch(fw.Context(), "http://api.example.com/v1")
}

func TestFailingDenied(t *testing.T) {
	failing(t)
	dir := tempDir(t)
	fw := audittest.Enter(t, toolSpec(dir))
	r := &toolrunner.Runner{Dir: dir}
	r.Shell(fw.Context(), "curl", "-s", "http://api.example.com/")
	r.Ping(fw.Context(), "127.0.0.1:22")
	r.Save(fw.Context(), "/etc/auditguard-test", "x")
}

func TestFailingUnusedScripts(t *testing.T) {
	failing(t)
	fw := audittest.Enter(t, toolSpec(tempDir(t)))
	fw.Exec.Expect("git", "status", "--short").Stdout("")
	fw.Net.Handle("api.example.com:80", http.NotFoundHandler())
}

func TestFailingStdinMismatch(t *testing.T) {
	failing(t)
	dir := tempDir(t)
	fw := audittest.Enter(t, toolSpec(dir))
	fw.Exec.Expect("git", "commit", "-F", "-").Stdin("fix: typo\n")
	r := &toolrunner.Runner{Dir: dir}
	r.Commit(fw.Context(), "wip\n")
}

// TestFailingAfterTheTest: the goroutine runs its command after the test
// function returned, while the test's cleanups run.
func TestFailingAfterTheTest(t *testing.T) {
	failing(t)
	dir := tempDir(t)
	fw := audittest.Enter(t, toolSpec(dir))
	fw.Exec.Expect("git", "status", "--short").AnyTimes()
	r := &toolrunner.Runner{Dir: dir}
	start := make(chan struct{})
	done := r.Later(fw.Context(), start, "git", "status", "--short")
	t.Cleanup(func() {
		close(start)
		if err := <-done; err == nil {
			t.Error("the call after the test was allowed")
		}
	})
}

// TestFailingLeak: a command started during the test and never waited for.
func TestFailingLeak(t *testing.T) {
	failing(t)
	dir := tempDir(t)
	fw := audittest.Enter(t, toolSpec(dir))
	fw.Exec.Expect("git", "status", "--short").Delay(time.Hour)
	r := &toolrunner.Runner{Dir: dir}
	go r.Shell(fw.Context(), "git", "status", "--short") // the firewall's release kills it
	for deadline := time.Now().Add(10 * time.Second); len(fw.Exec.Running()) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
	}
}

// TestFailingAssertDenied: the assertion names what was denied instead.
func TestFailingAssertDenied(t *testing.T) {
	failing(t)
	dir := tempDir(t)
	fw := audittest.Enter(t, toolSpec(dir))
	fw.Exec.Expect("git", "status", "--short")
	r := &toolrunner.Runner{Dir: dir}
	r.Shell(fw.Context(), "git", "status", "--short")
	fw.Recorder.AssertDenied(t, audit.Exec, "git")
}

// TestFailingEarly: a test that failed before running its scripts is not
// also reported for them.
func TestFailingEarly(t *testing.T) {
	failing(t)
	fw := audittest.Enter(t, toolSpec(tempDir(t)))
	fw.Exec.Expect("git", "status", "--short")
	t.Fatal("the test's own failure")
}

// runnerLine returns the line of runner.go holding code, so the expected
// call sites follow edits of the runner.
func runnerLine(t *testing.T, code string) string {
	t.Helper()
	f, err := os.Open("internal/toolrunner/runner.go")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), code) {
			return "runner.go:" + strconv.Itoa(n)
		}
	}
	t.Fatalf("%q not in runner.go", code)
	return ""
}

// TestFailuresAreReported runs each TestFailing* test in a child test
// binary and checks that it failed with the report a developer needs:
// what, the call site in the code under test, and the fix.
func TestFailuresAreReported(t *testing.T) {
	if os.Getenv(failingEnv) == "1" {
		t.Skip("inside the child")
	}
	shell := runnerLine(t, "out, err := cmd.Output()") + " toolrunner.(*Runner).Shell"
	commit := runnerLine(t, "cmd.CombinedOutput()") + " toolrunner.(*Runner).Commit"
	cases := []struct {
		test string
		want []string
	}{
		{"TestFailingUnscriptedExec", []string{
			`audittest: unexpected exec during the test: ["git" "status" "--short"]`,
			"called at: " + shell,
			"the policy allowed it, but no script matches it",
			`script it: fw.Exec.Expect("git", "status", "--short").Stdout(...)`,
		}},
		{"TestFailingUnscriptedDial", []string{
			"audittest: unexpected dial during the test: tcp api.example.com:80",
			"called at: " + runnerLine(t, "netguard.NewClient(ctx).Do(req)") + " toolrunner.(*Runner).Fetch",
			`fw.Net.Handle("api.example.com:80", handler)`,
		}},
		{"TestFailingDenied", []string{
			`audittest: denied exec during the test: ["curl" "-s" "http://api.example.com/"]`,
			"called at: " + shell,
			`allow it: add policy.ExecRule{Program: "curl", Args: []string{"-s", "http://api.example.com/"}} to the spec's Exec.Rules`,
			`expect it: fw.Recorder.AssertDenied(t, audit.Exec, "curl")`,
			"audittest: denied net during the test: connect 127.0.0.1:22",
			"called at: " + runnerLine(t, `d.DialContext(ctx, "tcp", addr)`) + " toolrunner.(*Runner).Ping",
			`allow it: add policy.NetRule{CIDR: "127.0.0.1", Ports: []string{"22"}} to the spec's Net.Rules`,
			`audittest: denied fs during the test: write "/etc/auditguard-test"`,
			"called at: " + runnerLine(t, "afero.WriteFile(fsys") + " toolrunner.(*Runner).Save",
			`WriteRoots: []string{"/etc"}`,
		}},
		{"TestFailingUnusedScripts", []string{
			`audittest: scripted exec never happened: Expect("git", "status", "--short") at failures_test.go:`,
			"it served 0 commands; it expects 1",
			`audittest: scripted dial never happened: Handle("api.example.com:80") at failures_test.go:`,
			"it expects 1 or more requests",
		}},
		{"TestFailingStdinMismatch", []string{
			`audittest: exec did not follow its script: ["git" "commit" "-F" "-"]`,
			"called at: " + commit,
			`stdin: want "fix: typo\n", got "wip\n"`,
		}},
		{"TestFailingAfterTheTest", []string{
			`audittest: exec after the test: ["git" "status" "--short"]`,
			"called at: " + shell,
			"the test function had already returned (a goroutine outlived the test); the call was denied",
		}},
		{"TestFailingAssertDenied", []string{
			`audittest: AssertDenied(exec, "git"): no such denial; denials so far: none`,
		}},
		{"TestFailingEarly", []string{"the test's own failure"}},
		{"TestFailingLeak", []string{
			`audittest: exec still running when the test ended (a leak during the test): ["git" "status" "--short"]`,
			"called at: " + shell,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.test, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+tc.test+"$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), failingEnv+"=1")
			out, err := cmd.CombinedOutput()
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatalf("the child test did not fail (%v):\n%s", err, out)
			}
			text := string(out)
			if !strings.Contains(text, "--- FAIL: "+tc.test) {
				t.Fatalf("no FAIL line for %s:\n%s", tc.test, text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("the report lacks %q:\n%s", w, text)
				}
			}
			if tc.test == "TestFailingEarly" && strings.Contains(text, "never happened") {
				t.Errorf("a test that failed early was reported for its unused scripts:\n%s", text)
			}
			if tc.test != "TestFailingAfterTheTest" && strings.Contains(text, "after the test") {
				t.Errorf("a call during the test was reported as after it:\n%s", text)
			}
			if tc.test == "TestFailingAfterTheTest" && strings.Contains(text, "during the test") {
				t.Errorf("a call after the test was reported as during it:\n%s", text)
			}
		})
	}
}
