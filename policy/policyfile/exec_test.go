package policyfile

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/policy"
)

// ruleLine returns the line of the "[[" header of the rule whose body
// contains s (the first line containing s, walking back to its header).
func ruleLine(t *testing.T, file, s string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for n := lineOf(t, file, s); n >= 1; n-- {
		if strings.HasPrefix(strings.TrimSpace(lines[n-1]), "[[") {
			return n
		}
	}
	t.Fatalf("%s: no [[header]] before %q", file, s)
	return 0
}

// progDir makes a directory of executable scripts and returns its real path.
func progDir(t *testing.T, dir string, names ...string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

func TestLoadExampleExecNet(t *testing.T) {
	const path = "testdata/example.toml"
	f, err := LoadFile(path, WithHome(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	p := f.Policy
	src := func(s string) string { return path + ":" + strconv.Itoa(ruleLine(t, path, s)) }

	spec := p.Exec()
	if want := []string{"/usr/local/bin", "/usr/bin", "/bin"}; !reflect.DeepEqual(spec.Path, want) {
		t.Errorf("exec path = %v", spec.Path)
	}
	if want := []string{"LANG", "LC_*", "TERM"}; !reflect.DeepEqual(spec.Env, want) {
		t.Errorf("exec env = %v", spec.Env)
	}
	if spec.Timeout != 2*time.Minute || spec.MaxTimeout != 10*time.Minute || spec.OutputLimit != 8<<20 || !spec.DenyNetwork {
		t.Errorf("exec settings = %+v", spec)
	}
	if spec.Limits != (policy.ExecLimits{CPUSeconds: 120, OpenFiles: 1024}) {
		t.Errorf("exec limits = %+v", spec.Limits)
	}

	look := func(name string) string {
		f, err := policy.LookPath(name, spec.Path)
		if err != nil {
			t.Skipf("%s not installed: %v", name, err)
		}
		r, err := filepath.EvalSymlinks(f)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	ls, sort, head := look("ls"), look("sort"), look("head")
	execTests := []struct {
		prog    string
		argv    []string
		allowed bool
		tier    policy.Tier
		source  string
	}{
		{ls, []string{"ls", "-la"}, true, policy.TierNone, src(`program = "ls"`)},
		{sort, []string{"sort", "-u", "x"}, true, policy.TierNone, src(`match = [["-u", "names.txt"]]`)},
		{sort, []string{"sort", "--compress-program=sh", "x"}, false, policy.TierHard, src(`args = ["--compress-program"]`)},
		{head, []string{"head", "-n", "3", "f"}, true, policy.TierNone, src(`args = ["-n", "*"]`)},
		{head, []string{"head", "-c", "3", "f"}, false, policy.TierSoft, "builtin"},
		{"/usr/bin/no-such-tool", []string{"x"}, false, policy.TierSoft, "builtin"},
	}
	for _, tt := range execTests {
		d := p.CheckExec(tt.prog, tt.argv)
		if d.Allowed != tt.allowed || d.Tier != tt.tier || d.Rule.Source != tt.source {
			t.Errorf("exec %v: %+v by %v, want allowed=%v tier %v source %s", tt.argv, d, d.Rule, tt.allowed, tt.tier, tt.source)
		}
	}

	pub := netip.MustParseAddr("93.184.215.14")
	netTests := []struct {
		op      policy.Op
		network string
		host    string
		port    uint16
		addrs   []netip.Addr
		allowed bool
		tier    policy.Tier
		source  string
	}{
		{policy.OpConnect, "tcp", "api.example.com", 443, []netip.Addr{pub}, true, policy.TierNone, src(`host = "api.example.com"`)},
		{policy.OpConnect, "tcp", "api.example.com", 80, []netip.Addr{pub}, false, policy.TierSoft, "builtin"},
		{policy.OpConnect, "tcp", "a.pkg.example.org", 8042, []netip.Addr{pub}, true, policy.TierNone, src(`host = "*.pkg.example.org"`)},
		{policy.OpConnect, "tcp", "pkg.example.org", 443, []netip.Addr{pub}, false, policy.TierSoft, "builtin"},
		{policy.OpConnect, "tcp", "db.internal.example.com", 5432, []netip.Addr{pub}, false, policy.TierHard, src(`host = "*.internal.example.com"`)},
		{policy.OpListen, "tcp", "127.0.0.1", 8080, nil, true, policy.TierNone, src(`cidr = "127.0.0.1"`)},
		{policy.OpConnect, "tcp", "127.0.0.1", 8080, nil, false, policy.TierHard, "builtin"},
		{policy.OpConnect, "unix", "/srv/agent/work/run/db.sock", 0, nil, true, policy.TierNone, src(`path = "/srv/agent/work/run"`)},
	}
	for _, tt := range netTests {
		d := p.CheckNet(tt.op, tt.network, tt.host, tt.port, tt.addrs)
		if d.Allowed != tt.allowed || d.Tier != tt.tier || (tt.source != "builtin" && d.Rule.Source != tt.source) {
			t.Errorf("%v %s %s:%d: %+v by %v, want allowed=%v tier %v source %s", tt.op, tt.network, tt.host, tt.port, d, d.Rule, tt.allowed, tt.tier, tt.source)
		}
	}
}

// TestFileRulesDecideLikeCode loads exec and net rules from a file and
// builds the same rules in code: every decision must agree, and only the
// sources differ.
func TestFileRulesDecideLikeCode(t *testing.T) {
	dir := t.TempDir()
	bin := progDir(t, filepath.Join(dir, "bin"), "tool", "other")
	doc := `[exec]
path = ["` + bin + `"]

[[exec.allow]]
program = "tool"
args = ["build", "*"]
match = [["build", "x", "-v"]]

[[exec.allow]]
program = "` + bin + `/other"

[[exec.deny]]
program = "tool"
args = ["--exec"]

[[net.allow]]
host = "*.example.com"
ports = [443, "8000-8999"]

[[net.allow]]
cidr = "192.168.1.0/24"
ports = [5432]

[[net.deny]]
cidr = "192.168.1.13"
`
	file := filepath.Join(dir, "p.toml")
	writeInPlace(t, file, doc)
	f, err := LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	code, err := policy.New(policy.Spec{
		Exec: policy.ExecSpec{Path: []string{bin}, Rules: []policy.ExecRule{
			{Program: "tool", Args: []string{"build", "*"}, Match: [][]string{{"build", "x", "-v"}}},
			{Program: bin + "/other"},
			{Program: "tool", Args: []string{"--exec"}, Deny: true},
		}},
		Net: policy.NetSpec{Rules: []policy.NetRule{
			{Host: "*.example.com", Ports: []string{"443", "8000-8999"}},
			{CIDR: "192.168.1.0/24", Ports: []string{"5432"}},
			{CIDR: "192.168.1.13", Deny: true},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string, fd, cd policy.Decision, wantSource string) {
		t.Helper()
		if fd.Allowed != cd.Allowed || fd.Tier != cd.Tier || fd.Rule.Pattern != cd.Rule.Pattern || fd.Detail != cd.Detail {
			t.Errorf("%s: file decided %+v (%v), code decided %+v (%v)", what, fd, fd.Rule, cd, cd.Rule)
		}
		if fd.Rule.Source != wantSource {
			t.Errorf("%s: source %q, want %q", what, fd.Rule.Source, wantSource)
		}
	}
	at := func(line int) string { return file + ":" + strconv.Itoa(line) }
	tool, other := bin+"/tool", bin+"/other"
	for _, tt := range []struct {
		prog   string
		argv   []string
		source string
	}{
		{tool, []string{"tool", "build", "a"}, at(4)},
		{tool, []string{"tool", "build"}, "builtin"},
		{tool, []string{"tool", "build", "a", "--exec=sh"}, at(12)},
		{tool, []string{"tool", "test"}, "builtin"},
		{other, []string{"other", "anything"}, at(9)},
		{bin + "/missing", []string{"missing"}, "builtin"},
	} {
		same(strings.Join(tt.argv, " "), f.Policy.CheckExec(tt.prog, tt.argv), code.CheckExec(tt.prog, tt.argv), tt.source)
	}
	pub := netip.MustParseAddr("93.184.215.14")
	for _, tt := range []struct {
		network, host string
		ip            netip.Addr
		port          uint16
		source        string
	}{
		{"tcp", "api.example.com", pub, 443, at(16)},
		{"tcp4", "api.example.com", pub, 8500, at(16)},
		{"tcp", "api.example.com", pub, 80, "builtin"},
		{"udp", "api.example.com", pub, 443, "builtin"},
		{"tcp", "example.com", pub, 443, "builtin"},
		{"tcp", "", netip.MustParseAddr("192.168.1.20"), 5432, at(20)},
		{"tcp", "", netip.MustParseAddr("192.168.1.13"), 5432, at(24)},
		{"tcp", "", netip.MustParseAddr("192.168.2.20"), 5432, "builtin: IANA IPv4 Special-Purpose Address Registry, RFC 1918"},
		{"tcp", "", pub, 5432, "builtin"},
		{"tcp", "db.example.com", netip.MustParseAddr("192.168.1.13"), 443, at(24)},
	} {
		what := tt.network + " " + tt.host + " " + tt.ip.String() + ":" + strconv.Itoa(int(tt.port))
		same(what, f.Policy.CheckDial(tt.network, tt.host, tt.ip, tt.port), code.CheckDial(tt.network, tt.host, tt.ip, tt.port), tt.source)
	}
	d := f.Policy.CheckNet(policy.OpConnect, "tcp", "api.example.com", 8000, []netip.Addr{pub})
	same("CheckNet", d, code.CheckNet(policy.OpConnect, "tcp", "api.example.com", 8000, []netip.Addr{pub}), at(16))
}

func TestFileExecNetErrors(t *testing.T) {
	dir := t.TempDir()
	bin := progDir(t, filepath.Join(dir, "bin"), "tool")
	pathLine := "[exec]\npath = [\"" + bin + "\"]\n"
	checkParseErrors(t, []parseErrorCase{
		// Unknown keys, with did-you-mean.
		{"exec key typo", "[exec]\nalow = []\n", "exec.alow", 2, "unknown key", "allow"},
		{"exec rules hint", "[exec]\nrules = []\n", "exec.rules", 2, "[[exec.allow]] and [[exec.deny]]", ""},
		{"exec switch typo", "[exec]\ndeny_netwrok = true\n", "exec.deny_netwrok", 2, "unknown key", "deny_network"},
		{"exec key from fs", "[exec]\nwrite_roots = []\n", "exec.write_roots", 2, "belongs in [fs]", "fs.write_roots"},
		{"rule key typo", pathLine + "[[exec.allow]]\nprogam = \"tool\"\n", "exec.allow[0].progam", 4, "unknown key", "program"},
		{"rule arg", pathLine + "[[exec.allow]]\nprogram = \"tool\"\narg = [\"x\"]\n", "exec.allow[0].arg", 5, "unknown key", "args"},
		{"deny inside allow", pathLine + "[[exec.allow]]\nprogram = \"tool\"\ndeny = true\n", "exec.allow[0].deny", 5, "separate tables", ""},
		{"env on a deny rule", pathLine + "[[exec.deny]]\nprogram = \"tool\"\nenv = [\"X\"]\n", "exec.deny[0].env", 5, "has no env", ""},
		{"limits typo", "[exec.limits]\ncpu_second = 3\n", "exec.limits.cpu_second", 2, "unknown key", "cpu_seconds"},
		{"net key typo", "[net]\ndney = []\n", "net.dney", 2, "unknown key", "deny"},
		{"net rules hint", "[net]\n[[net.rule]]\nhost = \"a.example\"\n", "net.rule", 2, "[[net.allow]] and [[net.deny]]", ""},
		{"net rule typo", "[[net.allow]]\nhost = \"a.example\"\nport = [443]\n", "net.allow[0].port", 3, "unknown key", "ports"},
		{"net rule cidr typo", "[[net.allow]]\ncdir = \"10.0.0.0/8\"\n", "net.allow[0].cdir", 2, "unknown key", "cidr"},
		// Types.
		{"args as string", pathLine + "[[exec.allow]]\nprogram = \"tool\"\nargs = \"build\"\n", "exec.allow[0].args", 5, "expected an array of strings", ""},
		{"timeout as number", "[exec]\ntimeout = 30\n", "exec.timeout", 2, "expected a duration string", ""},
		{"bad duration", "[exec]\nmax_timeout = \"5 minutes\"\n", "exec.max_timeout", 2, "unknown unit", ""},
		{"match not nested", pathLine + "[[exec.allow]]\nprogram = \"tool\"\nmatch = [\"build\"]\n", "exec.allow[0].match[0]", 5, "expected an array of strings, got a string", ""},
		{"ports of booleans", "[[net.allow]]\nhost = \"a.example\"\nports = [true]\n", "net.allow[0].ports[0]", 3, "expected a port", ""},
		{"port out of range", "[[net.allow]]\nhost = \"a.example\"\nports = [70000]\n", "net.allow[0].ports[0]", 3, "not a port", ""},
		{"listen as string", "[[net.allow]]\ncidr = \"127.0.0.1\"\nlisten = \"yes\"\n", "net.allow[0].listen", 3, "expected a boolean", ""},
		{"rule not a table", "[exec]\ndeny = [\"tool\"]\n", "exec.deny[0]", 2, "expected a table", ""},
		{"single brackets", "[exec.allow]\nprogram = \"tool\"\n", "exec.allow", 1, "expected an array of tables ([[exec.allow]]), got a table", ""},
		{"missing program", "[[exec.allow]]\nargs = [\"x\"]\n", "exec.allow[0]", 1, "missing program", ""},
		{"missing target", "[net]\n\n[[net.deny]]\nports = [22]\n", "net.deny[0]", 3, "missing host, cidr or path", ""},
		// Values, checked by the decoder.
		{"relative path entry", "[exec]\npath = [\"/bin\", \"bin\"]\n", "exec.path", 2, "must be absolute", ""},
		{"relative home", "[exec]\nhome = \"home\"\n", "exec.home", 2, "not an absolute path", ""},
		{"negative limit", "[exec.limits]\nopen_files = -1\n", "exec.limits.open_files", 2, "must not be negative", ""},
		{"no unlimited processes", "[exec.limits]\nprocesses = -1\n", "exec.limits.processes", 2, "must not be negative", ""},
		{"bad env name", "[exec]\nenv = [\"A=B\"]\n", "exec.env", 2, "want a variable name", ""},
		{"removed opt-in", "[exec]\nlandlock_exec_only_allowed = true\n", "exec.landlock_exec_only_allowed", 2, "the default now", ""},
		{"landlock contradiction", "[exec]\nrequire_landlock = true\nno_landlock = true\n", "exec.no_landlock", 3, "contradicts", ""},
		{"net example", "[[net.allow]]\nhost = \"api.example.com\"\nports = [443]\nmatch = [\"api.example.com:80\"]\n", "net.allow[0].match", 4, `example "api.example.com:80" does not match`, ""},
		{"net counter-example", "[[net.deny]]\ncidr = \"10.0.0.0/8\"\nno_match = [\"10.1.2.3:22\"]\n", "net.deny[0].no_match", 3, `counter-example "10.1.2.3:22" matches`, ""},
		{"net bad example", "[[net.allow]]\nhost = \"api.example.com\"\nmatch = [\"api.example.com\"]\n", "net.allow[0].match", 3, "want \"host:port\"", ""},
		// Values, checked by Builder.Build and mapped back to the rule.
		{"relative program", pathLine + "\n[[exec.allow]]\nprogram = \"tool\"\n\n[[exec.allow]]\nprogram = \"bin/tool\"\n", "exec.allow[1]", 7, "relative program names are refused", ""},
		{"program not found", pathLine + "[[exec.deny]]\nprogram = \"nosuchtool\"\n", "exec.deny[0]", 3, "not found", ""},
		{"exec example", pathLine + "[[exec.allow]]\nprogram = \"tool\"\nargs = [\"build\"]\nmatch = [[\"test\"]]\n", "exec.allow[0]", 3, `example ["test"] does not match`, ""},
		{"exec counter-example", pathLine + "[[exec.deny]]\nprogram = \"tool\"\nargs = [\"-c\"]\nno_match = [[\"-cx\"]]\n", "exec.deny[0]", 3, `counter-example ["-cx"] matches`, ""},
		{"bad cidr", "[[net.allow]]\nhost = \"a.example\"\n\n[[net.allow]]\ncidr = \"10.0.0.1/8\"\n", "net.allow[1]", 4, "host bits are set: did you mean 10.0.0.0/8?", ""},
		{"inline rules on one line", pathLine + "deny = [{program = \"tool\"}, {program = \"gone\"}]\n", "exec.deny[1]", 3, `"gone": executable file not found`, ""},
		{"bad port", "[net]\nallow = [\n  {host = \"a.example\", ports = [\"80\"]},\n  {host = \"b.example\", ports = [\"9000-8000\"]},\n]\n", "net.allow[1]", 4, "range is reversed", ""},
		{"two targets", "[[net.deny]]\nhost = \"a.example\"\ncidr = \"10.0.0.0/8\"\n", "net.deny[0]", 1, "exactly one of Host, CIDR and Path", ""},
		{"unknown network", "[[net.allow]]\nhost = \"a.example\"\nnetwork = \"sctp\"\n", "net.allow[0]", 1, `unknown network "sctp"`, ""},
		{"host not canonical", "[[net.allow]]\nhost = \"API.example.com\"\n", "net.allow[0]", 1, "canonical form", ""},
	})
}

const execOperator = `# operator layer
[fs]
write_roots = ["$WORK"]

[exec]
path = ["$DIR/bin"]
env = ["LANG", "LC_*"]
timeout = "1m"
max_timeout = "5m"
output_limit = 1048576
deny_network = true
no_cgroup = true

[exec.limits]
cpu_seconds = 60

[[exec.allow]]
program = "tool"
args = ["build"]
env = ["TOOL_TOKEN"]

[[exec.allow]]
program = "tool"
args = ["test", "*"]

[[exec.allow]]
program = "other"

[[exec.deny]]
program = "tool"
args = ["--exec"]
`

func newExecLayerEnv(t *testing.T) (layerEnv, string) {
	t.Helper()
	e := newLayerEnv(t, execOperator)
	return e, progDir(t, e.dir+"/bin", "tool", "other", "third")
}

func TestLayersExecNarrow(t *testing.T) {
	e, bin := newExecLayerEnv(t)
	f, err := e.load(t, `# workspace layer
[exec]
path = ["$DIR/bin"]
env = ["LC_ALL"]
timeout = "30s"
no_cgroup = false
landlock_exec_any = false

[exec.limits]
cpu_seconds = 10
open_files = 256

[[exec.allow]]
program = "tool"
args = ["build", "--release"]
env = ["TOOL_TOKEN"]

[[exec.deny]]
program = "tool"
args = ["--verbose"]
`)
	if err != nil {
		t.Fatal(err)
	}
	p := f.Policy
	spec := p.Exec()
	if spec.Timeout != 30*time.Second || spec.MaxTimeout != 5*time.Minute || spec.NoCgroup || !spec.DenyNetwork ||
		spec.LandlockExecAny || spec.OutputLimit != 1<<20 || spec.Limits != (policy.ExecLimits{CPUSeconds: 10, OpenFiles: 256}) ||
		!reflect.DeepEqual(spec.Env, []string{"LC_ALL"}) {
		t.Errorf("effective exec settings %+v", spec)
	}
	tool := bin + "/tool"
	tests := []struct {
		prog    string
		argv    []string
		allowed bool
		tier    policy.Tier
		source  string
	}{
		{tool, []string{"tool", "build", "--release"}, true, policy.TierNone, e.ws + ":13"},
		{tool, []string{"tool", "build"}, false, policy.TierSoft, "builtin"},
		{tool, []string{"tool", "test", "x"}, false, policy.TierSoft, "builtin"},
		{bin + "/other", []string{"other"}, false, policy.TierSoft, "builtin"},
		{tool, []string{"tool", "build", "--release", "--exec=sh"}, false, policy.TierHard, e.op + ":29"},
		{tool, []string{"tool", "build", "--release", "--verbose"}, false, policy.TierHard, e.ws + ":18"},
	}
	for _, tt := range tests {
		d := p.CheckExec(tt.prog, tt.argv)
		if d.Allowed != tt.allowed || d.Tier != tt.tier || d.Rule.Source != tt.source {
			t.Errorf("%v: %+v by %v, want allowed=%v tier %v source %s", tt.argv, d, d.Rule, tt.allowed, tt.tier, tt.source)
		}
	}
	// The exactly named secret-looking variable passes for the workspace
	// rule, as it did for the operator rule it narrows.
	rule := p.CheckExec(tool, []string{"tool", "build", "--release"}).Rule
	if env, dropped := p.ExecEnv(policy.ExecEnvInput{Set: []string{"TOOL_TOKEN=x"}, Rules: []*policy.Rule{rule}}); !slices.Contains(env, "TOOL_TOKEN=x") {
		t.Errorf("TOOL_TOKEN not passed by the workspace rule (dropped %v)", dropped)
	}
}

func TestLayersExecKeepsOperatorAllows(t *testing.T) {
	e, bin := newExecLayerEnv(t)
	// No [[exec.allow]] key: the operator's allow rules stay; denies add.
	f, err := e.load(t, "[[exec.deny]]\nprogram = \"other\"\nargs = [\"rm\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	p := f.Policy
	if d := p.CheckExec(bin+"/tool", []string{"tool", "test", "x"}); !d.Allowed || d.Rule.Source != e.op+":22" {
		t.Errorf("operator allow lost: %+v %v", d, d.Rule)
	}
	if d := p.CheckExec(bin+"/other", []string{"other", "rm"}); d.Allowed || d.Tier != policy.TierHard || d.Rule.Source != e.ws+":1" {
		t.Errorf("workspace deny: %+v %v", d, d.Rule)
	}
	// An empty allow list allows nothing; the operator's deny stays.
	f, err = e.load(t, "[exec]\nallow = []\n")
	if err != nil {
		t.Fatal(err)
	}
	if d := f.Policy.CheckExec(bin+"/other", []string{"other"}); d.Allowed {
		t.Error("allow = [] kept the operator's allow rules")
	}
	if d := f.Policy.CheckExec(bin+"/tool", []string{"tool", "--exec"}); d.Tier != policy.TierHard || d.Rule.Source != e.op+":29" {
		t.Errorf("operator deny lost: %+v %v", d, d.Rule)
	}
}

func TestLayersExecRejectWidening(t *testing.T) {
	tests := []struct {
		name      string
		workspace string
		line      int
		key, msg  string
	}{
		{"program the operator does not allow", "\n[[exec.allow]]\nprogram = \"third\"\n", 2, "exec.allow[0]",
			`"third" (` + "$BIN" + `/third): the operator layer allows no rule for this program`},
		{"shorter argument prefix", "[[exec.allow]]\nprogram = \"tool\"\nargs = [\"test\"]\n", 1, "exec.allow[0]",
			`"tool test" (` + "$BIN" + `/tool): not within any operator allow rule for it ("tool build" at $OP:17, "tool test *" at $OP:22)`},
		{"no argument prefix", "[[exec.allow]]\nprogram = \"tool\"\n", 1, "exec.allow[0]", "not within any operator allow rule"},
		{"wildcard over a fixed token", "[[exec.allow]]\nprogram = \"tool\"\nargs = [\"*\", \"x\"]\n", 1, "exec.allow[0]", "not within any operator allow rule"},
		{"absolute path of another program", "[[exec.allow]]\nprogram = \"$DIR/bin/third\"\n", 1, "exec.allow[0]", "allows no rule for this program"},
		{"injection variable", "[[exec.allow]]\nprogram = \"tool\"\nargs = [\"build\"]\nenv = [\"GIT_SSH_COMMAND\"]\n", 1, "exec.allow[0]",
			`env "GIT_SSH_COMMAND" is not allowed by the operator's exec env nor by "tool build" at $OP:17`},
		{"path outside", "[exec]\npath = [\"$DIR/bin\", \"/usr/bin\"]\n", 2, "exec.path", `"/usr/bin" is not in the operator layer's exec path`},
		{"empty path means the default", "[exec]\npath = []\n", 2, "exec.path", `"/usr/local/sbin" is not in the operator layer's exec path`},
		{"env outside", "[exec]\nenv = [\"LANG\", \"PATH\"]\n", 2, "exec.env", `"PATH" is not allowed by the operator layer's exec env (LANG, LC_*)`},
		{"env prefix wider", "[exec]\nenv = [\"L*\"]\n", 2, "exec.env", `"L*" is not allowed`},
		{"timeout raised", "[exec]\ntimeout = \"2m\"\n", 2, "exec.timeout", "cannot raise it from 1m0s to 2m0s"},
		{"timeout removed", "[exec]\n\ntimeout = \"0s\"\n", 3, "exec.timeout", "cannot raise it from 1m0s to 0 (none)"},
		{"limit removed", "[exec.limits]\ncpu_seconds = 0\n", 2, "exec.limits.cpu_seconds", "cannot raise it from 60 to 0 (unlimited)"},
		{"output uncapped", "[exec]\noutput_limit = -1\n", 2, "exec.output_limit", "cannot raise it from 1048576 to -1 (no cap)"},
		{"switch loosened", "[exec]\ndeny_network = false\n", 2, "exec.deny_network", "cannot turn it off: the operator layer turns it on"},
		{"landlock off", "[exec]\nno_landlock = true\n", 2, "exec.no_landlock", "cannot turn it on"},
		{"exec any", "[exec]\n\nlandlock_exec_any = true\n", 3, "exec.landlock_exec_any", "cannot turn it on: the operator layer turns it off"},
		{"home moved", "[exec]\nhome = \"$WORK\"\n", 2, "exec.home", "cannot move it (operator: unset"},
		{"invalid workspace rule", "[[exec.deny]]\nprogram = \"./tool\"\n", 1, "exec.deny[0]", "relative program names are refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, bin := newExecLayerEnv(t)
			e.rejects(t, tt.workspace, tt.line, tt.key, strings.NewReplacer("$BIN", bin, "$OP", e.op).Replace(tt.msg))
		})
	}
}

// TestLayersExecAnyTurnedOff: an operator that lets children execute any
// program may be narrowed by a workspace layer back to the default.
func TestLayersExecAnyTurnedOff(t *testing.T) {
	for _, tt := range []struct {
		workspace string
		want      bool
	}{
		{"[exec]\nlandlock_exec_any = false\n", false},
		{"[exec]\nlandlock_exec_any = true\n", true},
		{"# nothing about exec\n", true},
	} {
		e := newLayerEnv(t, "[fs]\nwrite_roots = [\"$WORK\"]\n\n[exec]\nlandlock_exec_any = true\n")
		f, err := e.load(t, tt.workspace)
		if err != nil {
			t.Fatalf("%q: %v", tt.workspace, err)
		}
		if got := f.Policy.Exec().LandlockExecAny; got != tt.want {
			t.Errorf("%q: LandlockExecAny = %v, want %v", tt.workspace, got, tt.want)
		}
	}
}

// TestLayersExecTreeLimits: processes and memory load into ExecLimits and,
// like the rlimits, a workspace layer may only lower them.
func TestLayersExecTreeLimits(t *testing.T) {
	const operator = "[fs]\nwrite_roots = [\"$WORK\"]\n\n[exec.limits]\nprocesses = 256\nmemory = 268435456\n"
	tests := []struct {
		name      string
		workspace string
		want      policy.ExecLimits // when msg is ""
		key, msg  string
	}{
		{"kept", "# nothing about exec\n", policy.ExecLimits{Processes: 256, MemoryBytes: 256 << 20}, "", ""},
		{"processes lowered", "[exec.limits]\nprocesses = 64\n", policy.ExecLimits{Processes: 64, MemoryBytes: 256 << 20}, "", ""},
		{"memory lowered", "[exec.limits]\nmemory = 33554432\n", policy.ExecLimits{Processes: 256, MemoryBytes: 32 << 20}, "", ""},
		{"processes raised", "[exec.limits]\nprocesses = 1000\n", policy.ExecLimits{}, "exec.limits.processes", "cannot raise it from 256 to 1000"},
		{"processes removed", "[exec.limits]\nprocesses = 0\n", policy.ExecLimits{}, "exec.limits.processes", "cannot raise it from 256 to 0 (unlimited)"},
		{"memory raised", "[exec.limits]\nmemory = 1073741824\n", policy.ExecLimits{}, "exec.limits.memory", "cannot raise it from 268435456 to 1073741824"},
		{"memory removed", "[exec.limits]\nmemory = 0\n", policy.ExecLimits{}, "exec.limits.memory", "cannot raise it from 268435456 to 0 (unlimited)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newLayerEnv(t, operator)
			f, err := e.load(t, tt.workspace)
			if tt.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := f.Policy.Exec().Limits; got != tt.want {
					t.Errorf("limits = %+v, want %+v", got, tt.want)
				}
				return
			}
			if f != nil {
				t.Fatal("a widening workspace layer was loaded")
			}
			assertProblem(t, err, tt.key, 2, tt.msg, "")
		})
	}
}
