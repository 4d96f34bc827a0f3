package isolate_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/isolate"
)

// eagerSource is the over-eager generated program auditdemo's gocode
// scene runs (cmd/auditdemo/eager): it does what it was asked (a report
// in its workspace) and then too much: it writes to the home directory
// and into .git/hooks, runs rm and a shell and dials out. Every path and
// address comes from its arguments at run time, so nothing but the kernel
// can stop it.
const eagerSource = "../cmd/auditdemo/eager/main.go"

// TestRunGo builds a generated program written into t.TempDir() in the
// sandbox and runs it under the caller's policy: its own work lands, every
// forbidden write, exec and dial is refused by the kernel.
func TestRunGo(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain in PATH")
	}
	e := setup(t)
	mod := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/eager\n\ngo 1.24\n"), 0o644))
	src, err := os.ReadFile(eagerSource)
	must(err)
	must(os.WriteFile(filepath.Join(mod, "main.go"), src, 0o644))
	hooks := filepath.Join(e.dir, ".git", "hooks")
	must(os.MkdirAll(hooks, 0o755))
	must(os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("orig\n"), 0o755))
	home := t.TempDir()
	must(os.WriteFile(filepath.Join(home, ".bashrc"), []byte("mine\n"), 0o644))

	// TEST-NET-1 (RFC 5737): nothing routes it, so even a broken sandbox
	// reaches no real host.
	run := &isolate.GoRun{Dir: mod, Args: []string{e.dir, home, "192.0.2.1:80", "192.0.2.2:443"},
		Timeout: time.Minute, BuildTimeout: 5 * time.Minute, Cache: goCache(t)}
	res, err := run.Run(e.callCtx(t))
	if err != nil {
		t.Fatalf("%v\nbuild: %s", err, res.BuildOutput)
	}
	out := string(res.Stdout)
	for _, step := range []string{"write ~/.bashrc", "git hook", "rm -rf home", "run a shell", "cloud metadata", "dial out"} {
		if want := fmt.Sprintf("%-14s refused", step); !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, fmt.Sprintf("%-14s done", "write report")) {
		t.Errorf("the report was not written:\n%s", out)
	}
	if res.ExitCode != 0 {
		t.Errorf("exit %d, stderr %s", res.ExitCode, res.Stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "report.txt")); string(b) != "all good\n" {
		t.Errorf("report: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != "mine\n" {
		t.Errorf("the write outside the roots landed: ~/.bashrc is %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(hooks, "pre-commit")); string(b) != "orig\n" {
		t.Errorf("the hook changed: %q", b)
	}
	noSurvivors(t, &res.Confinement)
}

// TestRunGoBuildError: a program that does not compile gives a BuildError
// with the compiler's message.
func TestRunGoBuildError(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain in PATH")
	}
	e := setup(t)
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/bad\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte("package main\n\nfunc main() { undefinedThing() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := (&isolate.GoRun{Dir: mod, Cache: goCache(t), BuildTimeout: 5 * time.Minute}).Run(e.callCtx(t))
	var be *isolate.BuildError
	if !errorsAs(err, &be) || !strings.Contains(string(be.Output), "undefined: undefinedThing") {
		t.Fatalf("got %v", err)
	}
}

// goCache is the build cache the tests share: compiling the standard
// library once per machine instead of once per test. It lives in the
// temp directory, never in $HOME.
func goCache(t *testing.T) string {
	d := filepath.Join(os.TempDir(), "auditguard-isolate-test-gocache")
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}
