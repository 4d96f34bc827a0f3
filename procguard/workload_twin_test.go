package procguard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/procguard"
)

// twinStep is one command of TestAgentWorkloadTwin, run in both twins, or
// files the agent writes (with its file tool) before the next command.
type twinStep struct {
	argv  []string
	dir   string            // relative to the workspace; "" is the workspace
	env   []string          // Cmd.Env, and added to the raw twin's environment
	write map[string]string // files to write instead of running a command
	need  string            // "python-venv": skipped without python3's venv and ensurepip
}

// twinLaterSteps is the room for the three steps issue 25 still asks of
// this test, which need exec-time judgement of scripts (a change under way
// in procguard/sandbox and policy/exec*). Another engineer adds them here,
// in this order; they run after twinSteps in both twins and their files
// are compared with the rest (TestAgentWorkload runs the same kinds of
// step in its own workspace since commit 6093461):
//
//	| step            | command                                                                  |
//	| --------------- | ------------------------------------------------------------------------ |
//	| a heredoc       | sh -c "cat > NOTES.md <<'EOF' ... EOF"                                    |
//	| a build script  | sh ./build.sh (functions, a for loop over *.go, set -eu)                 |
//	| git bisect run  | git bisect start HEAD HEAD~1 && git bisect run ./check.sh (in a clone)   |
var twinLaterSteps = []twinStep{
	// (empty: see the table above)
}

// twinSteps are the download and repository steps: a venv, pip installs
// of a local package and of one from the local index (through the egress
// proxy), a module download that ships .pem test files from the local
// module proxy and a build with it, git clones from a local repository
// (path and file://) and from the local https git server.
func twinSteps(t *testing.T, reg *registry, src string) []twinStep {
	pyEnv := []string{"PIP_INDEX_URL=" + reg.base(regHost) + "/simple/", "PIP_CERT=" + reg.caFile, "PYTHONDONTWRITEBYTECODE=1"}
	goEnv := []string{"GOPROXY=" + reg.base(regHost) + "/mod", "GOSUMDB=" + reg.gosumdb, "SSL_CERT_FILE=" + reg.caFile}
	gitEnv := append([]string{"GIT_SSL_CAINFO=" + reg.caFile}, identity...)
	pip := []string{".venv/bin/python", "-m", "pip", "--disable-pip-version-check"}
	return []twinStep{
		{write: map[string]string{
			// A local package: a wheel the agent has in its workspace
			// (building one from source needs the wheel package, which
			// a fresh venv lacks on some Pythons).
			"dist/localpkg-0.1-py3-none-any.whl": string(buildWheel(t, "localpkg", "0.1", map[string]string{
				"localpkg/__init__.py":         "def shout(s):\n    return s.upper() + \"!\"\n",
				"localpkg/testdata/client.pem": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
			})),
			"app/go.mod":  "module example.com/app\n\ngo 1.22\n",
			"app/main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"" + goMod + "\"\n)\n\nfunc main() { fmt.Println(\"uses\", tlsfix.Name()) }\n",
		}},
		{argv: []string{"python3", "-m", "venv", ".venv"}, need: "python-venv"},
		{argv: append(append([]string(nil), pip...), "install", "--no-compile", "--no-index", "./dist/localpkg-0.1-py3-none-any.whl"), env: pyEnv, need: "python-venv"},
		{argv: append(append([]string(nil), pip...), "install", "--no-compile", pyPkg), env: pyEnv, need: "python-venv"},
		{argv: []string{".venv/bin/python", "-c", "import agentdemo, localpkg; print(localpkg.shout(agentdemo.GREETING))"}, env: pyEnv, need: "python-venv"},
		{argv: append(append([]string(nil), pip...), "list", "--format=freeze"), env: pyEnv, need: "python-venv"},
		{argv: []string{"go", "mod", "download", goMod + "@" + goModVer}, dir: "app", env: goEnv},
		{argv: []string{"go", "get", goMod + "@" + goModVer}, dir: "app", env: goEnv},
		{argv: []string{"go", "mod", "verify"}, dir: "app", env: goEnv},
		{argv: []string{"go", "build", "-o", "bin/app", "."}, dir: "app", env: goEnv},
		{argv: []string{"./bin/app"}, dir: "app"},
		{argv: []string{"git", "clone", "-q", src, "cloned"}, env: gitEnv},
		{argv: []string{"git", "clone", "-q", "file://" + src, "clonedURL"}, env: gitEnv},
		{argv: []string{"git", "-C", "cloned", "log", "--format=%H %an %s"}, env: gitEnv},
		{argv: []string{"git", "clone", "-q", reg.base(regHost) + "/git/repo.git", "viaHTTPS"}, env: gitEnv},
		{argv: []string{"git", "-C", "viaHTTPS", "log", "--format=%H %an %s"}, env: gitEnv},
		{argv: []string{"git", "-C", "viaHTTPS", "status", "--short", "--branch"}, env: gitEnv},
	}
}

// TestAgentWorkloadTwin is TestAgentWorkload's sibling for downloads and
// repositories: each step runs raw (os/exec, no guard; a plain proxy in
// the test stands for DNS) in one workspace and through procguard in the
// sandbox, under the docs/agents.md policy plus the registry's host rule
// and the variables the clients read their registry and CA from, in a
// twin; exit codes, output (the twin's path normalized) and the resulting
// files (the workspace and the downloaded module) must be the same.
func TestAgentWorkloadTwin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and downloads in two workspaces (about a minute); skipped with -short")
	}
	for _, p := range []string{"git", "go", "sh"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed: the workload needs it", p)
		}
	}
	t.Setenv("HOME", t.TempDir()) // nothing below may read or write the real one
	reg := startRegistry(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	twin := map[string]string{"raw": filepath.Join(root, "raw"), "guarded": filepath.Join(root, "guarded")}
	makeTwinDirs(t, twin["raw"])
	ctx, rec, pol := downloadGuard(t, twin["guarded"], reg, []string{"SSL_CERT_FILE", "GIT_SSL_CAINFO", "PIP_INDEX_URL", "PIP_CERT"}, nil)
	src := filepath.Join(root, "src")
	srcHead := makeGitRepo(t, src, false)

	// The python3 both twins run is the one the policy's PATH finds.
	venvOK := exec.Command(lookPathIn(pol.ExecPath(), "python3"), "-c", "import venv, ensurepip").Run() == nil
	// The raw twin's environment is what the guarded one gets from the
	// policy, with its own directories (but the shared go build cache, as
	// in TestAgentWorkload), and the raw proxy for registry.test.
	toRaw := strings.NewReplacer(twin["guarded"], twin["raw"])
	proxy := rawProxy(t)
	rawEnv := []string{"PATH=" + strings.Join(pol.ExecPath(), ":"), "HOME=" + twin["raw"] + "/home",
		"TMPDIR=" + twin["raw"] + "/tmp", "LANG=C.UTF-8", "TERM=dumb",
		"HTTP_PROXY=" + proxy, "http_proxy=" + proxy, "HTTPS_PROXY=" + proxy, "https_proxy=" + proxy}
	for _, kv := range pol.Exec().SetEnv {
		if !strings.HasPrefix(kv, "GOCACHE=") {
			kv = toRaw.Replace(kv)
		}
		rawEnv = append(rawEnv, kv)
	}

	timing := regexp.MustCompile(`\d+\.\d+s`)
	norm := func(s, dir string) string {
		return timing.ReplaceAllString(strings.ReplaceAll(s, dir, "$TWIN"), "N.NNs")
	}
	steps := append(twinSteps(t, reg, src), twinLaterSteps...)
	ran := 0
	for i, s := range steps {
		if s.write != nil {
			for _, d := range twin {
				writeFiles(t, filepath.Join(d, "ws"), s.write)
			}
			continue
		}
		name := fmt.Sprintf("%02d %s", i, strings.Join(s.argv, " "))
		if s.need == "python-venv" && !venvOK {
			t.Logf("%s: skipped: python3 with the venv and ensurepip modules is not installed", name)
			continue
		}
		// Raw.
		rctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		rc := exec.CommandContext(rctx, s.argv[0], s.argv[1:]...)
		rc.Dir = filepath.Join(twin["raw"], "ws", s.dir)
		// The program is found as the guarded twin finds it: in the
		// policy's PATH, or relative to the step's directory.
		if strings.Contains(s.argv[0], "/") {
			rc.Path = filepath.Join(rc.Dir, s.argv[0])
		} else {
			rc.Path = lookPathIn(pol.ExecPath(), s.argv[0])
		}
		rc.Env = append(append([]string(nil), rawEnv...), s.env...)
		var rout, rerr bytes.Buffer
		rc.Stdout, rc.Stderr = &rout, &rerr
		rawErr := rc.Run()
		cancel()
		// Guarded.
		gctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		gc := procguard.CommandContext(gctx, s.argv[0], s.argv[1:]...)
		gc.Dir = filepath.Join(twin["guarded"], "ws", s.dir)
		gc.Env = s.env
		var gout, gerr bytes.Buffer
		gc.Stdout, gc.Stderr = &gout, &gerr
		guardErr := gc.Run()
		cancel()
		var de *audit.DenyError
		if errors.As(guardErr, &de) {
			t.Errorf("%s: denied: %v", name, guardErr)
			continue
		}
		if gc.Confinement.Sandbox == nil {
			t.Skipf("%s: not in the sandbox: %s", name, gc.Confinement.SandboxNote)
		}
		ran++
		if len(gc.Confinement.EnvDropped) > 0 {
			t.Errorf("%s: variables dropped: %v", name, gc.Confinement.EnvDropped)
		}
		if exitCode(rawErr) != 0 {
			t.Errorf("%s: exit %d raw (%v): the step must work raw\nstderr: %s", name, exitCode(rawErr), rawErr, rerr.String())
		}
		if exitCode(rawErr) != exitCode(guardErr) {
			t.Errorf("%s: exit %d raw, %d guarded (%v)\nraw stderr: %s\nguarded stderr: %s", name, exitCode(rawErr), exitCode(guardErr), guardErr, rerr.String(), gerr.String())
			continue
		}
		for _, o := range []struct{ what, raw, guarded string }{{"stdout", rout.String(), gout.String()}, {"stderr", rerr.String(), gerr.String()}} {
			if r, g := norm(o.raw, twin["raw"]), norm(o.guarded, twin["guarded"]); r != g {
				t.Errorf("%s: %s differs\nraw:\n%s\nguarded:\n%s", name, o.what, r, g)
			}
		}
	}
	if ran == 0 {
		t.Fatal("no command ran")
	}

	// What the steps left.
	ws := filepath.Join(twin["guarded"], "ws")
	for _, c := range []struct{ path, want string }{
		{"cloned/.git/HEAD", "ref: refs/heads/main\n"},
		{"viaHTTPS/src/lib.go", "package src\n\nconst N = 2\n"},
		{"app/bin/app", ""},
	} {
		b, err := os.ReadFile(filepath.Join(ws, c.path))
		if err != nil || (c.want != "" && string(b) != c.want) {
			t.Errorf("%s: %q %v", c.path, b, err)
		}
	}
	for _, d := range []string{"cloned", "viaHTTPS"} {
		want := srcHead
		if d == "viaHTTPS" {
			want = reg.gitHead
		}
		if code, out := guarded(t, ctx, filepath.Join(ws, d), nil, "git", "rev-parse", "HEAD"); code != 0 || strings.TrimSpace(out) != want {
			t.Errorf("%s: HEAD %q (exit %d), want %s", d, out, code, want)
		}
	}
	if venvOK {
		if pems, _ := filepath.Glob(filepath.Join(ws, ".venv/lib/python3*/site-packages", pyPkg, "certs", "test.pem")); len(pems) != 1 {
			t.Errorf("the installed package's test.pem: %v", pems)
		}
	}
	modDir := filepath.Join("cache", "go-mod", goMod+"@"+goModVer)
	if _, err := os.Stat(filepath.Join(twin["guarded"], modDir, "test", "server.pem")); err != nil {
		t.Errorf("the module's test key in the cache: %v", err)
	}
	if allowed, _, all := proxyRecords(rec, reg.tlsPort); !allowed {
		t.Errorf("no request went through the egress proxy:\n%s", strings.Join(all, "\n"))
	}
	compareTwinTrees(t, twin["raw"], twin["guarded"], "ws", 40)
	compareTwinTrees(t, twin["raw"], twin["guarded"], modDir, 5)
}

// lookPathIn finds name in the directories of path (as exec.LookPath does
// with $PATH); name itself when it is not there, so the run reports it.
func lookPathIn(path []string, name string) string {
	for _, d := range path {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return name
}

// compareTwinTrees compares rel under the raw and guarded twins: the same
// files and links, with the same contents once the twin's path is
// normalized. Inside a .git directory only what git made from the same
// commands is compared (the raw clone copied git's sample hooks and read
// the machine's configuration; the guarded one used neither): HEAD, refs
// and objects. Byte code (__pycache__) and built binaries are compared by
// name, since they hold times; a RECORD's lines for byte code likewise.
func compareTwinTrees(t *testing.T, rawTwin, guardedTwin, rel string, atLeast int) {
	t.Helper()
	list := func(twin string) map[string]string {
		out := map[string]string{}
		root := filepath.Join(twin, rel)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Errorf("walk %s: %v", p, err)
				return nil
			}
			name, _ := filepath.Rel(root, p)
			if d.IsDir() {
				return nil
			}
			if i := strings.Index("/"+name, "/.git/"); i >= 0 {
				inGit := ("/" + name)[i+len("/.git/"):]
				if inGit != "HEAD" && !strings.HasPrefix(inGit, "refs/") && !strings.HasPrefix(inGit, "objects/") {
					return nil
				}
			}
			if d.Type()&fs.ModeSymlink != 0 {
				target, err := os.Readlink(p)
				if err != nil {
					t.Errorf("readlink %s: %v", p, err)
				}
				out[name] = "-> " + strings.ReplaceAll(target, twin, "$TWIN")
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Errorf("read %s: %v", p, err)
				return nil
			}
			text := strings.ReplaceAll(string(data), twin, "$TWIN")
			switch {
			case strings.Contains(name, "__pycache__/") || strings.HasPrefix(name, "bin/") || strings.Contains(name, "/bin/app"):
				text = ""
			case filepath.Base(name) == "RECORD":
				// A file that holds the twin's path (a script's #! line,
				// direct_url.json) has a twin-dependent hash and size.
				site := filepath.Dir(filepath.Dir(p))
				var keep []string
				for _, l := range strings.Split(string(data), "\n") {
					if strings.Contains(l, "__pycache__") {
						continue
					}
					if f, _, ok := strings.Cut(l, ","); ok {
						if b, err := os.ReadFile(filepath.Join(site, f)); err == nil && bytes.Contains(b, []byte(twin)) {
							l = f + ",(holds the twin's path)"
						}
					}
					keep = append(keep, l)
				}
				text = strings.Join(keep, "\n")
			}
			out[name] = text
			return nil
		})
		if err != nil {
			t.Errorf("walk %s: %v", root, err)
		}
		return out
	}
	r, g := list(rawTwin), list(guardedTwin)
	var diffs []string
	for name, data := range r {
		gd, ok := g[name]
		switch {
		case !ok:
			diffs = append(diffs, name+": made raw, missing guarded")
		case gd != data:
			diffs = append(diffs, fmt.Sprintf("%s: contents differ\nraw:\n%s\nguarded:\n%s", name, data, gd))
		}
	}
	for name := range g {
		if _, ok := r[name]; !ok {
			diffs = append(diffs, name+": made guarded, missing raw")
		}
	}
	sort.Strings(diffs)
	for i, d := range diffs {
		if i == 20 {
			t.Errorf("%s: and %d more differences", rel, len(diffs)-i)
			break
		}
		t.Errorf("%s: %s", rel, d)
	}
	if len(r) < atLeast {
		t.Errorf("%s: only %d files compared, want at least %d", rel, len(r), atLeast)
	}
}
