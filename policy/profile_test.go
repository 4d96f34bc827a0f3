package policy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
)

// TestProfilesExpand: `use` brings each toolchain's programs, the helper
// directories the tool reports, and its variables, each with provenance;
// the helpers are then allowed, the code-running options still denied.
func TestProfilesExpand(t *testing.T) {
	for _, p := range []string{"git", "go"} {
		if _, err := policy.LookPath(p, append(policy.DefaultExecPath, filepath.SplitList(os.Getenv("PATH"))...)); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "p.toml")
	text := "use = [\"git@1\", \"go@1\", \"coreutils\", \"make\"]\n\n[fs]\nwrite_roots = [\"" + dir + "\"]\n\n[exec]\ncache_dir = \"" + dir + "/cache\"\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := policyfile.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	items := pol.ProfileItems()
	find := func(kind policy.ProfileItemKind, profile, value string) *policy.ProfileItem {
		for i := range items {
			if items[i].Kind == kind && items[i].Profile == profile && strings.Contains(items[i].Value, value) {
				return &items[i]
			}
		}
		t.Errorf("no %s item %q of %s in %+v", kind, value, profile, items)
		return nil
	}
	if it := find(policy.ProfileHelperDir, "git@1", "git-core"); it != nil {
		if it.From != "git --exec-path" || !strings.HasPrefix(it.Source, file+":1 profile git@1 (git --exec-path = ") {
			t.Errorf("git-core provenance: %+v", it)
		}
	}
	find(policy.ProfileHelperDir, "go@1", "/pkg/tool/")
	find(policy.ProfileEnvSet, "go@1", "GOCACHE="+dir+"/cache/go-build")
	find(policy.ProfileEnvSet, "go@1", "GOENV=off")
	find(policy.ProfileEnvPass, "git@1", "GIT_AUTHOR_NAME")
	find(policy.ProfileProgram, "make@1", "/bin/sh")

	// Helpers are allowed by the directory rule; options that run code are not.
	gitCore := strings.TrimPrefix(find(policy.ProfileHelperDir, "git@1", "git-core").Value, "")
	helper := filepath.Join(gitCore, "git-upload-pack")
	if real, err := filepath.EvalSymlinks(helper); err == nil {
		if d := pol.CheckExec(real, []string{helper, "."}); !d.Allowed {
			t.Errorf("git helper %s: %v", real, d)
		}
	}
	git, _ := filepath.EvalSymlinks(mustLook(t, "git"))
	if d := pol.CheckExec(git, []string{"git", "-c", "core.pager=sh", "log"}); d.Allowed {
		t.Error("git -c core.pager allowed under the git profile")
	}
	if d := pol.CheckExec(git, []string{"git", "-c", "user.name=A", "commit", "-m", "x"}); !d.Allowed {
		t.Errorf("git -c user.name: %v", d)
	}
	env, _ := pol.ExecEnv(policy.ExecEnvInput{Host: []string{"GOFLAGS=-toolexec=/x", "GOCACHE=/elsewhere", "GIT_AUTHOR_NAME=A"}, Home: dir, Tmp: dir})
	got := strings.Join(env, " ")
	for _, want := range []string{"GOCACHE=" + dir + "/cache/go-build", "GOTOOLCHAIN=local", "GIT_AUTHOR_NAME=A"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s missing from %s", want, got)
		}
	}
	if strings.Contains(got, "GOFLAGS") || strings.Contains(got, "/elsewhere") {
		t.Errorf("host go variables leaked: %s", got)
	}
}

func mustLook(t *testing.T, name string) string {
	t.Helper()
	p, err := policy.LookPath(name, policy.DefaultExecPath)
	if err != nil {
		t.Skipf("%s is not installed", name)
	}
	return p
}

// TestProfileFileErrors: unknown profiles, a workspace layer's use, and a
// profile without a cache directory fail the load with positions.
func TestProfileFileErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		text, want string
	}{
		{"use = [\"gti\"]\n", `p.toml:1:8: use: unknown profile "gti" (known: git, go, python, node, coreutils, make); did you mean "git"?`},
		{"use = [\"git@7\"]\n", "profile git has no version 7"},
		{"use = \"git\"\n", "expected an array of strings"},
	}
	for _, tc := range tests {
		file := filepath.Join(dir, "p.toml")
		if err := os.WriteFile(file, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := policyfile.Load(file)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
	if _, err := exec0("go"); err == nil {
		_, err := policy.New(policy.Spec{Exec: policy.ExecSpec{Use: []policy.ProfileUse{{Name: "go"}}}})
		if err == nil || !strings.Contains(err.Error(), "keeps caches") {
			t.Errorf("go profile without a cache directory: %v", err)
		}
	}
}

func exec0(name string) (string, error) {
	return policy.LookPath(name, append(policy.DefaultExecPath, filepath.SplitList(os.Getenv("PATH"))...))
}

// TestExecUnder: a rule for every program under a directory allows what
// is built there later, by real path, and nothing outside; deny rules and
// the option tables still apply to such programs.
func TestExecUnder(t *testing.T) {
	ws := t.TempDir()
	real, _ := filepath.EvalSymlinks(ws)
	p, err := policy.New(policy.Spec{WriteRoots: []string{ws}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{
		{Under: filepath.Join(ws, "bin"), Match: [][]string{{"x"}}},
		{Under: filepath.Join(ws, "bin"), Args: []string{"--danger"}, Deny: true},
	}}})
	if err != nil {
		t.Fatal(err) // bin does not exist yet: that is fine
	}
	tests := []struct {
		prog    string
		args    []string
		allowed bool
	}{
		{real + "/bin/hello", []string{"hello", "world"}, true},
		{real + "/bin/sub/tool", nil, true},
		{real + "/bin/git", []string{"git", "-c", "core.pager=sh", "log"}, false}, // git's table applies by name
		{real + "/bin/hello", []string{"hello", "--danger"}, false},
		{real + "/binary", nil, false},
		{real + "/bin", nil, false},
		{"/usr/bin/env", nil, false},
	}
	for _, tc := range tests {
		if d := p.CheckExec(tc.prog, tc.args); d.Allowed != tc.allowed {
			t.Errorf("%s %v: %v, want allowed=%v", tc.prog, tc.args, d, tc.allowed)
		}
	}
	if got := p.ExecDirs(); len(got) != 1 || got[0] != real+"/bin" {
		t.Errorf("ExecDirs = %v", got)
	}
	for _, bad := range []policy.ExecRule{{Under: "rel/dir"}, {Under: "/x", Program: "ls"}} {
		if _, err := policy.New(policy.Spec{Exec: policy.ExecSpec{Rules: []policy.ExecRule{bad}}}); err == nil {
			t.Errorf("%+v built", bad)
		}
	}
}

// TestNoBuiltinDeny: the option tables' denials are on by default and one
// key turns them off; explicit deny rules stay.
func TestNoBuiltinDeny(t *testing.T) {
	git := mustLook(t, "git")
	realGit, _ := filepath.EvalSymlinks(git)
	dir := t.TempDir()
	file := filepath.Join(dir, "p.toml")
	text := "[exec]\nno_builtin_deny = true\n\n[[exec.allow]]\nprogram = \"git\"\n\n[[exec.deny]]\nprogram = \"git\"\nargs = [\"push\"]\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	off, err := policyfile.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	on, err := policy.New(policy.Spec{Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: "git"}}}})
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{"git", "-c", "core.pager=sh", "log"}
	if d := on.CheckExec(realGit, argv); d.Allowed || !strings.HasPrefix(d.Rule.Source, "builtin") {
		t.Errorf("default: %v", d)
	}
	if d := off.CheckExec(realGit, argv); !d.Allowed {
		t.Errorf("no_builtin_deny: %v", d)
	}
	if d := off.CheckExec(realGit, []string{"git", "push"}); d.Allowed {
		t.Error("explicit deny lost with no_builtin_deny")
	}
}

// TestToolCreation: only a plain `git init` or `git clone` under the git
// profile may create .git/config, and only a plain `git worktree` its
// links.
func TestToolCreation(t *testing.T) {
	git := mustLook(t, "git")
	realGit, _ := filepath.EvalSymlinks(git)
	dir := t.TempDir()
	withProfile, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{CacheDir: dir, Use: []policy.ProfileUse{{Name: "git"}}}})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: "git"}}}})
	if err != nil {
		t.Fatal(err)
	}
	plan := func(argv ...string) *policy.ExecPlan {
		return &policy.ExecPlan{Commands: []policy.ExecCommand{{Name: "git", Program: realGit, Argv: argv}}}
	}
	tests := []struct {
		argv []string
		ok   bool
	}{
		{[]string{"git", "init"}, true},
		{[]string{"git", "init", "-q", "-b", "main", "repo"}, true},
		{[]string{"git", "init", "--initial-branch=main", "--object-format=sha1"}, true},
		{[]string{"git", "init", "--template=/tmp/t"}, false},
		{[]string{"git", "init", "--separate-git-dir", "/tmp/g"}, false},
		{[]string{"git", "init", "a", "b"}, false},
		{[]string{"git", "-c", "init.templateDir=/t", "init"}, false},
		{[]string{"git", "status"}, false},
		{[]string{"git", "clone", "/srv/repo"}, true},
		{[]string{"git", "clone", "-q", "file:///srv/repo", "dir"}, true},
		{[]string{"git", "clone", "--depth", "1", "-b", "main", "--single-branch", "https://example.com/r.git", "r"}, true},
		{[]string{"git", "clone", "--branch=main", "--filter=blob:none", "/srv/repo"}, true},
		{[]string{"git", "clone"}, false},
		{[]string{"git", "clone", "a", "b", "c"}, false},
		{[]string{"git", "clone", "--template=/t", "/srv/repo"}, false},
		{[]string{"git", "clone", "-c", "core.hooksPath=/t", "/srv/repo"}, false},
		{[]string{"git", "clone", "--config", "core.pager=x", "/srv/repo"}, false},
		{[]string{"git", "clone", "--reference", "/other", "/srv/repo"}, false},
		{[]string{"git", "clone", "--shared", "/srv/repo"}, false},
		{[]string{"git", "clone", "--separate-git-dir=/g", "/srv/repo"}, false},
		{[]string{"git", "clone", "--recurse-submodules", "/srv/repo"}, false},
		{[]string{"git", "clone", "-u", "/x", "/srv/repo"}, false},
		{[]string{"git", "worktree", "add", "../wt"}, true},
		{[]string{"git", "worktree", "add", "-b", "feat", "../wt", "main"}, true},
		{[]string{"git", "worktree", "remove", "--force", "../wt"}, true},
		{[]string{"git", "worktree", "prune"}, true},
		{[]string{"git", "worktree", "list"}, false},
		{[]string{"git", "worktree", "add", "--unknown", "../wt"}, false},
		{[]string{"git", "submodule", "update"}, true},
		{[]string{"git", "submodule", "-q", "update", "--recursive", "-j", "4", "--", "lib"}, true},
		{[]string{"git", "submodule", "update", "--init"}, false},
		{[]string{"git", "submodule", "update", "--remote"}, false},
		{[]string{"git", "submodule", "add", "../x", "lib"}, false},
	}
	for _, tc := range tests {
		got := withProfile.ToolCreation(plan(tc.argv...))
		if (got != nil) != tc.ok {
			t.Errorf("%v: %v, want %v", tc.argv, got, tc.ok)
		}
		// What each may write: configuration for init and clone, the
		// worktree links for git worktree; hooks never.
		if got != nil {
			want := policy.GitConfigEntry
			if tc.argv[1] == "worktree" {
				want = policy.GitRedirectEntry
			}
			if !slices.Equal(got.Protected, []string{want}) {
				t.Errorf("%v may write %v, want %v", tc.argv, got.Protected, want)
			}
			if tc.argv[1] != "worktree" && !slices.Contains(got.Env, "GIT_TEMPLATE_DIR=") {
				t.Errorf("%v runs with a template: %v", tc.argv, got.Env)
			}
		}
		if plain.ToolCreation(plan(tc.argv...)) != nil {
			t.Errorf("%v: allowed without the git profile", tc.argv)
		}
	}
	wrapped := plan("git", "init")
	wrapped.Wrappers = []policy.ExecCommand{{Name: "sh", Program: "/bin/sh"}}
	if withProfile.ToolCreation(wrapped) != nil {
		t.Error("git init inside a script may create .git/config")
	}
}

// TestProfilesVersion2: "git" and "go" mean git@2 and go@2, which add what
// the tools start beyond @1: gettext and envsubst for git's shell helpers,
// and, where cgo is on, the C compiler go env CC names and the programs it
// reports starting (-print-prog-name), each with where it was found.
func TestProfilesVersion2(t *testing.T) {
	mustLook(t, "git")
	mustLook(t, "go")
	dir := t.TempDir()
	p, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{CacheDir: dir,
		Use: []policy.ProfileUse{{Name: "git"}, {Name: "go"}}}})
	if err != nil {
		t.Fatal(err)
	}
	has := func(profile string, kind policy.ProfileItemKind, suffix, from string) bool {
		for _, it := range p.ProfileItems() {
			if it.Profile == profile && it.Kind == kind && strings.HasSuffix(it.Value, suffix) && strings.Contains(it.From, from) {
				return true
			}
		}
		return false
	}
	for _, name := range []string{"gettext", "envsubst"} {
		if _, err := exec.LookPath(name); err != nil {
			if !has("git@2", policy.ProfileMissing, name, "git-sh-i18n") {
				t.Errorf("%s: not installed and not listed as missing", name)
			}
			continue
		}
		if !has("git@2", policy.ProfileProgram, "/"+name, "git-sh-i18n runs it") {
			t.Errorf("git@2 does not allow %s", name)
		}
	}
	out, err := exec.Command("go", "env", "CGO_ENABLED", "CC").Output()
	if err != nil {
		t.Fatal(err)
	}
	cgo, cc, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if cgo != "1" {
		if !has("go@2", policy.ProfileNote, "no C toolchain added", "CGO_ENABLED") {
			t.Error("cgo off: no note")
		}
		return
	}
	ccPath, err := exec.LookPath(cc)
	if err != nil {
		t.Skipf("go env CC = %s is not installed", cc)
	}
	if !has("go@2", policy.ProfileProgram, ccPath, "go env CC") {
		t.Errorf("go@2 does not allow %s", ccPath)
	}
	real, _ := filepath.EvalSymlinks(ccPath)
	if d := p.CheckExec(real, []string{cc, "-c", "x.c"}); !d.Allowed {
		t.Errorf("%s: %v", cc, d.Rule)
	}
	// gcc starts cc1 from its own directory, which is allowed whole.
	if cc1, err := exec.Command(cc, "-print-prog-name=cc1").Output(); err == nil && filepath.IsAbs(strings.TrimSpace(string(cc1))) {
		path := strings.TrimSpace(string(cc1))
		if !has("go@2", policy.ProfileHelperDir, filepath.Dir(path), "-print-prog-name=cc1") {
			t.Errorf("gcc's directory %s is not a helper dir", filepath.Dir(path))
		}
		if d := p.CheckExec(path, []string{"cc1"}); !d.Allowed {
			t.Errorf("cc1: %v", d.Rule)
		}
	}
}
