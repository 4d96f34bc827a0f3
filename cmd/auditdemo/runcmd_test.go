package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	work, pol := agentHome(t)
	t.Chdir(work)
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")

	r := cli(t, "run", "--policy", pol, "--log", logPath, "--", "echo", "hello", "world")
	if r.code != 0 {
		t.Fatalf("run echo: %v", r)
	}
	if r.stdout != "hello world\n" {
		t.Errorf("the command's output is not streamed as it is: %q", r.stdout)
	}
	wantAll(t, "run report", r.stderr,
		"--- auditguard ---",
		"exec exec echo hello world: allowed by policy",
		`rule:     exec rule "echo" (`+pol+":24)",
		"program:  /", "dir="+work,
		"exit status: 0",
		"confinement:", "landlock ", "process group ", "timeout        30s",
	)

	// --log writes the decision as a JSON line, allows included.
	recs := readJSONLines(t, logPath)
	if len(recs) != 1 || recs[0]["outcome"] != "allowed" || recs[0]["protocol"] != "exec" ||
		recs[0]["source"] != pol+":24" || !strings.HasSuffix(recs[0]["program"].(string), "/echo") {
		t.Errorf("log records: %v", recs)
	}

	// A command's own exit status comes back.
	if r := cli(t, "run", "--policy", pol, "--", "ls", filepath.Join(work, "missing")); r.code == 0 || r.code == exitRefused || r.code == exitKilled {
		t.Errorf("ls of a missing file: want ls's own failing exit status: %v", r)
	} else if !strings.Contains(r.stderr, "exit status: "+strconv.Itoa(r.code)) {
		t.Errorf("the report does not give the exit status: %v", r)
	}

	// A denied command is not started.
	r = cli(t, "run", "--policy", pol, "--", "rm", "-rf", work)
	if r.code != exitRefused {
		t.Fatalf("rm -rf: %v", r)
	}
	wantAll(t, "run report", r.stderr, `refused: exec: "rm": auditguard: exec denied`, `exec rule "deny rm -r" (`+pol+":37)", "denied [hard] by policy")
	if strings.Contains(r.stderr, "confinement:") {
		t.Errorf("a refused command reports a confinement:\n%s", r.stderr)
	}
	if _, err := os.Stat(work); err != nil {
		t.Fatalf("the denied rm ran: %v", err)
	}
}

// TestRunLandlock checks that the kernel confinement the run reports is in
// force: touch is allowed by the exec rules, but outside the write roots
// Landlock refuses it.
func TestRunLandlock(t *testing.T) {
	work, pol := agentHome(t)
	t.Chdir(work)
	outside := filepath.Join(t.TempDir(), "outside")
	r := cli(t, "run", "--policy", pol, "--", "touch", outside)
	if strings.Contains(r.stderr, "landlock       none") {
		t.Skipf("Landlock is not available here: %s", r.stderr)
	}
	if r.code == 0 {
		t.Fatalf("touch outside the write roots succeeded under Landlock: %v", r)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Fatalf("%s was created: %v", outside, err)
	}
	wantAll(t, "run report", r.stderr, "landlock       abi ", work+":rw", "exec exec touch "+outside+": allowed")

	inside := filepath.Join(work, "inside")
	if r := cli(t, "run", "--policy", pol, "--", "touch", inside); r.code != 0 {
		t.Fatalf("touch inside the write root: %v", r)
	}
	if _, err := os.Stat(inside); err != nil {
		t.Fatal(err)
	}
}

func TestRunUsage(t *testing.T) {
	_, pol := agentHome(t)
	for _, args := range [][]string{
		{"run"},
		{"run", "--policy", pol},
		{"run", "--policy", pol, "--"},
		{"run", "--", "echo"},
		{"run", "--policy", filepath.Join(t.TempDir(), "missing.toml"), "--", "echo"},
	} {
		if r := cli(t, args...); r.code != 2 {
			t.Errorf("%q: %v", args, r)
		}
	}
}

func readJSONLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// TestRunPrintsTree: run prints what the command's processes started,
// each under its parent, as judged when it started.
func TestRunPrintsTree(t *testing.T) {
	work, _ := agentHome(t)
	t.Chdir(work)
	pol := filepath.Join(t.TempDir(), "tree.toml")
	if err := os.WriteFile(pol, []byte("[fs]\nwrite_roots = [\""+work+"\"]\n[[exec.allow]]\nprogram = \"sh\"\n[[exec.allow]]\nprogram = \"ls\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "run", "--policy", pol, "--", "sh", "-c", `d=.; ls -d "$d"; ls -d "$d"`)
	if r.code != 0 {
		t.Fatalf("run: %v", r)
	}
	if !strings.Contains(r.stderr, "programs       every program") {
		t.Skipf("execs are not judged here:\n%s", r.stderr)
	}
	_, tree, ok := strings.Cut(r.stderr, "what ran:\n")
	if !ok {
		t.Fatalf("no tree:\n%s", r.stderr)
	}
	lines := strings.Split(tree, "\n")
	if len(lines) < 3 || !strings.Contains(lines[0], "sh -c") || !strings.HasPrefix(lines[1], "    [") ||
		!strings.Contains(lines[1], "ls -d .  allowed") || !strings.Contains(lines[2], "ls -d .  allowed") {
		t.Errorf("tree:\n%s", tree)
	}
}

// TestRunFileCalls: with --file-calls, run records the file calls the
// sandbox's supervisor allowed, each with the name as resolved (here
// through a /proc alias); without it, only refusals are there.
func TestRunFileCalls(t *testing.T) {
	work, _ := agentHome(t)
	t.Chdir(work)
	pol := filepath.Join(t.TempDir(), "calls.toml")
	if err := os.WriteFile(pol, []byte("[fs]\nwrite_roots = [\""+work+"\"]\n[[exec.allow]]\nprogram = \"sh\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `echo a > /proc/self/cwd/made.txt`
	r := cli(t, "run", "--policy", pol, "--file-calls", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("run: %v", r)
	}
	if !strings.Contains(r.stderr, "performed by the supervisor") {
		t.Skipf("no file-call supervisor here:\n%s", r.stderr)
	}
	if want := "fs write " + filepath.Join(work, "made.txt") + ": allowed"; !strings.Contains(r.stderr, want) {
		t.Errorf("--file-calls: no %q in\n%s", want, r.stderr)
	}
	if !strings.Contains(r.stderr, "each recorded above (--file-calls)") {
		t.Errorf("the confinement does not say allowed calls are recorded:\n%s", r.stderr)
	}
	r = cli(t, "run", "--policy", pol, "--", "sh", "-c", script)
	if r.code != 0 || strings.Contains(r.stderr, "fs write "+filepath.Join(work, "made.txt")) {
		t.Errorf("without --file-calls the allowed write was recorded: %v", r)
	}
}
