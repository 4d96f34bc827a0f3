package procguard_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/audit"
)

// TestDownloadsThroughEgressProxy runs the real clients agents download
// with (curl, the go command, pip in a venv, git over https, npm) in the
// sandbox under the docs/agents.md policy plus a host rule for the local
// registry's name and ports, against local servers (registry_test.go).
// Each checks what the download left (bytes, the module cache, installed
// files, the clone's HEAD) and that it went through the egress proxy: the
// registry's name resolves only there, the proxy recorded the allowed
// request for the command, and the same client asking denied.test, which
// no rule allows, fails without the proxy ever looking that name up.
func TestDownloadsThroughEgressProxy(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // nothing below may read or write the real one
	reg := startRegistry(t)

	// proved checks, after a client's allowed and denied requests, that
	// both went through the proxy and the denied name was never resolved.
	proved := func(t *testing.T, rec *audit.Recorder, port int, what string) {
		t.Helper()
		allowed, denied, all := proxyRecords(rec, port)
		if !allowed || !denied {
			t.Errorf("%s: proxy records: allowed request to %s %v, refused one to %s %v\n%s", what, regHost, allowed, deniedHost, denied, strings.Join(all, "\n"))
		}
		if reg.res.wasAsked(deniedHost) {
			t.Errorf("%s: the proxy looked up %s, which no rule allows", what, deniedHost)
		}
	}

	t.Run("curl", func(t *testing.T) {
		if _, err := exec.LookPath("curl"); err != nil {
			t.Skip("curl is not installed")
		}
		ctx, root, rec := downloadScope(t, reg, nil, nil)
		ws := filepath.Join(root, "ws")
		httpURL := "http://" + regHost + ":" + strconv.Itoa(reg.httpPort) + "/files/blob"
		for _, c := range []struct{ out, url string }{{"https.bin", reg.base(regHost) + "/files/blob"}, {"http.bin", httpURL}} {
			code, out := guarded(t, ctx, ws, nil, "curl", "-s", "-S", "-f", "--max-time", "30", "--cacert", reg.caFile, "-o", c.out, c.url)
			if code != 0 {
				t.Fatalf("curl %s: exit %d\n%s", c.url, code, out)
			}
			got, err := os.ReadFile(filepath.Join(ws, c.out))
			if err != nil || !bytes.Equal(got, reg.blob) {
				t.Errorf("curl %s: %d bytes received, want %d (%v)", c.url, len(got), len(reg.blob), err)
			}
		}
		code, out := guarded(t, ctx, ws, nil, "curl", "-s", "-S", "-f", "--max-time", "30", "--cacert", reg.caFile, "-o", "denied.bin", reg.base(deniedHost)+"/files/blob")
		if code == 0 || !refusedByProxy(out) {
			t.Errorf("curl of %s: exit %d, want a failure with the proxy's 403\n%s", deniedHost, code, out)
		}
		if _, err := os.Stat(filepath.Join(ws, "denied.bin")); err == nil {
			t.Error("curl wrote what the denied host sent")
		}
		proved(t, rec, reg.tlsPort, "curl https")
		if allowed, _, _ := proxyRecords(rec, reg.httpPort); !allowed {
			t.Error("curl http: no proxy record of the allowed request")
		}
	})

	t.Run("go", func(t *testing.T) {
		if _, err := exec.LookPath("go"); err != nil {
			t.Skip("go is not installed")
		}
		ctx, root, rec := downloadScope(t, reg, []string{"SSL_CERT_FILE"}, nil)
		app := filepath.Join(root, "ws", "app")
		writeFiles(t, app, map[string]string{
			"go.mod":  "module example.com/app\n\ngo 1.22\n",
			"main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"" + goMod + "\"\n)\n\nfunc main() { fmt.Println(\"uses\", tlsfix.Name()) }\n",
		})
		env := []string{"GOPROXY=" + reg.base(regHost) + "/mod", "GOSUMDB=" + reg.gosumdb, "SSL_CERT_FILE=" + reg.caFile}
		for _, argv := range [][]string{
			{"go", "mod", "download", goMod + "@" + goModVer},
			{"go", "get", goMod + "@" + goModVer},
			{"go", "build", "-o", "bin/app", "."},
		} {
			if code, out := guarded(t, ctx, app, env, argv...); code != 0 {
				t.Fatalf("%s: exit %d\n%s", strings.Join(argv, " "), code, out)
			}
		}
		for _, name := range []string{"test/server.pem", "test/client.pem", "test/server.key", "tlsfix.go"} {
			if _, err := os.Stat(filepath.Join(root, "cache", "go-mod", goMod+"@"+goModVer, name)); err != nil {
				t.Errorf("module cache: %v", err)
			}
		}
		if code, out := guarded(t, ctx, app, nil, "./bin/app"); code != 0 || out != "uses tlsfix\n" {
			t.Errorf("the built program: exit %d %q", code, out)
		}
		denied := []string{"GOPROXY=" + reg.base(deniedHost) + "/mod", "GOSUMDB=off", "SSL_CERT_FILE=" + reg.caFile}
		if code, out := guarded(t, ctx, app, denied, "go", "mod", "download", "example.com/other@v1.0.0"); code == 0 || !refusedByProxy(out) {
			t.Errorf("go mod download from %s: exit %d, want a failure with the proxy's 403\n%s", deniedHost, code, out)
		}
		if !reg.hit(regHost, "/mod/"+goMod+"/@v/"+goModVer+".zip") {
			t.Error("the module proxy served no zip")
		}
		if !reg.hit(regHost, "/sumdb/lookup/"+goMod+"@"+goModVer) {
			t.Error("the checksum database was not asked")
		}
		proved(t, rec, reg.tlsPort, "go")
	})

	t.Run("pip", func(t *testing.T) {
		ctx, root, rec := downloadScope(t, reg, []string{"PIP_INDEX_URL", "PIP_CERT"}, nil)
		ws := filepath.Join(root, "ws")
		// The python3 the policy's PATH finds, which may not be the host's.
		if code, out := guarded(t, ctx, ws, nil, "python3", "-c", "import venv, ensurepip"); code != 0 {
			t.Skipf("python3 (in the policy's PATH) has no venv or ensurepip module: exit %d %s", code, out)
		}
		if code, out := guarded(t, ctx, ws, nil, "python3", "-m", "venv", ".venv"); code != 0 {
			t.Fatalf("python3 -m venv .venv: exit %d\n%s", code, out)
		}
		env := []string{"PIP_INDEX_URL=" + reg.base(regHost) + "/simple/", "PIP_CERT=" + reg.caFile}
		code, out := guarded(t, ctx, ws, env, ".venv/bin/python", "-m", "pip", "install", "--disable-pip-version-check", "--no-compile", pyPkg)
		if code != 0 || !strings.Contains(out, "Successfully installed "+pyPkg+"-"+pyVer) {
			t.Fatalf("pip install: exit %d\n%s", code, out)
		}
		site, _ := filepath.Glob(filepath.Join(ws, ".venv/lib/python3*/site-packages", pyPkg))
		if len(site) != 1 {
			t.Fatalf("the package is not in the venv: %v", site)
		}
		if _, err := os.Stat(filepath.Join(site[0], "certs", "test.pem")); err != nil {
			t.Errorf("the package's test certificate: %v", err)
		}
		if code, out := guarded(t, ctx, ws, nil, ".venv/bin/python", "-c", "import "+pyPkg+"; print("+pyPkg+".GREETING)"); code != 0 || out != "hello from agentdemo\n" {
			t.Errorf("import: exit %d %q", code, out)
		}
		denied := []string{"PIP_INDEX_URL=" + reg.base(deniedHost) + "/simple/", "PIP_CERT=" + reg.caFile}
		code, out = guarded(t, ctx, ws, denied, ".venv/bin/python", "-m", "pip", "install", "--disable-pip-version-check", "--retries", "1", "--timeout", "10", "otherpkg")
		if code == 0 || !refusedByProxy(out) {
			t.Errorf("pip install from %s: exit %d, want a failure with the proxy's 403\n%s", deniedHost, code, out)
		}
		proved(t, rec, reg.tlsPort, "pip")
	})

	t.Run("git", func(t *testing.T) {
		ctx, root, rec := downloadScope(t, reg, []string{"GIT_SSL_CAINFO"}, nil)
		ws := filepath.Join(root, "ws")
		env := append([]string{"GIT_SSL_CAINFO=" + reg.caFile}, identity...)
		if code, out := guarded(t, ctx, ws, env, "git", "clone", "-q", reg.base(regHost)+"/git/repo.git", "viaHTTPS"); code != 0 {
			t.Fatalf("git clone over https: exit %d\n%s", code, out)
		}
		code, out := guarded(t, ctx, filepath.Join(ws, "viaHTTPS"), nil, "git", "rev-parse", "HEAD")
		if code != 0 || strings.TrimSpace(out) != reg.gitHead {
			t.Errorf("the clone's HEAD: exit %d %q, want %s", code, out, reg.gitHead)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "viaHTTPS", "src", "lib.go")); err != nil || !strings.Contains(string(b), "N = 2") {
			t.Errorf("the clone's checkout: %q %v", b, err)
		}
		if _, err := os.Stat(filepath.Join(ws, "viaHTTPS", ".git", "hooks")); !os.IsNotExist(err) {
			t.Errorf("a hooks directory in the clone: %v", err)
		}
		code, out = guarded(t, ctx, ws, env, "git", "clone", "-q", reg.base(deniedHost)+"/git/repo.git", "denied")
		if code == 0 || !refusedByProxy(out) {
			t.Errorf("git clone from %s: exit %d, want a failure with the proxy's 403\n%s", deniedHost, code, out)
		}
		proved(t, rec, reg.tlsPort, "git")
	})

	t.Run("npm", func(t *testing.T) {
		for _, p := range []string{"npm", "node"} {
			if _, err := exec.LookPath(p); err != nil {
				t.Skipf("%s is not installed", p)
			}
		}
		// npm is not in the page's use line: the node profile is added.
		ctx, root, rec := downloadScope(t, reg, []string{"npm_config_registry", "npm_config_cafile"}, []string{"node"})
		proj := filepath.Join(root, "ws", "web")
		writeFiles(t, proj, map[string]string{"package.json": `{"name":"web","version":"0.0.0","private":true}` + "\n"})
		env := []string{"npm_config_registry=" + reg.base(regHost) + "/npm/", "npm_config_cafile=" + reg.caFile}
		code, out := guarded(t, ctx, proj, env, "npm", "install", "--no-audit", "--no-fund", npmPkg)
		if code != 0 {
			t.Fatalf("npm install: exit %d\n%s", code, out)
		}
		for _, name := range []string{"index.js", "test/key.pem", "package.json"} {
			if _, err := os.Stat(filepath.Join(proj, "node_modules", npmPkg, name)); err != nil {
				t.Errorf("node_modules: %v", err)
			}
		}
		if code, out := guarded(t, ctx, proj, nil, "node", "-e", "console.log(require('"+npmPkg+"').greeting)"); code != 0 || out != "hello from "+npmPkg+"\n" {
			t.Errorf("require: exit %d %q", code, out)
		}
		denied := []string{"npm_config_registry=" + reg.base(deniedHost) + "/npm/", "npm_config_cafile=" + reg.caFile}
		code, out = guarded(t, ctx, proj, denied, "npm", "install", "--no-audit", "--no-fund", "--fetch-retries=0", "otherpkg")
		if code == 0 || !refusedByProxy(out) {
			t.Errorf("npm install from %s: exit %d, want a failure with the proxy's 403\n%s", deniedHost, code, out)
		}
		proved(t, rec, reg.tlsPort, "npm")
	})
}

// refusedByProxy reports whether a client's output shows the proxy's
// refusal (403 Forbidden), however the client words it.
func refusedByProxy(out string) bool {
	return strings.Contains(out, "403") || strings.Contains(out, "Forbidden")
}

// writeFiles writes files (relative names) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
}
