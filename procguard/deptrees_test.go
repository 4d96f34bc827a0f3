package procguard_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestModuleDownloadWithKeysInSandbox: go mod download of a module that
// ships TLS test keys (testdata/*.pem), from a module proxy the test
// serves on loopback, succeeds under the docs/agents.md policy in the
// sandbox: the keys land in the go profile's GOMODCACHE, a dependency
// tree.
func TestModuleDownloadWithKeysInSandbox(t *testing.T) {
	const mod, ver = "example.com/keys", "v1.0.0"
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for name, data := range map[string]string{
		"go.mod":               "module " + mod + "\n\ngo 1.22\n",
		"keys.go":              "package keys\n",
		"testdata/server.pem":  "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		"testdata/server.key":  "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n",
		"testdata/.env.sample": "TOKEN=x\n",
	} {
		w, err := zw.Create(mod + "@" + ver + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(data))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"/" + mod + "/@v/list":             []byte(ver + "\n"),
		"/" + mod + "/@v/" + ver + ".info": []byte(`{"Version":"` + ver + `","Time":"2024-01-01T00:00:00Z"}`),
		"/" + mod + "/@v/" + ver + ".mod":  []byte("module " + mod + "\n\ngo 1.22\n"),
		"/" + mod + "/@v/" + ver + ".zip":  zbuf.Bytes(),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)

	ctx, root := agentScopePort(t, port)
	env := []string{"GOPROXY=http://127.0.0.1:" + port, "GOSUMDB=off"}
	code, out := guarded(t, ctx, filepath.Join(root, "ws"), env, "go", "mod", "download", "-x", mod+"@"+ver)
	if code != 0 {
		t.Fatalf("go mod download: exit %d\n%s", code, out)
	}
	for _, name := range []string{"server.pem", "server.key", ".env.sample"} {
		path := filepath.Join(root, "cache", "go-mod", mod+"@"+ver, "testdata", name)
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if strings.Contains(out, "permission denied") {
		t.Errorf("a refusal on the way:\n%s", out)
	}
}
