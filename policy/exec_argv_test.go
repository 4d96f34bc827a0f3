package policy_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// allowAll allows each program with any arguments: only deny rules, the
// built-in option tables among them, can refuse.
func allowAll(t testing.TB, progs ...string) *policy.Policy {
	t.Helper()
	var rules []policy.ExecRule
	for _, p := range progs {
		if _, err := policy.LookPath(p, policy.DefaultExecPath); err != nil {
			continue
		}
		rules = append(rules, policy.ExecRule{Program: p})
	}
	p, err := policy.New(policy.Spec{WriteRoots: []string{t.TempDir()}, Exec: policy.ExecSpec{Rules: rules}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOptionSpellings: a code-running option is refused in every spelling
// its tool accepts (categories 1-3 of the argv rules), and harmless
// neighbours stay allowed. The argv are real command lines; nothing runs.
func TestOptionSpellings(t *testing.T) {
	p := allowAll(t, "git", "tar", "sort", "ssh", "zip", "less", "ls", "cat", "grep")
	tests := []struct {
		name    string
		argv    []string
		allowed bool
	}{
		// 1. GNU and git long-option abbreviation.
		{"git fetch prefix", []string{"git", "fetch", "--upload-p=evil", "origin"}, false},
		{"git fetch prefix, separate value", []string{"git", "fetch", "--upload-pa", "evil", "origin"}, false},
		{"git grep pager prefix", []string{"git", "grep", "--open-files-in-pag=vi", "x"}, false},
		{"tar to-command prefix", []string{"tar", "-xf", "a.tar", "--to-comm=sh"}, false},
		{"tar checkpoint-action prefix", []string{"tar", "-cf", "a.tar", "--checkpoint-act=exec=sh", "."}, false},
		{"tar checkpoint is fine", []string{"tar", "-cf", "a.tar", "--checkpoint=10", "."}, true},
		{"tar ambiguous --check", []string{"tar", "-cf", "a.tar", "--check", "."}, false},
		{"sort compress-program prefix", []string{"sort", "--compress-prog=gzip", "f"}, false},
		{"sort compress prefix", []string{"sort", "--compress=x", "f"}, false},
		{"git negation is fine", []string{"git", "fetch", "--no-upload-pack", "origin"}, true},
		// 2. Clustered short options, old-style tar.
		{"tar -tvI prog", []string{"tar", "-tvI", "prog", "-f", "a.tar"}, false},
		{"tar -tvIprog", []string{"tar", "-tvIprog", "-f", "a.tar"}, false},
		{"tar old style tIf", []string{"tar", "tIf", "prog", "a.tar"}, false},
		{"tar old style tvf", []string{"tar", "tvf", "a.tar"}, true},
		{"tar -F", []string{"tar", "-cF", "script.sh", "-f", "a.tar", "."}, false},
		{"tar -f value is not an option", []string{"tar", "-tf", "I.tar"}, true},
		{"git grep -iOid", []string{"git", "grep", "-iOid", "x"}, false},
		{"git grep -iO", []string{"git", "grep", "-iO", "x"}, false},
		{"git grep -in", []string{"git", "grep", "-in", "x"}, true},
		{"git grep -e value", []string{"git", "grep", "-e", "O", "x"}, true},
		{"ssh cluster -vo", []string{"ssh", "-vo", "ProxyCommand=sh", "host"}, false},
		{"ssh -oProxyCommand", []string{"ssh", "-oProxyCommand=sh", "host"}, false},
		// 3. Sibling and short spellings from the tables.
		{"git clone -u", []string{"git", "clone", "-u", "sh -c id", "x", "d"}, false},
		{"git clone --config", []string{"git", "clone", "--config", "core.fsmonitor=sh", "x"}, false},
		{"git clone -c", []string{"git", "clone", "-c", "core.fsmonitor=sh", "x"}, false},
		{"git clone --template", []string{"git", "clone", "--template=/tmp/t", "x"}, false},
		{"git clone plain", []string{"git", "clone", "--depth", "1", "x", "d"}, true},
		{"git rebase -x", []string{"git", "rebase", "-x", "make", "main"}, false},
		{"git rebase --exec=", []string{"git", "rebase", "--exec=make", "main"}, false},
		{"git -c", []string{"git", "-c", "core.pager=sh", "log"}, false},
		{"git --exec-path=", []string{"git", "--exec-path=/tmp", "status"}, false},
		{"git --git-dir", []string{"git", "--git-dir", "/tmp/x", "status"}, false},
		{"git -C dir status", []string{"git", "-C", "d", "status"}, true},
		{"git log -c is a diff format", []string{"git", "log", "-c"}, true},
		{"git difftool", []string{"git", "difftool"}, false},
		{"git submodule foreach", []string{"git", "submodule", "foreach", "id"}, false},
		{"git bisect run", []string{"git", "bisect", "run", "./t.sh"}, false},
		{"git diff --ext-diff", []string{"git", "diff", "--ext"}, false},
		{"git push --receive-pack", []string{"git", "push", "--receive-p=x", "o"}, false},
		{"git unknown alias scans every section", []string{"git", "myalias", "--upload-pack=x"}, false},
		{"zip -TT", []string{"zip", "a.zip", "f", "-T", "-TT", "sh -c id"}, false},
		{"zip -T", []string{"zip", "a.zip", "f", "-T"}, true},
		{"less -k", []string{"less", "-kkeys", "f"}, false},
		{"ls -la", []string{"ls", "-la", "--color=never"}, true},
		{"grep -rn", []string{"grep", "-rn", "--include=*.go", "x"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := policy.LookPath(tt.argv[0], policy.DefaultExecPath)
			if err != nil {
				t.Skipf("%s not installed", tt.argv[0])
			}
			prog, _ = filepath.EvalSymlinks(prog)
			d := p.CheckExec(prog, tt.argv)
			if d.Allowed != tt.allowed {
				t.Fatalf("%q: allowed=%v (%v %s), want %v", tt.argv, d.Allowed, d.Rule, d.Detail, tt.allowed)
			}
			if !d.Allowed && (d.Tier != policy.TierHard || !strings.HasPrefix(d.Rule.Source, "builtin (")) {
				t.Fatalf("%q: denied by %v tier %v, want a built-in hard denial", tt.argv, d.Rule, d.Tier)
			}
		})
	}
}

// TestDenyRuleSpellings: a deny rule written with one spelling of an
// option catches the others.
func TestDenyRuleSpellings(t *testing.T) {
	dir := t.TempDir()
	p, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{
		{Program: "git"},
		{Program: "git", Args: []string{"--depth"}, Deny: true, Match: [][]string{{"clone", "--dep=1", "x"}}},
		{Program: "grep"},
		{Program: "grep", Args: []string{"--recursive"}, Deny: true,
			Match: [][]string{{"-r", "x"}, {"-inr", "x"}, {"--recur", "x"}}, NoMatch: [][]string{{"-e", "-r", "x"}, {"-i", "x"}}},
		{Program: "head"},
		{Program: "head", Args: []string{"-n"}, Deny: true, Match: [][]string{{"--lines=3"}, {"-qn3"}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.CheckExec(real(t, "grep"), []string{"grep", "-ril", "x"}); d.Allowed {
		t.Fatalf("grep -ril allowed: %+v", d)
	}
}

// TestAllowRuleNamesOption: an allow rule that names a code-running
// option in its Args lets it through for that rule only.
func TestAllowRuleNamesOption(t *testing.T) {
	git := real(t, "git")
	p, err := policy.New(policy.Spec{WriteRoots: []string{t.TempDir()}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{
		{Program: "git", Args: []string{"-c", "core.pager=cat", "log"}},
		{Program: "git", Args: []string{"status"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.CheckExec(git, []string{"git", "-c", "core.pager=cat", "log"}); !d.Allowed {
		t.Fatalf("named option refused: %+v %v", d, d.Rule)
	}
	if d := p.CheckExec(git, []string{"git", "-c", "core.pager=sh", "status"}); d.Allowed {
		t.Fatalf("unnamed -c allowed")
	}
}

// TestMulticallApplets: rules for applets of one multicall binary stay
// apart. The binary is a copy of /bin/true named busybox in a temp dir;
// nothing runs.
func TestMulticallApplets(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "busybox"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"ls", "wget", "tar"} {
		if err := os.Symlink("busybox", filepath.Join(bin, a)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{Path: []string{bin}, Rules: []policy.ExecRule{
		{Program: "ls"}, {Program: "tar"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	bb := filepath.Join(bin, "busybox")
	bb, _ = filepath.EvalSymlinks(bb)
	tests := []struct {
		argv    []string
		allowed bool
	}{
		{[]string{"ls", "-l"}, true},
		{[]string{filepath.Join(bin, "ls")}, true},
		{[]string{"wget", "http://x"}, false},
		{[]string{"busybox", "wget", "http://x"}, false},
		{[]string{"busybox", "ls"}, true},
		{[]string{"busybox"}, false},
		{[]string{"tar", "tIf", "prog", "a.tar"}, false},
		{[]string{"busybox", "tar", "-xf", "a.tar", "--to-command=sh"}, false},
		{[]string{"tar", "-xf", "a.tar"}, true},
	}
	for _, tt := range tests {
		if d := p.CheckExec(bb, tt.argv); d.Allowed != tt.allowed {
			t.Errorf("%q: allowed=%v (%v), want %v", tt.argv, d.Allowed, d.Rule, tt.allowed)
		}
	}
}

// TestToolTables: every table loads, names its version and source, and
// every risk of exec_risks.go names an option the tables list.
func TestToolTables(t *testing.T) {
	tools := policy.Tools()
	if len(tools) < 10 {
		t.Fatalf("only %d tool tables", len(tools))
	}
	for _, tl := range tools {
		if tl.Version == "" || tl.Main == nil || tl.Main.Source == "" {
			t.Errorf("%s: version %q, main section %v", tl.Name, tl.Version, tl.Main)
		}
	}
	for _, name := range []string{"git", "tar", "rg", "sort", "ssh", "zip"} {
		if tl := policy.ToolNamed(name); tl == nil || len(tl.DeniedOptions()) == 0 {
			t.Errorf("%s: no denied options", name)
		}
	}
}

// TestGoOptionSpellings: the go command's flags that run a named program
// are refused in every spelling its flag package accepts (-name, --name,
// =value or the next word), in any subcommand, while everyday builds and
// tests stay allowed. Nothing runs.
func TestGoOptionSpellings(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	real, err := filepath.EvalSymlinks(goBin)
	if err != nil {
		t.Skipf("no go binary at %s", goBin)
	}
	p, err := policy.New(policy.Spec{WriteRoots: []string{t.TempDir()}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: real}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		argv    []string
		allowed bool
	}{
		{[]string{"go", "build", "-toolexec", "/tmp/x", "."}, false},
		{[]string{"go", "build", "-toolexec=/tmp/x", "."}, false},
		{[]string{"go", "build", "--toolexec=/tmp/x", "."}, false},
		{[]string{"go", "test", "-exec", "/tmp/x", "./..."}, false},
		{[]string{"go", "run", "-exec=/tmp/x", "."}, false},
		{[]string{"go", "vet", "-vettool=/tmp/x", "./..."}, false},
		{[]string{"go", "build", "-compiler", "gccgo", "."}, false},
		{[]string{"go", "test", "-run", "exec", "-count=1", "./..."}, true},
		{[]string{"go", "test", "-v", "-race", "-run=TestToolexec", "."}, true},
		{[]string{"go", "build", "-o", "bin/x", "-ldflags=-s -w", "-trimpath", "."}, true},
		{[]string{"go", "vet", "./..."}, true},
		{[]string{"go", "run", ".", "-exec"}, false}, // a program argument that spells a denied flag: refused, conservatively
	} {
		if d := p.CheckExec(real, tt.argv); d.Allowed != tt.allowed {
			t.Errorf("%q: allowed=%v (%v), want %v", tt.argv, d.Allowed, d.Rule, tt.allowed)
		}
	}
}
