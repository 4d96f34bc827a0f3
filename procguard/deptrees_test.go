package procguard_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestDependencyTreesInSandbox: under the docs/agents.md policy in the
// sandbox, python3 -m venv writes pip's CA bundle (a *.pem) inside the
// venv's site-packages, and a child may write credential names inside
// dependency trees; outside them, and for names that run later, it may
// not, and nothing is left on disk.
func TestDependencyTreesInSandbox(t *testing.T) {
	ctx, root := agentScope(t)
	ws := filepath.Join(root, "ws")
	if out, err := exec.Command("python3", "-c", "import venv, ensurepip").CombinedOutput(); err != nil {
		t.Logf("no venv or ensurepip module (%v: %s): venv step skipped", err, out)
	} else {
		if code, out := guarded(t, ctx, ws, nil, "python3", "-m", "venv", ".venv"); code != 0 {
			t.Fatalf("python3 -m venv .venv: exit %d\n%s", code, out)
		}
		pems, _ := filepath.Glob(filepath.Join(ws, ".venv/lib/python3*/site-packages/pip/_vendor/certifi/cacert.pem"))
		if len(pems) != 1 {
			t.Fatalf("pip's CA bundle: %v", pems)
		}
	}
	for _, c := range []struct {
		path    string
		allowed bool
	}{
		{"node_modules/pkg/test/key.pem", true},
		{"node_modules/pkg/.env", true},
		{"vendor/example.com/m/testdata/id_rsa", true},
		{"key.pem", false},
		{"app/config/.env", false},
		{"node_modules/pkg/.npmrc", false},
		{"node_modules/pkg/.bashrc", false},
	} {
		// A program that writes the file itself: the sandbox judges the
		// open, not a shell's redirection read before the start.
		writer := "import os, sys; os.makedirs(os.path.dirname(sys.argv[1]) or '.', exist_ok=True); open(sys.argv[1], 'w').write('x')"
		code, out := guarded(t, ctx, ws, nil, "python3", "-c", writer, c.path)
		_, err := os.Lstat(filepath.Join(ws, c.path))
		switch {
		case c.allowed && (code != 0 || err != nil):
			t.Errorf("%s: exit %d (%v)\n%s", c.path, code, err, out)
		case !c.allowed && (code == 0 || !os.IsNotExist(err)):
			t.Errorf("%s: exit %d, on disk: %v\n%s", c.path, code, err, out)
		}
	}
}
