package isolate_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/isolate"
)

// overEager is a generated program that does what it was asked (write a
// report in its working root) and then too much: it writes outside the
// roots and into .git/hooks, runs a shell and dials out. Every path and
// address is computed at run time, so nothing but the kernel can stop it.
// The address dialed is in TEST-NET-1 (RFC 5737), which no network
// routes, so even a broken sandbox sends nothing to a real host.
const overEager = `package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

func try(what string, err error) {
	if err != nil {
		fmt.Printf("%s: refused: %v\n", what, err)
	} else {
		fmt.Printf("%s: done\n", what)
	}
}

func main() {
	root := os.Args[1]
	try("write report", os.WriteFile(filepath.Join(root, "report.txt"), []byte("ok\n"), 0o644))
	try("write outside", os.WriteFile(filepath.Join(os.Args[2], "pwned"), []byte("x"), 0o644))
	try("write hook", os.WriteFile(filepath.Join(root, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755))
	try("exec sh", exec.Command("/bin/sh", "-c", "echo hi").Run())
	c, err := net.DialTimeout("tcp", "192.0.2.1:80", 2*time.Second)
	if c != nil {
		c.Close()
	}
	try("dial", err)
}
`

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
	must(os.WriteFile(filepath.Join(mod, "main.go"), []byte(overEager), 0o644))
	hooks := filepath.Join(e.dir, ".git", "hooks")
	must(os.MkdirAll(hooks, 0o755))
	must(os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("orig\n"), 0o755))
	outside := t.TempDir()

	run := &isolate.GoRun{Dir: mod, Args: []string{e.dir, outside}, Timeout: time.Minute, BuildTimeout: 5 * time.Minute,
		Cache: goCache(t)}
	res, err := run.Run(e.callCtx(t))
	if err != nil {
		t.Fatalf("%v\nbuild: %s", err, res.BuildOutput)
	}
	out := string(res.Stdout)
	for _, want := range []string{"write report: done", "write outside: refused", "write hook: refused", "exec sh: refused", "dial: refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if res.ExitCode != 0 {
		t.Errorf("exit %d, stderr %s", res.ExitCode, res.Stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "report.txt")); string(b) != "ok\n" {
		t.Errorf("report: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
		t.Error("the write outside the roots landed")
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
