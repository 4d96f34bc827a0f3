package procguard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy/policyfile"
	"github.com/auditguard/auditguard/procguard"
)

// agentPolicy reads the short policy of docs/agents.md, so the page and
// this test cannot drift apart; /srv/agent becomes the guarded twin and
// 8080 the loopback server's port.
func agentPolicy(t *testing.T, guarded, port string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "<!-- agent-policy -->\n```toml\n")
	text, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/agents.md has no agent-policy block")
	}
	return strings.NewReplacer("/srv/agent", guarded, "[8080]", "["+port+"]").Replace(text)
}

// workStep is one command of the workload, or a file the agent writes
// (with its file tool, not a command) before the next command.
type workStep struct {
	argv  []string
	env   []string          // Cmd.Env additions (identity variables)
	write map[string]string // files to write instead of running a command
	need  string            // a program the step needs; skipped when absent
}

func run(argv ...string) workStep { return workStep{argv: argv} }

// identity is a commit identity and fixed dates, so both twins make the
// same commits.
var identity = []string{"GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.com", "GIT_AUTHOR_DATE=2024-01-01T00:00:00Z",
	"GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.com", "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z"}

var dates = []string{"GIT_AUTHOR_DATE=2024-01-02T00:00:00Z", "GIT_COMMITTER_DATE=2024-01-02T00:00:00Z"}

// workspaceFiles are the module and scripts the agent writes first.
var workspaceFiles = map[string]string{
	"go.mod": "module example.com/hello\n\ngo 1.22\n",
	"main.go": `package main

import (
	"fmt"
	"os"
)

func greet(name string) string { return "hello, " + name }

func main() {
	name := "world"
	if len(os.Args) > 1 {
		name = os.Args[1]
	}
	fmt.Println(greet(name))
}
`,
	"main_test.go": `package main

import "testing"

func TestGreet(t *testing.T) {
	if got := greet("x"); got != "hello, x" {
		t.Fatal(got)
	}
}
`,
	"words.py": `import collections, sys

counts = collections.Counter(open(sys.argv[1]).read().split())
for word, n in sorted(counts.items()):
    print(word, n)
`,
	"run.sh":     "#!/bin/sh\necho run.sh here\n./bin/hello script\n",
	"Makefile":   "build:\n\tgo build -o bin/hello .\n\ntest:\n\tgo test -count=1 ./...\n\n.PHONY: build test\n",
	"data.txt":   "alpha beta\nbeta gamma\ngamma delta beta\n",
	".gitignore": "bin/\nout/\n",
	// build.sh has functions and loops; check.sh is git bisect run's test
	// (the "hello there" commit is the "bad" one).
	"build.sh": "#!/bin/sh\nset -e\ncount() { n=0; for f in \"$@\"; do n=$((n+1)); done; echo \"$n\"; }\nfor d in . out; do [ -d \"$d\" ] && echo \"dir $d: $(count \"$d\"/*)\"; done\nfiles=$(ls *.go | wc -l)\necho \"go files: $files\"\n",
	"check.sh": "#!/bin/sh\n! grep -q 'hello there' main.go\n",
}

// TestAgentWorkload runs a coding agent's everyday commands twice, raw and
// guarded by the short policy of docs/agents.md, in twin workspaces, and
// finds the same exit codes, output and files. The guarded twin runs in
// the sandbox with exec confinement on.
func TestAgentWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go module twice with cold caches (about a minute); skipped with -short")
	}
	for _, p := range []string{"git", "go", "make", "curl", "tar", "gzip", "sh"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed: the workload needs it", p)
		}
	}
	t.Setenv("HOME", t.TempDir()) // nothing below may read or write the real one
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	twin := map[string]string{"raw": filepath.Join(root, "raw"), "guarded": filepath.Join(root, "guarded")}
	for _, d := range twin {
		for _, sub := range []string{"ws", "home", "tmp", "cache"} {
			if err := os.MkdirAll(filepath.Join(d, sub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "pong %s\n", r.URL.Path)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)

	text := agentPolicy(t, twin["guarded"], port)
	if n := strings.Count(text, "\n"); n > 40 {
		t.Fatalf("the policy has %d lines; the target is at most 40", n)
	}
	if !strings.Contains(text, twin["guarded"]+"/ws") || !strings.Contains(text, port) {
		t.Fatalf("the policy does not name the twin and the port:\n%s", text)
	}
	polFile := filepath.Join(root, "agent.toml")
	if err := os.WriteFile(polFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := policyfile.LoadFile(polFile)
	if err != nil {
		t.Fatal(err)
	}
	pol := f.Policy
	if pol.Exec().LandlockExecAny {
		t.Fatal("the policy must keep exec confinement on")
	}
	g, err := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()

	// The raw twin gets the environment the guarded one gets from the
	// policy (PATH, HOME, TMPDIR), with its own directories, but shares the
	// go build cache: each step runs raw first, so the guarded go reads
	// and writes a cache that is warm, and the workload compiles the
	// standard library once instead of twice. (go test runs with -count=1,
	// so no test result comes from the cache.)
	toRaw := strings.NewReplacer(twin["guarded"], twin["raw"])
	rawEnv := []string{"PATH=" + strings.Join(pol.ExecPath(), ":"), "HOME=" + twin["raw"] + "/home",
		"TMPDIR=" + twin["raw"] + "/tmp", "LANG=C.UTF-8", "TERM=dumb"}
	for _, kv := range pol.Exec().SetEnv {
		if !strings.HasPrefix(kv, "GOCACHE=") {
			kv = toRaw.Replace(kv)
		}
		rawEnv = append(rawEnv, kv)
	}

	url := "http://127.0.0.1:" + port
	steps := []workStep{
		{write: workspaceFiles},
		run("git", "init", "-q", "-b", "main"),
		run("git", "status", "--short"),
		run("git", "add", "."),
		{argv: []string{"git", "-c", "user.name=Agent", "-c", "user.email=agent@example.com", "commit", "-q", "-m", "initial"}, env: identity},
		run("git", "log", "--oneline"),
		run("git", "status", "--short"),
		run("gofmt", "-l", "."),
		run("go", "vet", "./..."),
		run("go", "build", "-o", "bin/hello", "."),
		run("./bin/hello", "world"),
		run("sh", "-c", "./bin/hello from-sh"),
		run("go", "test", "-count=1", "./..."),
		run("go", "test", "-count=1", "-run", "TestGreet", "-v", "."),
		run("go", "run", ".", "gopher"),
		run("sh", "-c", "go build -o bin/hello . && ./bin/hello again"),
		run("go", "test", "-c", "-o", "bin/hello.test", "."),
		run("./bin/hello.test", "-test.run", "TestGreet"),
		run("./run.sh"),
		run("sh", "-c", "./run.sh | tr a-z A-Z"),
		{argv: []string{"python3", "words.py", "data.txt"}, need: "python3"},
		{argv: []string{"python3", "-c", "print(sum(range(10)))"}, need: "python3"},
		{argv: []string{"sh", "-c", "python3 words.py data.txt | sort -k2 -rn | head -n 2"}, need: "python3"},
		run("sh", "-c", "cat data.txt | tr ' ' '\\n' | sort | uniq -c | sort -rn | head -n 3"),
		run("grep", "-n", "beta", "data.txt"),
		run("sh", "-c", "grep -c gamma data.txt && wc -l data.txt"),
		run("sed", "-n", "2,3p", "data.txt"),
		run("awk", "{print $1}", "data.txt"),
		run("cut", "-d", " ", "-f", "2", "data.txt"),
		run("sh", "-c", "ls | sort"),
		run("sh", "-c", "find . -name '*.go' -not -path './.git/*' | sort"),
		run("mkdir", "-p", "out"),
		run("tar", "-czf", "out/src.tgz", "main.go", "go.mod"),
		run("tar", "-tzf", "out/src.tgz"),
		run("make", "build"),
		run("make", "test"),
		run("./bin/hello", "made"),
		run("curl", "-s", url+"/ping"),
		run("sh", "-c", "curl -s "+url+"/x | wc -c"),
		{write: map[string]string{"main.go": strings.Replace(workspaceFiles["main.go"], `"hello, "`, `"hello there, "`, 1),
			"main_test.go": strings.Replace(workspaceFiles["main_test.go"], `"hello, x"`, `"hello there, x"`, 1)}},
		run("git", "diff"),
		run("git", "diff", "--stat"),
		run("go", "test", "-count=1", "./..."),
		{argv: []string{"git", "commit", "-q", "-am", "greet politely"}, env: append(append([]string(nil), identity...), dates...)},
		run("git", "branch", "feature"),
		run("git", "branch", "--list"),
		{write: map[string]string{"data.txt": workspaceFiles["data.txt"] + "epsilon\n"}},
		// A stash is a commit: it needs the fixed dates too, or the twins'
		// objects differ whenever their stashes fall in different seconds.
		{argv: []string{"git", "stash", "-q"}, env: append(append([]string(nil), identity...), dates...)},
		run("git", "stash", "list"),
		run("git", "stash", "pop", "-q"),
		run("git", "status", "--short"),
		run("git", "grep", "-c", "beta"),
		run("git", "grep", "-n", "greet"),
		run("git", "show", "--stat", "--format=%h %an %s", "HEAD"),
		run("git", "log", "--format=%an <%ae> %s"),
		run("sh", "-c", "echo done > out/done.txt"),
		run("cat", "out/done.txt"),
		run("sh", "-c", "exit 3"),
		run("git", "cat-file", "-t", "HEAD"),
		// Scripts the command line cannot be read ahead of: each program
		// they start is judged when it starts (in the sandbox).
		run("sh", "-c", "cat > NOTES.md <<'EOF'\n# Notes\n\n- greet politely\nEOF\ncat NOTES.md"),
		run("sh", "-c", `set -eu; for f in $(ls *.go); do gofmt -l "$f"; done; echo checked`),
		run("sh", "-c", `echo "$HOME" | grep -c home`),
		run("sh", "-c", `out=out/count.txt; wc -l < data.txt > "$out"; cat "$out"`),
		run("sh", "build.sh"),
		run("sh", "-c", `ls *.txt | xargs wc -l`),
		run("find", ".", "-name", "*.txt", "-not", "-path", "./.git/*", "-exec", "wc", "-c", "{}", ";"),
		{argv: []string{"sh", "-c", "git bisect start HEAD HEAD~1 >/dev/null && git bisect run ./check.sh >/dev/null; echo \"bisect=$?\"; git bisect log | grep -c 'first bad'; git bisect reset >/dev/null"},
			env: append(append([]string(nil), identity...), dates...)},
	}
	commands := 0
	for _, s := range steps {
		if s.argv != nil {
			commands++
		}
	}
	if commands < 40 {
		t.Fatalf("the workload has %d commands; it must have at least 40", commands)
	}

	timing := regexp.MustCompile(`\d+\.\d+s`)
	norm := func(s, dir string) string {
		return timing.ReplaceAllString(strings.ReplaceAll(s, dir, "$TWIN"), "N.NNs")
	}
	sandboxed := false
	for i, s := range steps {
		if s.write != nil {
			for _, d := range twin {
				for name, data := range s.write {
					mode := fs.FileMode(0o644)
					if strings.HasSuffix(name, ".sh") {
						mode = 0o755
					}
					if err := os.WriteFile(filepath.Join(d, "ws", name), []byte(data), mode); err != nil {
						t.Fatal(err)
					}
				}
			}
			continue
		}
		name := fmt.Sprintf("%02d %s", i, strings.Join(s.argv, " "))
		if s.need != "" {
			if _, err := exec.LookPath(s.need); err != nil {
				t.Logf("%s: skipped: %s is not installed", name, s.need)
				continue
			}
		}
		// Raw.
		rctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		rc := exec.CommandContext(rctx, s.argv[0], s.argv[1:]...)
		if strings.HasPrefix(s.argv[0], "./") {
			rc.Path = filepath.Join(twin["raw"], "ws", s.argv[0])
		}
		rc.Dir = filepath.Join(twin["raw"], "ws")
		rc.Env = append(append([]string(nil), rawEnv...), s.env...)
		var rout, rerr bytes.Buffer
		rc.Stdout, rc.Stderr = &rout, &rerr
		rawErr := rc.Run()
		cancel()
		// Guarded.
		gctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		gc := procguard.CommandContext(gctx, s.argv[0], s.argv[1:]...)
		gc.Dir = filepath.Join(twin["guarded"], "ws")
		if s.env != nil {
			gc.Env = s.env
		}
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
			t.Fatalf("%s: not in the sandbox: %s", name, gc.Confinement.SandboxNote)
		}
		sandboxed = true
		if len(gc.Confinement.EnvDropped) > 0 {
			t.Errorf("%s: variables dropped: %v", name, gc.Confinement.EnvDropped)
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
	if !sandboxed {
		t.Fatal("no command ran")
	}
	compareTrees(t, filepath.Join(twin["raw"], "ws"), filepath.Join(twin["guarded"], "ws"))
}

// exitCode is a command's exit code: 0, its status, or -1 when it did not
// run to an exit.
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

// compareTrees compares the twins' workspaces: the same files, with the
// same contents for sources and text, and the same repository history.
// Inside .git only what git made from the same commands is compared (the
// raw init copied git's sample hooks, the guarded one used no template);
// built binaries and the archive are compared by name, since they hold
// paths and times.
func compareTrees(t *testing.T, raw, guarded string) {
	t.Helper()
	list := func(root string) map[string]string {
		out := map[string]string{}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Errorf("walk %s: %v", p, err)
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			switch {
			case rel == ".git" || strings.HasPrefix(rel, ".git/"):
				if rel != ".git" && !strings.HasPrefix(rel, ".git/refs/") && rel != ".git/HEAD" && !strings.HasPrefix(rel, ".git/objects/") {
					return nil
				}
			case d.IsDir():
				return nil
			}
			if d.IsDir() {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Errorf("read %s: %v", p, err)
				return nil
			}
			if strings.HasPrefix(rel, "bin/") || strings.HasSuffix(rel, ".tgz") {
				data = nil
			}
			out[rel] = string(data)
			return nil
		})
		return out
	}
	r, g := list(raw), list(guarded)
	for name, data := range r {
		gd, ok := g[name]
		switch {
		case !ok:
			t.Errorf("%s: made raw, missing guarded", name)
		case gd != data:
			t.Errorf("%s: contents differ", name)
		}
	}
	for name := range g {
		if _, ok := r[name]; !ok {
			t.Errorf("%s: made guarded, missing raw", name)
		}
	}
	if len(r) < 20 {
		t.Errorf("only %d files compared", len(r))
	}
}
