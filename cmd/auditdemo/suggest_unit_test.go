package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
)

// writeLog writes records as JSON lines, as audit's slog JSON handler
// does (attribute names from audit/record.go).
func writeLog(t *testing.T, recs ...map[string]any) string {
	t.Helper()
	var b strings.Builder
	for _, r := range recs {
		r["level"], r["msg"] = "WARN", "auditguard decision"
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func warnRec(protocol, op, target, resolved, rule, tier string) map[string]any {
	return map[string]any{"outcome": "would-deny", "protocol": protocol, "op": op, "target": target,
		"resolved": resolved, "decided_by": "mode warn", "rule": rule, "source": "builtin", "tier": tier}
}

// TestSuggestCases covers what a live session cannot easily produce: names
// resolving to loopback, IPv6, listening, unix sockets, renames, reads,
// explicit denies, invalid input, and values TOML must escape. The output
// must load as a policy file.
func TestSuggestCases(t *testing.T) {
	home := t.TempDir()
	d1, d2 := filepath.Join(home, "d1"), filepath.Join(home, `we"ird`+"\u00e9")
	for _, d := range []string{d1, d2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	echo, err := filepath.EvalSymlinks("/usr/bin/echo")
	if err != nil {
		t.Skip("no /usr/bin/echo")
	}
	move := warnRec("fs", "move", "a", filepath.Join(d1, "a"), `default "writes need a write root"`, "soft")
	move["target2"], move["resolved2"] = "b", filepath.Join(d2, "b")
	star := warnRec("exec", "exec", "echo", echo, `exec rule "programs need an exec rule"`, "soft")
	star["argv"], star["program"] = []string{"echo", "y", "*", "", "z"}, echo
	long := warnRec("exec", "exec", "echo", echo, `exec rule "programs need an exec rule"`, "soft")
	long["argv"], long["program"] = []string{"echo", "x", "y"}, echo
	short := warnRec("exec", "exec", "echo", echo, `exec rule "programs need an exec rule"`, "soft")
	short["argv"], short["program"] = []string{"echo", "x"}, echo
	missing := warnRec("exec", "exec", "no-such-program-here", "", `exec rule "the program is not in the policy's PATH"`, "soft")
	missing["argv"] = []string{"no-such-program-here"}
	noArgs := warnRec("exec", "exec", "true", "/usr/bin/true", `exec rule "programs need an exec rule"`, "soft")
	noArgs["argv"], noArgs["program"] = []string{"true"}, "/usr/bin/true"
	denied := warnRec("exec", "exec", "rm", "/usr/bin/rm", `exec rule "deny rm -r"`, "hard")
	denied["argv"], denied["program"], denied["source"] = []string{"rm", "-rf", "/"}, "/usr/bin/rm", "policy.toml:9"
	inDir := warnRec("exec", "exec", "echo", echo, `exec rule "commands run inside a write root"`, "soft")
	inDir["argv"], inDir["program"], inDir["detail"] = []string{"echo", "in", "dir"}, echo, "dir="+filepath.Join(home, "d3")+"; landlock=abi 7"
	noDir := warnRec("exec", "exec", "echo", echo, `exec rule "commands run inside a write root"`, "soft")
	noDir["argv"], noDir["program"] = []string{"echo", "no", "dir"}, echo
	allowed := warnRec("fs", "write", filepath.Join(home, "allowed"), filepath.Join(home, "allowed"), `write root "/"`, "")
	allowed["outcome"] = "allowed"

	logPath := writeLog(t,
		allowed,
		warnRec("fs", "write", "x", filepath.Join(d2, "x"), `default "writes need a write root"`, "soft"),
		warnRec("fs", "read", "r", filepath.Join(d1, "r"), `default "reads need a read or write root"`, "soft"),
		move,
		warnRec("fs", "write", "/proc/self/mem", "/proc/self/mem", `system "/proc"`, "hard"),
		warnRec("fs", "write", ".git/run.sh", filepath.Join(d1, ".git/run.sh"), `git metadata ".git"`, "hard"),
		warnRec("fs", "write", "loop", "", `invalid input "paths are checked after resolution"`, "invalid"),
		star, long, short, missing, denied, inDir, noDir, noArgs,
		warnRec("net", "connect", "localhost:8080", "127.0.0.1, ::1", `net rule "special-purpose 127.0.0.0/8 loopback"`, "hard"),
		warnRec("net", "connect", "API.example.com:443", "93.184.215.14", `default "connections need a net rule"`, "soft"),
		warnRec("net", "connect", "[2001:4860::8888]:443", "2001:4860::8888", `default "connections need a net rule"`, "soft"),
		warnRec("net", "listen", "127.0.0.1:9000", "127.0.0.1", `net rule "special-purpose 127.0.0.0/8 loopback"`, "hard"),
		warnRec("net", "connect", filepath.Join(d1, "app.sock"), filepath.Join(d1, "app.sock"), `net rule "unix sockets must lie under a write root"`, "soft"),
		warnRec("net", "connect", "db.internal.example.com:5432", "10.0.0.5", `net rule "deny connect tcp *.internal.example.com"`, "hard"),
		warnRec("net", "connect", "[fd00:ec2::254]:80", "fd00:ec2::254", `net rule "special-purpose fd00:ec2::254/128 cloud metadata (AWS IPv6)"`, "hard"),
		warnRec("net", "connect", "127.0.0.1", "", `invalid input "addresses must be canonical"`, "invalid"),
	)
	r := cli(t, "suggest", "--log", logPath)
	if r.code != 0 {
		t.Fatalf("suggest: %v", r)
	}
	out := r.stdout
	t.Logf("suggest output:\n%s", out)
	wantAll(t, "suggest output", out,
		"# auditdemo suggest: 22 would-deny events",
		// fs: exact paths; directories for a rename; read roots for reads.
		`"`+filepath.Join(home, `we\"ird`+"\u00e9")+`", # allows`, // the rename's directory covers the write to x
		`"`+d1+`", # allows fs move `+filepath.Join(d1, "a")+" -> "+filepath.Join(d2, "b")+" (its directory",
		"read_roots = [\n  \""+filepath.Join(d1, "r")+"\"",
		// exec: prefixes, the shorter one kept; what cannot be said, noted.
		"# note: argument 2 is \"*\", which in a rule matches any one argument",
		"# note: argument 3 is empty: a rule cannot name it, so the prefix stops before it",
		`args = ["x"]`, `args = ["y", "*"]`,
		"# note: no arguments to name: rules match argument prefixes, so this one allows the program with any arguments\n[[exec.allow]]\nprogram = \"/usr/bin/true\"",
		`"no-such-program-here" is not found in the exec path`,
		// A working directory outside the roots: the directory, when the
		// log names it.
		`"`+filepath.Join(home, "d3")+`", # allows exec echo in dir (its working directory)`,
		`args = ["in", "dir"]`,
		"# exec echo no dir\n#   denied by exec rule \"commands run inside a write root\" (builtin), soft\n#   no suggestion: the command's working directory is outside the write roots, and the log does not say which directory it was",
		"# exec rm -rf /\n#   denied by exec rule \"deny rm -r\" (policy.toml:9), hard\n#   no addition can allow it: an explicit deny rule beats every allow rule",
		// net: the name and each special address it resolved to.
		"host = \"localhost\"\nports = [8080]\nmatch = [\"localhost:8080\"]",
		"cidr = \"::1\"\nports = [8080]\nmatch = [\"[::1]:8080\"]",
		"host = \"api.example.com\"\nports = [443]",
		"cidr = \"2001:4860::8888\"\nports = [443]\nmatch = [\"[2001:4860::8888]:443\"]",
		"cidr = \"127.0.0.1\"\nports = [9000]\nlisten = true",
		"path = \""+filepath.Join(d1, "app.sock")+"\"\nnetwork = \"unix\"",
		"# net connect db.internal.example.com:5432", "explicit deny rule",
		"fd00:ec2::254 is cloud metadata (AWS IPv6); auditdemo never suggests unlocking it",
		"# fs write /proc/self/mem", "a built-in rule (/proc, /sys)",
		"no addition can allow it: a repository's .git changes only as git's own commands change it",
		"invalid input is never allowed",
	)
	for s, n := range map[string]int{`args = ["x", "y"]`: 0, `args = ["x"]`: 1, filepath.Join(home, "allowed"): 0, "cidr = \"127.0.0.1\"": 2} {
		if got := strings.Count(out, s); got != n {
			t.Errorf("%q appears %d times, want %d", s, got, n)
		}
	}
	// The additions load as a policy file, and allow what they say.
	f, err := policyfile.Parse("suggested.toml", []byte(out), policyfile.WithHome(home))
	if err != nil {
		t.Fatalf("the suggestion does not load: %v", err)
	}
	p := f.Policy
	if d := p.CheckPath(policy.OpWrite, filepath.Join(d2, "x"), ""); !d.Allowed {
		t.Errorf("write to the escaped path: %+v", d)
	}
	if d := p.CheckPath(policy.OpMove, filepath.Join(d1, "a"), ""); !d.Allowed {
		t.Errorf("rename: %+v", d)
	}
	if d := p.CheckExec(echo, []string{"echo", "x", "y"}); !d.Allowed {
		t.Errorf("echo x y: %+v", d)
	}
	if d := p.CheckExec(echo, []string{"echo", "w"}); d.Allowed {
		t.Errorf("echo w: %+v", d)
	}
}

func TestSuggestErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"outcome\":\"would-deny\"}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := cli(t, "suggest", "--log", bad); r.code != 1 || !strings.Contains(r.stderr, "line 2") {
		t.Errorf("malformed log: %v", r)
	}
	if r := cli(t, "suggest", "--log", filepath.Join(dir, "missing")); r.code != 1 {
		t.Errorf("missing log: %v", r)
	}
	if r := cli(t, "suggest"); r.code != 2 {
		t.Errorf("no --log: %v", r)
	}
	if r := cli(t, "suggest", "--log", bad, "--diff"); r.code != 2 || !strings.Contains(r.stderr, suggestUsage) {
		t.Errorf("--diff without --policy: %v", r)
	}
	if r := cli(t, "suggest", "--log", bad, "--keep-modes"); r.code != 2 {
		t.Errorf("--keep-modes without --policy: %v", r)
	}
	// A policy whose layout the merge cannot extend safely: nothing is
	// printed, and the reason is.
	inline := filepath.Join(dir, "inline.toml")
	if err := os.WriteFile(inline, []byte("[exec]\nallow = [{ program = \"/bin/false\" }]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	echo := warnRec("exec", "exec", "echo", "/bin/echo", `exec rule "programs need an exec rule"`, "soft")
	echo["argv"], echo["program"] = []string{"echo", "hi"}, "/bin/echo"
	if r := cli(t, "suggest", "--log", writeLog(t, echo), "--policy", inline); r.code != 1 || r.stdout != "" ||
		!strings.Contains(r.stderr, "exec.allow is written as an inline array") {
		t.Errorf("merge into an inline exec.allow: %v", r)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := cli(t, "suggest", "--log", empty); r.code != 0 || !strings.Contains(r.stdout, "# nothing to add") {
		t.Errorf("empty log: %v", r)
	}
	rec := warnRec("fs", "write", "/etc/x", "/etc/x", `default "writes need a write root"`, "soft")
	rec["outcome"] = "denied"
	if r := cli(t, "suggest", "--log", writeLog(t, rec)); r.code != 0 || !strings.Contains(r.stdout, "# 1 denied event ignored: they come from enforce mode") ||
		!strings.Contains(r.stdout, "# nothing to add") {
		t.Errorf("enforce-mode log: %v", r)
	}
}

func TestTOMLString(t *testing.T) {
	for in, want := range map[string]string{
		`a"b\c`:     `"a\"b\\c"`,
		"tab\tnl\n": `"tab\u0009nl\u000A"`,
		"caf\u00e9": "\"caf\u00e9\"",
		"bad\xffx":  `"bad\uFFFDx"`,
	} {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestSuggestExecDir: the decision a log records names the first soft
// denial only (here: no rule for the program), so with --policy suggest
// also checks the command's working directory (from the record's detail).
func TestSuggestExecDir(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	echo, err := filepath.EvalSymlinks("/usr/bin/echo")
	if err != nil {
		t.Skip("no /usr/bin/echo")
	}
	rec := warnRec("exec", "exec", "echo", echo, `exec rule "programs need an exec rule"`, "soft")
	rec["argv"], rec["program"], rec["detail"] = []string{"echo", "hi"}, echo, "dir="+work+"; landlock=abi 7"
	udp := warnRec("net", "connect", "127.0.0.1:5353", "127.0.0.1", `net rule "special-purpose 127.0.0.0/8 loopback"`, "hard")
	udp["detail"] = "udp"
	logPath := writeLog(t, rec, udp)
	pol := filepath.Join(dir, "policy.toml")
	if err := os.WriteFile(pol, []byte("[modes]\nexec = \"warn\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := cli(t, "suggest", "--log", logPath, "--policy", pol)
	if r.code != 0 {
		t.Fatalf("suggest: %v", r)
	}
	wantAll(t, "suggest --policy output", r.stdout,
		"write_roots = [\n  \""+work+"\", # allows exec echo hi (its working directory)",
		"program = \""+echo+"\"\nargs = [\"hi\"]",
		"cidr = \"127.0.0.1\"\nnetwork = \"udp\"\nports = [5353]",
	)
	// The merged policy runs the command there.
	f, err := policyfile.Parse(pol, []byte(r.stdout))
	if err != nil {
		t.Fatalf("merged policy does not load: %v", err)
	}
	req := policy.ExecRequest{Plan: policy.ExecPlan{Commands: []policy.ExecCommand{{Name: "echo", Program: echo, Argv: []string{"echo", "hi"}}}}, Dir: work}
	if d := req.Decide(f.Policy); !d.Allowed {
		t.Errorf("echo hi in %s: %+v (%v)", work, d, d.Rule)
	}
	if d := f.Policy.CheckNet(policy.OpConnect, "udp", "127.0.0.1", 5353, nil); !d.Allowed {
		t.Errorf("udp 127.0.0.1:5353: %+v (%v)", d, d.Rule)
	}
	if d := f.Policy.CheckNet(policy.OpConnect, "tcp", "127.0.0.1", 5353, nil); d.Allowed {
		t.Errorf("tcp 127.0.0.1:5353 is allowed too")
	}

	// Without the policy, the directory is a note.
	r = cli(t, "suggest", "--log", logPath)
	wantAll(t, "suggest output", r.stdout, "# note: it ran in "+work+", which must lie inside a write root too (pass --policy to have it checked)")
	if strings.Contains(r.stdout, "write_roots = [") {
		t.Errorf("a write root without --policy:\n%s", r.stdout)
	}
}
