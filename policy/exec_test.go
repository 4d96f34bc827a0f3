package policy_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// osResolver resolves against the real filesystem, as procguard does.
type osResolver struct {
	path []string
	dir  string
}

func (r osResolver) Program(name string) (string, error) {
	f, err := policy.LookPath(name, r.path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(f)
}

func (r osResolver) ProgramIn(name string, path []string) (string, error) {
	f, err := policy.LookPath(name, path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(f)
}

func (r osResolver) Path(name string) (string, error) {
	return policy.Resolve(policy.OSFS{}, name, r.dir, true)
}

func real(t testing.TB, name string) string {
	t.Helper()
	f, err := policy.LookPath(name, policy.DefaultExecPath)
	if err != nil {
		t.Skipf("%s not installed: %v", name, err)
	}
	r, err := filepath.EvalSymlinks(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func gitPolicy(t testing.TB, dir string) *policy.Policy {
	t.Helper()
	p, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{
		{Program: "git", Args: []string{"status"}, Match: [][]string{{"status", "-s"}}, NoMatch: [][]string{{"statusx"}, {"-C", "x", "status"}}},
		{Program: "git", Args: []string{"diff"}},
		{Program: "git", Args: []string{"push"}, Deny: true, Source: "team.toml:3"},
		{Program: "git", Args: []string{"-c"}, Deny: true, Match: [][]string{{"-C", "d", "-c", "x=y", "status"}, {"-cx=y"}}},
		{Program: "git", Args: []string{"--output"}, Deny: true, Match: [][]string{{"diff", "--output=/etc/x"}}},
		{Program: "true"},
		{Program: "echo"},
		{Program: "ls", Args: []string{"-l"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckExecRules(t *testing.T) {
	git, tru, ls := real(t, "git"), real(t, "true"), real(t, "ls")
	p := gitPolicy(t, t.TempDir())
	tests := []struct {
		prog    string
		argv    []string
		allowed bool
		tier    policy.Tier
		pattern string
	}{
		{git, []string{"git", "status"}, true, policy.TierNone, "git status"},
		{git, []string{"git", "status", "-s"}, true, policy.TierNone, "git status"},
		{git, []string{"git", "diff", "HEAD"}, true, policy.TierNone, "git diff"},
		{git, []string{"git", "log"}, false, policy.TierSoft, "programs need an exec rule"},
		{git, []string{"git", "statusx"}, false, policy.TierSoft, "programs need an exec rule"},
		{git, []string{"git"}, false, policy.TierSoft, "programs need an exec rule"},
		{git, []string{"git", "push"}, false, policy.TierHard, "deny git push"},
		{git, []string{"git", "-c", "core.pager=evil", "status"}, false, policy.TierHard, "deny git -c"},
		{git, []string{"git", "diff", "--output=/tmp/x"}, false, policy.TierHard, "deny git --output"},
		{git, []string{"git", "-C", ".", "push"}, false, policy.TierHard, "deny git push"},
		{tru, []string{"true", "anything"}, true, policy.TierNone, "true"},
		{ls, []string{"ls"}, false, policy.TierSoft, "programs need an exec rule"},
		{ls, []string{"ls", "-l", "/"}, true, policy.TierNone, "ls -l"},
		{"/no/such/prog", []string{"prog"}, false, policy.TierSoft, "programs need an exec rule"},
		{"relative/prog", []string{"prog"}, false, policy.TierInvalid, "exec needs an absolute, resolved program"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			d := p.CheckExec(tt.prog, tt.argv)
			if d.Allowed != tt.allowed || d.Tier != tt.tier || d.Rule.Pattern != tt.pattern {
				t.Fatalf("got %+v (%v), want allowed=%v tier=%v rule %q", d, d.Rule, tt.allowed, tt.tier, tt.pattern)
			}
			if d.Rule.Kind != policy.KindExec && d.Rule.Kind != policy.KindInvalid {
				t.Fatalf("rule kind %v", d.Rule.Kind)
			}
		})
	}
	if d := p.CheckExec(git, []string{"git", "push"}); d.Rule.Source != "team.toml:3" {
		t.Fatalf("provenance %q", d.Rule.Source)
	}
	if d := p.CheckExec(git, []string{"git", "status"}); d.Rule.Source != "code" {
		t.Fatalf("default provenance %q", d.Rule.Source)
	}
}

func TestExecRuleBuildErrors(t *testing.T) {
	tests := []struct {
		name string
		spec policy.ExecSpec
		want string
	}{
		{"relative program", policy.ExecSpec{Rules: []policy.ExecRule{{Program: "./tool"}}}, "relative program names"},
		{"missing program", policy.ExecSpec{Rules: []policy.ExecRule{{Program: "no-such-program-xyz"}}}, "not found"},
		{"relative PATH", policy.ExecSpec{Path: []string{"bin", "/usr/bin"}}, "PATH entries must be absolute"},
		{"example fails", policy.ExecSpec{Rules: []policy.ExecRule{{Program: "git", Args: []string{"status"}, Match: [][]string{{"log"}}}}}, `example ["log"] does not match`},
		{"counter-example matches", policy.ExecSpec{Rules: []policy.ExecRule{{Program: "git", Args: []string{"push"}, Deny: true, NoMatch: [][]string{{"-C", "x", "push"}}}}}, "counter-example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.New(policy.Spec{Exec: tt.spec})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			var ee *policy.EntryError
			if !errors.As(err, &ee) {
				t.Fatalf("not an EntryError: %T", err)
			}
		})
	}
}

func TestSymlinkedRuleJudgedByTarget(t *testing.T) {
	bin := t.TempDir()
	if err := os.Symlink(real(t, "true"), filepath.Join(bin, "harmless")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real(t, "rm"), filepath.Join(bin, "tidy")); err != nil {
		t.Fatal(err)
	}
	p, err := policy.New(policy.Spec{Exec: policy.ExecSpec{Path: []string{bin, "/usr/bin", "/bin"},
		Rules: []policy.ExecRule{{Program: "harmless"}}}})
	if err != nil {
		t.Fatal(err)
	}
	r := osResolver{path: p.ExecPath(), dir: "/"}
	for name, want := range map[string]bool{"true": true, "harmless": true, "tidy": false, "rm": false} {
		prog, err := r.Program(name)
		if err != nil {
			t.Fatal(err)
		}
		if d := p.CheckExec(prog, []string{name}); d.Allowed != want {
			t.Errorf("%s (%s): allowed=%v want %v", name, prog, d.Allowed, want)
		}
	}
}

func TestPlanExec(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	p := gitPolicy(t, dir)
	r := osResolver{path: p.ExecPath(), dir: dir}
	tests := []struct {
		argv    []string
		allowed bool
		tier    policy.Tier
		opaque  bool
	}{
		{[]string{"sh", "-c", "git status && git diff"}, true, 0, false},
		{[]string{"bash", "-lc", "git status; echo done | true"}, true, 0, false},
		{[]string{"sh", "-c", "git status && git push"}, false, policy.TierHard, false},
		{[]string{"sh", "-c", "git status || rm -rf /"}, false, policy.TierSoft, false},
		{[]string{"sh", "-c", "echo $(id)"}, false, policy.TierHard, true},
		{[]string{"sh", "-c", "echo $HOME"}, false, policy.TierHard, true},
		{[]string{"sh", "-c", "(git status)"}, false, policy.TierHard, true},
		{[]string{"sh", "-c", "eval git status"}, false, policy.TierHard, true},
		{[]string{"sh", "-c", "f() { git push; }; f"}, false, policy.TierHard, true},
		{[]string{"sh", "-c", "FOO=1 git status"}, true, 0, false},
		{[]string{"sh", "-c", "GIT_SSH_COMMAND=sh git status"}, false, policy.TierHard, false},
		{[]string{"sh", "-c", "export LD_PRELOAD=/x.so; git status"}, false, policy.TierHard, false},
		{[]string{"sh", "-c", "PATH=/tmp git status"}, false, policy.TierHard, true},
		{[]string{"bash", "-c", "export PATH=/tmp; git status"}, false, policy.TierHard, true},
		{[]string{"bash", "-c", "declare PATH=/tmp; git status"}, false, policy.TierHard, true},
		{[]string{"bash", "-c", "printf -v PATH %s /tmp; git status"}, false, policy.TierHard, true},
		{[]string{"sh", "-c", ":"}, true, 0, false},
		{[]string{"sh", "-c", "exit 3"}, true, 0, false},
		{[]string{"sh", "-c", "true"}, true, 0, false},
		{[]string{"sh", "-c", "echo x"}, true, 0, false},
		{[]string{"sh", "-c", "test -f a"}, true, 0, false},
		{[]string{"sh", "-c", "[ -f a ]"}, true, 0, false},
		{[]string{"sh", "-c", "[ -f a ] && git status"}, true, 0, false},
		{[]string{"sh", "-c", "exec git status"}, false, policy.TierHard, true},
		{[]string{"sh", "-c", ". ./x.sh"}, false, policy.TierHard, true},
		{[]string{"sh", "-c", "command git push"}, false, policy.TierHard, true},
		{[]string{"env", "PATH=" + outside, "git", "status"}, false, policy.TierSoft, false},
		{[]string{"env", "-i", "git", "status"}, true, 0, false},
		{[]string{"env", "PATH=rel", "git", "status"}, false, policy.TierHard, true},
		{[]string{"xargs", "-e", "git", "push"}, false, policy.TierHard, false},
		{[]string{"xargs", "-l", "git", "status"}, false, policy.TierHard, false},
		{[]string{"xargs", "-eEOF", "echo"}, true, 0, false},
		{[]string{"xargs", "-i", "echo"}, false, policy.TierHard, true},
		{[]string{"sh", "-c", "git status; env PATH=" + outside + " git status"}, false, policy.TierSoft, false},
		{[]string{"sh", "-c", "git status &"}, false, policy.TierHard, true},
		{[]string{"sh", "-c", "ls *"}, false, policy.TierHard, true},
		{[]string{"sh", "-c", "echo hi > out.txt"}, true, 0, false},
		{[]string{"sh", "-c", "echo hi > " + outside + "/f"}, false, policy.TierSoft, false},
		{[]string{"sh", "-c", "echo hi 2>/dev/null >&2"}, true, 0, false},
		{[]string{"sh", "-c", "echo hi > .git/hooks/pre-commit"}, false, policy.TierHard, false},
		{[]string{"sh", "script.sh"}, false, policy.TierHard, true},
		{[]string{"env", "git", "status"}, true, 0, false},
		{[]string{"env", "LD_PRELOAD=/x.so", "git", "status"}, false, policy.TierHard, false},
		{[]string{"env", "-S", "git status"}, false, policy.TierHard, true},
		{[]string{"timeout", "-k", "1", "5", "git", "status"}, true, 0, false},
		{[]string{"timeout", "5", "git", "push"}, false, policy.TierHard, false},
		{[]string{"nice", "-n", "5", "nohup", "setsid", "git", "diff"}, true, 0, false},
		{[]string{"xargs", "git", "status"}, false, policy.TierHard, false}, // git has deny rules
		{[]string{"xargs", "echo"}, true, 0, false},
		{[]string{"find", ".", "-exec", "git", "push", ";"}, false, policy.TierHard, false}, // strictest: the deny beats find having no rule
		{[]string{"sudo", "git", "status"}, false, policy.TierSoft, false},
		{[]string{"sh", "-c", "env sh -c 'git status && git push'"}, false, policy.TierHard, false},
		{[]string{"sh", "-c", "./evil"}, false, policy.TierInvalid, false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			pl := policy.PlanExec(r, tt.argv[0], tt.argv)
			req := &policy.ExecRequest{Plan: pl, Dir: dir, Cwd: dir}
			d := req.Decide(p)
			if d.Allowed != tt.allowed || (!tt.allowed && d.Tier != tt.tier) {
				t.Fatalf("got %+v (%v), want allowed=%v tier=%v; plan %+v", d, d.Rule, tt.allowed, tt.tier, pl)
			}
			if (pl.Opaque != "") != tt.opaque {
				t.Fatalf("opaque = %q, want %v", pl.Opaque, tt.opaque)
			}
		})
	}
}

func TestExecDir(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	p := gitPolicy(t, dir)
	r := osResolver{path: p.ExecPath(), dir: dir}
	pl := policy.PlanExec(r, "true", []string{"true"})
	if d := (&policy.ExecRequest{Plan: pl, Dir: other, Cwd: "/"}).Decide(p); d.Allowed || d.Tier != policy.TierSoft {
		t.Fatalf("dir outside write roots: %+v", d)
	}
	if d := (&policy.ExecRequest{Plan: pl, Dir: filepath.Join(dir, "sub"), Cwd: "/"}).Decide(p); !d.Allowed || d.Rule.Pattern != "true" {
		t.Fatalf("dir inside: %+v %v", d, d.Rule)
	}
	if d := (&policy.ExecRequest{Plan: pl, Dir: dir, Cwd: "/", Invalid: "relative PATH entry"}).Decide(p); d.Tier != policy.TierInvalid {
		t.Fatalf("invalid: %+v", d)
	}
}

func TestExecEnv(t *testing.T) {
	dir := t.TempDir()
	p, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{
		Env:   []string{"CI", "MY_*"},
		Rules: []policy.ExecRule{{Program: "git", Env: []string{"GIT_SSH_COMMAND"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	host := []string{"PATH=/evil:/usr/bin", "HOME=/root", "LD_PRELOAD=/x.so", "GH_TOKEN=t", "CI=1", "MY_A=a",
		"OTHER=o", "LANG=en_US.UTF-8", "GIT_SSH_COMMAND=ssh -i k"}
	env, _ := p.ExecEnv(policy.ExecEnvInput{Host: host, Home: dir, Tmp: dir})
	want := []string{"PATH=" + strings.Join(policy.DefaultExecPath, ":"), "HOME=" + dir, "TMPDIR=" + dir,
		"LANG=en_US.UTF-8", "TERM=dumb", "CI=1", "MY_A=a"}
	if strings.Join(env, "\n") != strings.Join(want, "\n") {
		t.Fatalf("inherited env:\n%s\nwant:\n%s", strings.Join(env, "\n"), strings.Join(want, "\n"))
	}
	gitRule := p.CheckExec(real(t, "git"), []string{"git"}).Rule
	env, dropped := p.ExecEnv(policy.ExecEnvInput{Host: host, Set: host, Home: dir, Tmp: dir, Rules: []*policy.Rule{gitRule}})
	got := strings.Join(env, " ")
	for _, bad := range []string{"LD_PRELOAD", "GH_TOKEN", "/evil", "HOME=/root"} {
		if strings.Contains(got, bad) {
			t.Errorf("%s reached the env: %s", bad, got)
		}
	}
	for _, good := range []string{"GIT_SSH_COMMAND=ssh -i k", "CI=1", "MY_A=a"} {
		if !strings.Contains(got, good) {
			t.Errorf("%s missing: %s", good, got)
		}
	}
	// Copied from the host: OTHER is inherited, not set, and the policy
	// does not name it.
	if strings.Join(dropped, ",") != "LD_PRELOAD,GH_TOKEN,OTHER" {
		t.Errorf("dropped = %v", dropped)
	}
	set := append(append([]string(nil), host...), "OTHER=mine", "npm_config_script_shell=/x", "Http_Proxy=h", "TAR_OPTIONS=-I sh")
	env, dropped = p.ExecEnv(policy.ExecEnvInput{Host: host, Set: set, Home: dir, Tmp: dir, Rules: []*policy.Rule{gitRule}})
	if got := strings.Join(env, " "); !strings.Contains(got, "OTHER=mine") || strings.Contains(got, "npm_config") || strings.Contains(got, "Http_Proxy") || strings.Contains(got, "TAR_OPTIONS") {
		t.Errorf("set env: %s (dropped %v)", got, dropped)
	}
	for _, n := range []string{"LD_PRELOAD", "DYLD_INSERT_LIBRARIES", "BASH_ENV", "ENV", "PYTHONPATH", "NODE_OPTIONS", "GIT_CONFIG_COUNT", "GIT_SSH_COMMAND",
		"GIT_COMMON_DIR", "GIT_ALLOW_PROTOCOL", "TAR_OPTIONS", "RIPGREP_CONFIG_PATH", "ZIPOPT", "GIT_SSL_CAINFO", "AWS_CA_BUNDLE",
		"NIX_SSL_CERT_FILE", "npm_config_script_shell", "https_proxy", "Ftp_Proxy", "ld_preload"} {
		if !policy.IsInjectionVar(n) {
			t.Errorf("%s not an injection variable", n)
		}
	}
	for _, n := range []string{"GH_TOKEN", "aws_secret_access_key", "API_KEY", "DB_PASSWORD"} {
		if !policy.IsSecretVar(n) {
			t.Errorf("%s not secret-looking", n)
		}
	}
	for _, n := range []string{"GIT_AUTHOR_NAME", "CI", "LANG", "MY_VAR"} {
		if policy.IsInjectionVar(n) {
			t.Errorf("%s taken for an injection variable", n)
		}
	}
}

func TestCheckExecNoAllocs(t *testing.T) {
	git := real(t, "git")
	p := gitPolicy(t, t.TempDir())
	argv := []string{"git", "-C", "x", "diff", "HEAD"}
	if n := testing.AllocsPerRun(100, func() { p.CheckExec(git, argv) }); n != 0 {
		t.Fatalf("CheckExec allocates %v", n)
	}
	dir := t.TempDir()
	pl := policy.PlanExec(osResolver{path: p.ExecPath(), dir: dir}, "sh", []string{"sh", "-c", "git status && git diff > out.txt"})
	req := &policy.ExecRequest{Plan: pl, Dir: dir, Cwd: dir}
	if n := testing.AllocsPerRun(100, func() { req.Decide(p) }); n != 0 {
		t.Fatalf("ExecRequest.Decide allocates %v", n)
	}
}

func BenchmarkCheckExec(b *testing.B) {
	git := real(b, "git")
	p := gitPolicy(b, b.TempDir())
	argv := []string{"git", "diff", "--stat", "HEAD"}
	for b.Loop() {
		p.CheckExec(git, argv)
	}
}

func FuzzPlanExec(f *testing.F) {
	f.Add("git status && git diff | true; echo x > y")
	f.Add("f() { :; }; $(x) `y` ${z} <<EOF\nEOF")
	p, err := policy.New(policy.Spec{WriteRoots: []string{f.TempDir()}})
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, script string) {
		pl := policy.PlanExec(osResolver{path: p.ExecPath(), dir: dir}, "sh", []string{"sh", "-c", script})
		if d := (&policy.ExecRequest{Plan: pl, Dir: dir, Cwd: dir}).Decide(p); d.Allowed && (len(pl.Commands) > 0 || !pl.Builtins) {
			// Only a script of builtins (":", "echo x") runs no program.
			t.Fatalf("a policy without exec rules allowed %q (%+v)", script, pl)
		}
	})
}

// TestRedirectOutsideRootsJudgedAsShell: a redirection outside the roots
// makes the script judged as the shell itself, while a protected target
// stays a hard denial whatever the shell rule says.
func TestRedirectOutsideRootsJudgedAsShell(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	withShell, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: "cat"}, {Program: "sh"}}}})
	if err != nil {
		t.Fatal(err)
	}
	noShell, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: "cat"}}}})
	if err != nil {
		t.Fatal(err)
	}
	r := osResolver{path: policy.DefaultExecPath, dir: dir}
	tests := []struct {
		script    string
		p         *policy.Policy
		allowed   bool
		tier      policy.Tier
		rule      string
		detailHas string
	}{
		{"cat x > " + outside + "/f", withShell, true, 0, "cat", ""},
		{"cat x > " + outside + "/f", noShell, false, policy.TierSoft, "programs need an exec rule", "judged as the shell"},
		{"cat x > .git/hooks/pre-commit", withShell, false, policy.TierHard, ".git/hooks", "redirection target"},
		{"echo x > .git/hooks/pre-commit", noShell, false, policy.TierHard, ".git/hooks", "redirection target"},
		{"for f in a; do cat $f; done > .git/hooks/pre-commit", withShell, false, policy.TierHard, ".git/hooks", "redirection target"},
		{"(cat x) >> .bashrc", withShell, false, policy.TierHard, ".bashrc", "redirection target"},
		{"cat x 3> .git/hooks/post-merge", withShell, false, policy.TierHard, ".git/hooks", "redirection target"},
		{"cat x > $OUT", withShell, false, policy.TierHard, "computed redirection targets could name a protected file", ""},
		{"cat x > ~/.bashrc", withShell, false, policy.TierHard, "computed redirection targets could name a protected file", ""},
		{"cat < /etc/hostname > out", noShell, true, 0, "cat", ""},
	}
	for _, tt := range tests {
		pl := policy.PlanExec(r, "sh", []string{"sh", "-c", tt.script})
		d := (&policy.ExecRequest{Plan: pl, Dir: dir, Cwd: dir}).Decide(tt.p)
		if d.Allowed != tt.allowed || d.Tier != tt.tier || d.Rule.Pattern != tt.rule || !strings.Contains(d.Detail, tt.detailHas) {
			t.Errorf("%q: %+v (%v)", tt.script, d, d.Rule)
		}
	}
}

func FuzzPlanWrappers(f *testing.F) {
	f.Add("env", "-u", "X", "true")
	f.Add("timeout", "-k", "1", "5")
	f.Add("xargs", "-n1", "-0", "echo")
	f.Add("find", ".", "-exec", ";")
	f.Add("sudo", "-u", "root", "--")
	// Only echo is allowed; wrappers must never let anything else through.
	p, err := policy.New(policy.Spec{WriteRoots: []string{f.TempDir()}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: "echo"}}}})
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	r := osResolver{path: p.ExecPath(), dir: dir}
	f.Fuzz(func(t *testing.T, w, a, b, c string) {
		argv := []string{w, a, b, c}
		pl := policy.PlanExec(r, w, argv)
		d := (&policy.ExecRequest{Plan: pl, Dir: dir, Cwd: dir}).Decide(p)
		if !d.Allowed {
			return
		}
		for _, cmd := range pl.Commands {
			if filepath.Base(cmd.Program) != "echo" {
				t.Fatalf("%q allowed running %q", argv, cmd.Argv)
			}
		}
	})
}

func TestExecEnvPrefixNeverPassesSecrets(t *testing.T) {
	p, err := policy.New(policy.Spec{Exec: policy.ExecSpec{Env: []string{"*", "EXACT_TOKEN"}}})
	if err != nil {
		t.Fatal(err)
	}
	host := []string{"A=1", "LD_PRELOAD=x", "MY_TOKEN=t", "EXACT_TOKEN=e"}
	env, _ := p.ExecEnv(policy.ExecEnvInput{Host: host, Home: "/h", Tmp: "/t"})
	got := strings.Join(env, " ")
	if !strings.Contains(got, "A=1") || !strings.Contains(got, "EXACT_TOKEN=e") || strings.Contains(got, "LD_PRELOAD") || strings.Contains(got, "MY_TOKEN") {
		t.Fatalf("env %s", got)
	}
}

func TestCodeRunningFlagRules(t *testing.T) {
	git := real(t, "git")
	rules := append([]policy.ExecRule{{Program: "git", Args: []string{"diff"}}}, policy.CodeRunningFlagRules(nil)...)
	p, err := policy.New(policy.Spec{Exec: policy.ExecSpec{Rules: rules}})
	if err != nil {
		t.Fatal(err)
	}
	for argv, want := range map[string]bool{
		"git diff":                       true,
		"git diff --ext-diff":            false,
		"git diff --output=/etc/passwd":  false,
		"git -c core.pager=sh diff":      false,
		"git diff --open-files-in-pager": false,
	} {
		d := p.CheckExec(git, strings.Fields(argv))
		if d.Allowed != want || (!want && (d.Tier != policy.TierHard || d.Rule.Source != "builtin")) {
			t.Errorf("%s: %+v %v", argv, d, d.Rule)
		}
	}
}
