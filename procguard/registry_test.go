package procguard_test

// The local registries the download tests serve: one TLS server and one
// plain HTTP server on loopback, both answering as "registry.test", with
// a Go module proxy, a pip simple index, git over smart HTTP (git
// http-backend through net/http/cgi), an npm registry and plain files.
// The name resolves only in the host's egress proxy (testResolver in
// netguard.DefaultResolver); inside the sandbox nothing resolves it, so a
// client that reaches it went through the proxy. "denied.test" resolves
// the same way but no rule allows it: the proxy must refuse it without a
// lookup.

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/netguard"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
)

const (
	regHost    = "registry.test" // allowed by the test's host rule
	deniedHost = "denied.test"   // resolvable by testResolver, allowed by no rule

	goMod, goModVer = "example.com/tlsfix", "v1.0.0" // ships test/*.pem
	pyPkg, pyVer    = "agentdemo", "1.0"
	npmPkg, npmVer  = "agentdemo-js", "1.0.0"
)

// testResolver answers regHost and deniedHost with 127.0.0.1 and every
// other name with "not found" (nothing leaves the machine), and keeps the
// names it was asked.
type testResolver struct {
	mu    sync.Mutex
	asked []string
}

func (r *testResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.asked = append(r.asked, host)
	r.mu.Unlock()
	if (host == regHost || host == deniedHost) && network != "ip6" {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
}

func (r *testResolver) wasAsked(host string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.asked, host)
}

// registry is the local servers and what they serve.
type registry struct {
	tlsPort, httpPort int
	caFile            string // the test CA, outside every write root
	res               *testResolver
	blob              []byte // /files/blob, for curl
	gitRoot           string // GIT_PROJECT_ROOT: repo.git
	gitHead           string // repo.git's HEAD commit
	gosumdb           string // GOSUMDB for the checksum database under /sumdb

	mu   sync.Mutex
	hits []string // "host path" of every request served
}

// base is the https URL of the TLS server under host.
func (r *registry) base(host string) string { return "https://" + host + ":" + strconv.Itoa(r.tlsPort) }

// hit reports whether a request for a path with prefix came to host.
func (r *registry) hit(host, prefix string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.hits {
		hh, p, _ := strings.Cut(h, " ")
		if strings.HasPrefix(hh, host+":") && strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// startRegistry builds the CA, the packages and the servers, and puts
// testResolver in netguard.DefaultResolver for the test.
func startRegistry(t *testing.T) *registry {
	t.Helper()
	// The docs/agents.md policy's profiles need their main programs.
	for _, p := range []string{"git", "go", "python3", "make", "sh"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed: the docs/agents.md policy needs it", p)
		}
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg := &registry{res: &testResolver{}}
	old := netguard.DefaultResolver
	netguard.DefaultResolver = reg.res
	t.Cleanup(func() { netguard.DefaultResolver = old })

	// The CA and the server's certificate (registry.test, denied.test,
	// 127.0.0.1).
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "auditguard test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: regHost},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{regHost, deniedHost}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	reg.caFile = filepath.Join(dir, "test-ca.pem")
	if err := os.WriteFile(reg.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	leaf := tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}

	// Listen first: the packages name the port.
	tlsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg.tlsPort = tlsLn.Addr().(*net.TCPAddr).Port
	reg.httpPort = httpLn.Addr().(*net.TCPAddr).Port

	files := map[string][]byte{}
	reg.addGoModule(t, files)
	reg.addPyPackage(t, files)
	reg.addNpmPackage(t, files)
	reg.blob = bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	files["/files/blob"] = reg.blob
	reg.gitRoot = filepath.Join(dir, "git")
	reg.gitHead = makeGitRepo(t, filepath.Join(reg.gitRoot, "repo.git"), true)

	backend := filepath.Join(gitExecPath(t), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("no git-http-backend: %v", err)
	}
	gitCGI := &cgi.Handler{Path: backend, Root: "/git", Dir: reg.gitRoot,
		Env:    []string{"GIT_PROJECT_ROOT=" + reg.gitRoot, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + dir},
		Logger: nil, Stderr: io.Discard}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg.mu.Lock()
		reg.hits = append(reg.hits, r.Host+" "+r.URL.Path)
		reg.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/git/") {
			gitCGI.ServeHTTP(w, r)
			return
		}
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		switch {
		case strings.HasPrefix(r.URL.Path, "/simple/"):
			w.Header().Set("Content-Type", "text/html")
		case strings.HasPrefix(r.URL.Path, "/npm/") && !strings.HasSuffix(r.URL.Path, ".tgz"):
			w.Header().Set("Content-Type", "application/json")
		default:
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		w.Write(b)
	})
	ts := httptest.NewUnstartedServer(handler)
	ts.Listener.Close()
	ts.Listener = tlsLn
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	ts.Config.ErrorLog = nil
	ts.StartTLS()
	t.Cleanup(ts.Close)
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(httpLn)
	t.Cleanup(func() { hs.Close() })
	return reg
}

func gitExecPath(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("git --exec-path: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// hostGit runs git on the host (raw), with no user or system
// configuration and no template.
func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TEMPLATE_DIR=")
	cmd.Env = append(cmd.Env, identity...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// makeGitRepo makes a repository with two commits at path (bare: served
// by http-backend) and returns its HEAD.
func makeGitRepo(t *testing.T, path string, bare bool) string {
	t.Helper()
	work := path
	if bare {
		work = path + ".work"
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	hostGit(t, work, "init", "-q", "-b", "main")
	for i, f := range []struct{ name, data string }{{"README.md", "# demo\n"}, {"src/lib.go", "package src\n\nconst N = 2\n"}} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(work, f.name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, f.name), []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
		hostGit(t, work, "add", ".")
		hostGit(t, work, "commit", "-q", "-m", fmt.Sprintf("commit %d", i+1))
	}
	if bare {
		hostGit(t, filepath.Dir(path), "clone", "-q", "--bare", work, path)
	}
	return hostGit(t, work, "rev-parse", "HEAD")
}

// addGoModule serves goMod@goModVer under /mod (GOPROXY protocol): its zip
// ships test/*.pem, TLS fixtures as many modules do.
func (r *registry) addGoModule(t *testing.T, files map[string][]byte) {
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for _, f := range []struct{ name, data string }{
		{"go.mod", "module " + goMod + "\n\ngo 1.22\n"},
		{"tlsfix.go", "package tlsfix\n\n// Name names the module.\nfunc Name() string { return \"tlsfix\" }\n"},
		{"test/server.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
		{"test/client.pem", "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"},
		{"test/server.key", "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"},
	} {
		w, err := zw.Create(goMod + "@" + goModVer + "/" + f.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.data))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := "/mod/" + goMod + "/@v/"
	modFile := []byte("module " + goMod + "\n\ngo 1.22\n")
	files[p+"list"] = []byte(goModVer + "\n")
	files[p+goModVer+".info"] = []byte(`{"Version":"` + goModVer + `","Time":"2024-01-01T00:00:00Z"}`)
	files[p+goModVer+".mod"] = modFile
	files[p+goModVer+".zip"] = zbuf.Bytes()
	r.gosumdb = addSumDB(t, files, r.base(regHost)+"/sumdb", zbuf.Bytes(), modFile)
}

// addSumDB serves, under /sumdb, a checksum database (the go command's
// GOSUMDB protocol, golang.org/x/mod/sumdb) holding one record, the
// go.sum lines of goMod@goModVer: a signed tree of size 1, its lookup and
// its tiles. It returns the GOSUMDB value naming its key and URL.
func addSumDB(t *testing.T, files map[string][]byte, url string, modZip, modFile []byte) string {
	t.Helper()
	// dirhash.Hash1: sha256 of the sorted "sha256hex  name" lines.
	hash1 := func(names []string, data func(string) []byte) string {
		slices.Sort(names)
		h := sha256.New()
		for _, n := range names {
			fmt.Fprintf(h, "%x  %s\n", sha256.Sum256(data(n)), n)
		}
		return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil))
	}
	zr, err := zip.NewReader(bytes.NewReader(modZip), int64(len(modZip)))
	if err != nil {
		t.Fatal(err)
	}
	zfiles := map[string][]byte{}
	var names []string
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		zfiles[f.Name] = b
		names = append(names, f.Name)
	}
	record := fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", goMod, goModVer, hash1(names, func(n string) []byte { return zfiles[n] }),
		goMod, goModVer, hash1([]string{"go.mod"}, func(string) []byte { return modFile }))
	// The tree of one record: its hash is the record's leaf hash.
	leaf := sha256.Sum256(append([]byte{0}, record...))
	const name = "sumdb.registry.test"
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key := append([]byte{1}, pub...) // algorithm 1: Ed25519
	kh := sha256.Sum256(append([]byte(name+"\n"), key...))
	text := fmt.Sprintf("go.sum database tree\n1\n%s\n", base64.StdEncoding.EncodeToString(leaf[:]))
	sig := append(append([]byte(nil), kh[:4]...), ed25519.Sign(priv, []byte(text))...)
	signed := []byte(text + "\n— " + name + " " + base64.StdEncoding.EncodeToString(sig) + "\n")
	files["/sumdb/latest"] = signed
	files["/sumdb/lookup/"+goMod+"@"+goModVer] = append([]byte("0\n"+record+"\n"), signed...)
	files["/sumdb/tile/8/0/000.p/1"] = leaf[:]
	files["/sumdb/tile/8/data/000.p/1"] = []byte(record + "\n")
	return fmt.Sprintf("%s+%08x+%s %s", name, kh[:4], base64.StdEncoding.EncodeToString(key), url)
}

// addPyPackage serves a wheel of pyPkg through a simple index
// (/simple/agentdemo/, PEP 503) that links /files/.
func (r *registry) addPyPackage(t *testing.T, files map[string][]byte) {
	wheel := buildWheel(t, pyPkg, pyVer, map[string]string{
		pyPkg + "/__init__.py":    "GREETING = \"hello from agentdemo\"\n",
		pyPkg + "/certs/test.pem": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
	})
	whl := pyPkg + "-" + pyVer + "-py3-none-any.whl"
	sum := sha256.Sum256(wheel)
	files["/files/"+whl] = wheel
	files["/simple/"+pyPkg+"/"] = []byte(fmt.Sprintf("<!DOCTYPE html>\n<html><body>\n<a href=\"/files/%s#sha256=%s\">%s</a>\n</body></html>\n", whl, hex.EncodeToString(sum[:]), whl))
	files["/simple/"] = []byte(fmt.Sprintf("<!DOCTYPE html>\n<html><body><a href=\"/simple/%s/\">%s</a></body></html>\n", pyPkg, pyPkg))
}

// buildWheel returns a pure-Python wheel of name and version holding files
// (path in the wheel: contents), with its METADATA, WHEEL and RECORD.
func buildWheel(t *testing.T, name, version string, files map[string]string) []byte {
	t.Helper()
	distInfo := name + "-" + version + ".dist-info/"
	type entry struct{ name, data string }
	var entries []entry
	for n, d := range files {
		entries = append(entries, entry{n, d})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	entries = append(entries,
		entry{distInfo + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\nSummary: a test package\n"},
		entry{distInfo + "WHEEL", "Wheel-Version: 1.0\nGenerator: auditguard-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"})
	var record strings.Builder
	for _, e := range entries {
		sum := sha256.Sum256([]byte(e.data))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", e.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(e.data))
	}
	record.WriteString(distInfo + "RECORD,,\n")
	entries = append(entries, entry{distInfo + "RECORD", record.String()})
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for _, e := range entries {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e.data))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return zbuf.Bytes()
}

// addNpmPackage serves npmPkg under /npm (the registry's packument and
// tarball); the tarball ships test/key.pem.
func (r *registry) addNpmPackage(t *testing.T, files map[string][]byte) {
	var tbuf bytes.Buffer
	gz := gzip.NewWriter(&tbuf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, data string }{
		{"package/package.json", `{"name":"` + npmPkg + `","version":"` + npmVer + `","main":"index.js"}` + "\n"},
		{"package/index.js", "module.exports = { greeting: 'hello from " + npmPkg + "' };\n"},
		{"package/test/key.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
	} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Typeflag: tar.TypeReg})
		tw.Write([]byte(f.data))
	}
	tw.Close()
	gz.Close()
	tgz := tbuf.Bytes()
	s1 := sha1.Sum(tgz)
	s512 := sha512.Sum512(tgz)
	tarPath := "/npm/" + npmPkg + "/-/" + npmPkg + "-" + npmVer + ".tgz"
	files[tarPath] = tgz
	files["/npm/"+npmPkg] = []byte(fmt.Sprintf(`{"name":%q,"dist-tags":{"latest":%q},"versions":{%q:{"name":%q,"version":%q,"main":"index.js","dist":{"tarball":%q,"shasum":%q,"integrity":%q}}}}`,
		npmPkg, npmVer, npmVer, npmPkg, npmVer, r.base(regHost)+tarPath, hex.EncodeToString(s1[:]), "sha512-"+base64.StdEncoding.EncodeToString(s512[:])))
}

// downloadPolicy is the docs/agents.md policy for the twin root, with
// its loopback rule on the registry's ports, a host rule for
// registry.test on them (what a host writes for a registry), the
// variables named that the clients read their CA and registry from, and
// extra profiles.
func downloadPolicy(t *testing.T, root string, reg *registry, envNames, extraUse []string) string {
	t.Helper()
	ports := fmt.Sprintf("%d, %d", reg.tlsPort, reg.httpPort)
	text := agentPolicy(t, root, ports)
	if len(extraUse) > 0 {
		use := regexp.MustCompile(`(?m)^(use\s*=\s*\[.*)\]`)
		if !use.MatchString(text) {
			t.Fatal("the policy has no use line")
		}
		text = use.ReplaceAllString(text, `${1}, "`+strings.Join(extraUse, `", "`)+`"]`)
	}
	if len(envNames) > 0 {
		if !strings.Contains(text, "\n[exec]\n") {
			t.Fatal("the policy has no [exec] table")
		}
		text = strings.Replace(text, "\n[exec]\n", "\n[exec]\nenv = [\""+strings.Join(envNames, `", "`)+"\"]\n", 1)
	}
	return text + fmt.Sprintf("\n[[net.allow]]\nhost  = %q\nports = [%s]\n", regHost, ports)
}

// downloadScope enters a guard built from downloadPolicy for a fresh twin
// root (ws, home, tmp, cache), recording every decision.
func downloadScope(t *testing.T, reg *registry, envNames, extraUse []string) (context.Context, string, *audit.Recorder) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, rec, _ := downloadGuard(t, root, reg, envNames, extraUse)
	return ctx, root, rec
}

// downloadGuard makes root's twin directories and enters a guard built
// from downloadPolicy for root; it returns the policy too.
func downloadGuard(t *testing.T, root string, reg *registry, envNames, extraUse []string) (context.Context, *audit.Recorder, *policy.Policy) {
	t.Helper()
	makeTwinDirs(t, root)
	text := downloadPolicy(t, root, reg, envNames, extraUse)
	polFile := filepath.Join(root, "agent.toml")
	if err := os.WriteFile(polFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := policyfile.LoadFile(polFile)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if f.Policy.Exec().LandlockExecAny {
		t.Fatal("the policy must keep exec confinement on")
	}
	rec := audit.NewRecorder()
	g, err := audit.New(f.Policy, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		audit.WithRecorder(rec), audit.WithLogAllows())
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release() })
	return ctx, rec, f.Policy
}

func makeTwinDirs(t *testing.T, root string) {
	t.Helper()
	for _, sub := range []string{"ws", "home", "tmp", "cache"} {
		if err := os.MkdirAll(filepath.Join(root, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The module cache is read-only (go makes it so): make it removable.
	t.Cleanup(func() {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
}

// proxyRecords reports whether rec holds an allowed request to
// registry.test:port made through the egress proxy of a sandboxed command,
// and a refused one to deniedHost; all lists rec's net records.
func proxyRecords(rec *audit.Recorder, port int) (allowed, denied bool, all []string) {
	for _, r := range rec.Records() {
		if r.Protocol != audit.Net {
			continue
		}
		all = append(all, fmt.Sprintf("%s %s %q %v", r.Op, r.Target, r.Detail, r.Outcome))
		if !strings.Contains(r.Detail, "via proxy") || !strings.Contains(r.Detail, "sandbox of") {
			continue
		}
		switch {
		case r.Outcome == audit.Allowed && r.Target == regHost+":"+strconv.Itoa(port):
			allowed = true
		case r.Outcome != audit.Allowed && strings.HasPrefix(r.Target, deniedHost+":"):
			denied = true
		}
	}
	return allowed, denied, all
}

// rawProxy is what the raw twin uses instead of the egress proxy: a plain
// HTTP proxy (CONNECT and absolute URIs) that resolves registry.test to
// loopback, as a DNS entry would, and refuses every other name. No guard.
func rawProxy(t *testing.T) string {
	t.Helper()
	dial := func(hostport string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(hostport)
		if err != nil || host != regHost {
			return nil, fmt.Errorf("raw proxy: %s is not the registry", hostport)
		}
		return net.DialTimeout("tcp", "127.0.0.1:"+port, 10*time.Second)
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(addr) }}
	t.Cleanup(tr.CloseIdleConnections)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			up, err := dial(r.Host)
			if err != nil {
				http.Error(w, err.Error(), http.StatusForbidden)
				return
			}
			defer up.Close()
			c, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
			done := make(chan struct{})
			go func() { io.Copy(up, brw); up.(*net.TCPConn).CloseWrite(); close(done) }()
			io.Copy(c, up)
			<-done
			return
		}
		r.RequestURI = ""
		resp, err := tr.RoundTrip(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, bufio.NewReader(resp.Body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
