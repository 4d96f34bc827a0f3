package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGocode: the generated-code scene builds the over-eager program in
// the sandbox, runs it, and every step too far is refused by the kernel.
// The program dials TEST-NET-1 addresses (RFC 5737), which nothing routes,
// so a broken sandbox still reaches no real host.
func TestGocode(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain in PATH")
	}
	// The build cache the isolate tests share, in the temp directory.
	cache := filepath.Join(os.TempDir(), "auditguard-isolate-test-gocache")
	r := cli(t, "gocode", "--cache", cache, "--dial", "192.0.2.1:80,192.0.2.2:443")
	if r.code != 0 {
		if r.code == 1 && len(r.stdout) == 0 {
			t.Skipf("cannot build or sandbox here: %v", r)
		}
		t.Fatalf("%v", r)
	}
	wantAll(t, "gocode", r.stdout,
		"program> write report   done",
		"program> write ~/.bashrc refused",
		"program> rm -rf home    refused",
		"program> cloud metadata refused",
		"program> dial out       refused",
		"ok   ~/.bashrc is unchanged",
		"ok   .git/hooks/pre-commit is unchanged",
		"confinement: namespaces=",
	)
}
