package audittest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/audittest"
	"github.com/auditguard/auditguard/audittest/internal/toolrunner"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/proctest"
)

// exampleT stands in for the *testing.T an Example cannot be given: it
// prints what the firewall reports and runs the cleanups when end is
// called, as the testing package does when a test function returns. Only
// the methods below are used; the embedded TB is nil.
type exampleT struct {
	testing.TB
	ctx      context.Context
	cancel   context.CancelFunc
	cleanups []func()
	failed   bool
}

func newExampleT() *exampleT {
	ctx, cancel := context.WithCancel(context.Background())
	return &exampleT{ctx: ctx, cancel: cancel}
}

func (t *exampleT) Helper()                        {}
func (t *exampleT) Skipped() bool                  { return false }
func (t *exampleT) Failed() bool                   { return t.failed }
func (t *exampleT) Context() context.Context       { return t.ctx }
func (t *exampleT) Cleanup(f func())               { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Logf(format string, a ...any)   { fmt.Printf(format+"\n", a...) }
func (t *exampleT) Error(a ...any)                 { t.failed = true; fmt.Println(a...) }
func (t *exampleT) Errorf(format string, a ...any) { t.failed = true; fmt.Printf(format+"\n", a...) }
func (t *exampleT) Fatalf(format string, a ...any) { t.Errorf(format, a...); panic("Fatalf") }

// end is the test function returning: the context is cancelled, then the
// cleanups run, last registered first.
func (t *exampleT) end() {
	t.cancel()
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	fmt.Println("test failed:", t.failed)
}

func exampleDir() string {
	d, _ := os.MkdirTemp("", "audittest-example")
	d, _ = filepath.EvalSymlinks(d)
	return d
}

// A test of host code: the policy allows git status and HTTP to
// api.example.com; the fakes script what they answer; the file is written
// for real.
func ExampleEnter() {
	t := newExampleT() // in a test: the *testing.T
	dir := exampleDir()
	defer os.RemoveAll(dir)

	fw := audittest.Enter(t, policy.Spec{
		WriteRoots: []string{dir},
		Exec:       policy.ExecSpec{Rules: []policy.ExecRule{{Program: "git", Args: []string{"status"}}}},
		Net:        policy.NetSpec{Rules: []policy.NetRule{{Host: "api.example.com", Ports: []string{"80"}}}},
	})
	fw.Exec.Expect("git", "status", "--short").Stdout(" M main.go\n")
	fw.Net.Handle("api.example.com:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))

	r := &toolrunner.Runner{Dir: dir}
	err := r.Report(fw.Context()) // git status --short, then write status.txt
	b, _ := os.ReadFile(filepath.Join(dir, "status.txt"))
	fmt.Printf("report: %v %q\n", err, b)
	body, err := r.Fetch(fw.Context(), "http://api.example.com/health")
	fmt.Println("fetch:", body, err)

	t.end()
	// Output:
	// report: <nil> " M main.go\n"
	// fetch: ok <nil>
	// test failed: false
}

// What a developer reads when the code runs a command nobody scripted: the
// call site in the code under test, and the fix.
func ExampleEnter_unscripted() {
	t := newExampleT()
	dir := exampleDir()
	defer os.RemoveAll(dir)

	fw := audittest.Enter(t, policy.Spec{
		WriteRoots: []string{dir},
		Exec:       policy.ExecSpec{Rules: []policy.ExecRule{{Program: "git", Args: []string{"status"}}}},
	})
	r := &toolrunner.Runner{Dir: dir}
	_, err := r.Shell(fw.Context(), "git", "status", "--short")
	fmt.Println("the code gets proctest.ErrUnexpected:", errors.Is(err, proctest.ErrUnexpected))

	t.end()
	// Output:
	// the code gets proctest.ErrUnexpected: true
	// audittest: unexpected exec during the test: ["git" "status" "--short"]
	//     called at: runner.go:34 toolrunner.(*Runner).Shell
	//     why: the policy allowed it, but no script matches it
	//     fix one of:
	//       - script it: fw.Exec.Expect("git", "status", "--short").Stdout(...)
	//       - or, if the code should not run it, fix the code at runner.go:34 toolrunner.(*Runner).Shell
	// test failed: true
}

// A denial the test expects: AssertDenied checks it happened, and the end
// of the test does not report it.
func ExampleRecorder_AssertDenied() {
	t := newExampleT()
	dir := exampleDir()
	defer os.RemoveAll(dir)

	fw := audittest.Enter(t, policy.Spec{WriteRoots: []string{dir}})
	r := &toolrunner.Runner{Dir: dir}
	err := r.Save(fw.Context(), "/etc/motd", "hi")
	fmt.Println("denied:", err != nil)
	recs := fw.Recorder.AssertDenied(t, audit.FS, "/etc/motd")
	fmt.Println(len(recs), recs[0].Op, recs[0].Caller)

	t.end()
	// Output:
	// denied: true
	// 1 write runner.go:92 toolrunner.(*Runner).Save
	// test failed: false
}

// Mode overrides one protocol's mode for this test only: in Warn mode a
// command the policy denies still reaches the fake, and the end of the
// test logs the would-deny instead of failing.
func ExampleMode() {
	t := newExampleT()
	dir := exampleDir()
	defer os.RemoveAll(dir)

	fw := audittest.Enter(t, policy.Spec{WriteRoots: []string{dir}}, audittest.Mode(audit.Exec, audit.Warn))
	fw.Exec.Expect("git", "push").Stdout("pushed\n")
	r := &toolrunner.Runner{Dir: dir}
	out, err := r.Shell(fw.Context(), "git", "push")
	fmt.Printf("%q %v\n", out, err)

	t.end()
	// Output:
	// "pushed\n" <nil>
	// audittest: would deny (exec mode warn): ["git" "push"] at runner.go:34 toolrunner.(*Runner).Shell
	// test failed: false
}
