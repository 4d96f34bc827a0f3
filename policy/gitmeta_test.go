package policy_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// TestGitMetadataModel: a repository's .git is one object, at any depth;
// inside it only git's own layout changes, and configuration, hooks and
// redirect files are refused by their own rules wherever a git directory
// holds them (the main one, worktrees/<name>, modules/<name>).
func TestGitMetadataModel(t *testing.T) {
	const work = "/srv/w"
	p, err := policy.New(policy.Spec{WriteRoots: []string{work}})
	if err != nil {
		t.Fatal(err)
	}
	const (
		ok       = ""
		object   = ".git"
		config   = ".git/config"
		hooks    = ".git/hooks"
		redirect = ".git/commondir"
	)
	tests := []struct {
		op   policy.Op
		path string // under work
		rule string // the denying rule's pattern, ok when allowed
	}{
		// The entry itself.
		{policy.OpCreate, ".git", ok},
		{policy.OpAttr, ".git", ok},
		{policy.OpWrite, ".git", object}, // a "gitdir:" pointer file
		{policy.OpLink, ".git", object},  // a symbolic or hard link named .git
		{policy.OpMove, ".git", object},  // either name of a rename or exchange
		{policy.OpDelete, ".git", object},
		{policy.OpWrite, "a/b/c/d/e/f/.git", object}, // at any depth
		{policy.OpMove, "sub/.GIT", object},          // case is ignored
		// State git's commands write.
		{policy.OpWrite, ".git/HEAD", ok},
		{policy.OpWrite, ".git/HEAD.lock", ok},
		{policy.OpMove, ".git/index.lock", ok},
		{policy.OpWrite, ".git/index", ok},
		{policy.OpWrite, ".git/ORIG_HEAD", ok},
		{policy.OpWrite, ".git/MERGE_MSG", ok},
		{policy.OpWrite, ".git/BISECT_LOG", ok},
		{policy.OpWrite, ".git/index.stash.123.lock", ok},
		{policy.OpWrite, ".git/packed-refs.new", ok},
		{policy.OpWrite, ".git/tKnhHxq", ok}, // git init's core.symlinks probe
		{policy.OpLink, ".git/tKnhHxq", ok},
		{policy.OpCreate, ".git/objects", ok},
		{policy.OpLink, ".git/objects/pack/pack-1.pack", ok},
		{policy.OpWrite, ".git/objects/ab/cdef", ok},
		{policy.OpDelete, ".git/objects/ab/cdef", ok},
		{policy.OpWrite, ".git/objects/info/commit-graph", ok},
		{policy.OpWrite, ".git/objects/info/packs", ok},
		{policy.OpWrite, ".git/refs/heads/config", ok}, // a branch named config
		{policy.OpWrite, ".git/refs/heads/hooks", ok},
		{policy.OpWrite, ".git/logs/refs/heads/main", ok},
		{policy.OpWrite, ".git/rebase-merge/git-rebase-todo", ok},
		{policy.OpCreate, ".git/info", ok},
		{policy.OpWrite, ".git/info/exclude", ok},
		{policy.OpWrite, ".git/info/refs_Hoz", ok},
		{policy.OpWrite, ".git/worktrees/wt/HEAD", ok},
		{policy.OpWrite, ".git/worktrees/wt/logs/HEAD", ok},
		{policy.OpWrite, ".git/worktrees/wt/locked", ok},
		{policy.OpDelete, ".git/worktrees/wt", ok},
		{policy.OpWrite, ".git/modules/lib/HEAD", ok},
		{policy.OpWrite, ".git/modules/a/b/objects/ab/cd", ok},
		{policy.OpCreate, ".git/hooks", ok}, // the empty hooks directory
		// Configuration.
		{policy.OpWrite, ".git/config", config},
		{policy.OpWrite, ".git/config.lock", config},
		{policy.OpMove, ".git/config", config},
		{policy.OpDelete, ".git/config", config},
		{policy.OpAttr, ".git/config", config},
		{policy.OpLink, ".git/config", config},
		{policy.OpWrite, ".git/config.worktree", config},
		{policy.OpWrite, ".git/worktrees/wt/config.worktree", config},
		{policy.OpWrite, ".git/info/attributes", config},
		{policy.OpWrite, ".git/modules/lib/config", config},
		{policy.OpWrite, ".git/modules/refs/config", config}, // a submodule named refs
		{policy.OpWrite, "deep/er/.Git/CONFIG", config},
		// Hooks.
		{policy.OpWrite, ".git/hooks/pre-commit", hooks},
		{policy.OpCreate, ".git/hooks/sub", hooks},
		{policy.OpAttr, ".git/hooks/pre-commit", hooks},
		{policy.OpDelete, ".git/hooks", hooks},
		{policy.OpMove, ".git/hooks", hooks},
		{policy.OpWrite, ".git/hooks", hooks}, // a file named hooks
		{policy.OpWrite, ".git/modules/a/b/hooks/post-checkout", hooks},
		// Redirects.
		{policy.OpWrite, ".git/commondir", redirect},
		{policy.OpWrite, ".git/worktrees/wt/commondir", redirect},
		{policy.OpWrite, ".git/worktrees/wt/gitdir", redirect},
		{policy.OpWrite, ".git/objects/info/alternates", redirect},
		{policy.OpWrite, ".git/objects/info/http-alternates", redirect},
		{policy.OpWrite, ".git/info/grafts", redirect},
		{policy.OpWrite, ".git/branches/origin", redirect},
		{policy.OpWrite, ".git/remotes/origin", redirect},
		{policy.OpWrite, ".git/modules/x/commondir", redirect},
		// Moving a crafted directory into a place that can hold
		// configuration, hooks or redirects would bring them in whole.
		{policy.OpMove, ".git/info", object},
		{policy.OpMove, ".git/objects", object},
		{policy.OpMove, ".git/objects/info", object},
		{policy.OpMove, ".git/worktrees", object},
		{policy.OpMove, ".git/worktrees/wt", object},
		{policy.OpMove, ".git/modules", object},
		{policy.OpMove, ".git/modules/lib", object},
		{policy.OpMove, ".git/modules/refs", object}, // a submodule named like a state tree
		{policy.OpMove, ".git/refs", object},
		{policy.OpLink, ".git/info", object}, // a symbolic link to a crafted directory
		{policy.OpLink, ".git/objects", object},
		{policy.OpLink, ".git/worktrees/wt", object},
		{policy.OpLink, ".git/modules/lib", object},
		{policy.OpLink, ".git/HEAD", ok}, // core.preferSymlinkRefs
		{policy.OpMove, ".git/HEAD", ok},
		{policy.OpMove, ".git/refs/heads/main", ok},
		{policy.OpMove, ".git/objects/pack/pack-1.idx", ok},
		{policy.OpMove, ".git/objects/info/packs", ok},
		{policy.OpMove, ".git/objects/info/commit-graphs/graph-1.graph", ok},
		{policy.OpMove, ".git/info/exclude", ok},
		{policy.OpMove, ".git/worktrees/wt/HEAD", ok},
		{policy.OpMove, ".git/modules/lib/HEAD", ok},
		{policy.OpMove, ".git/modules/a/b/index.lock", ok},
		{policy.OpMove, ".git/modules/lib/refs/heads/main", ok},
		{policy.OpMove, ".git/modules/lib/objects/ab/cd", ok},
		{policy.OpMove, ".git/modules/lib/objects/info/packs", ok},
		{policy.OpDelete, ".git/objects/info", ok},
		{policy.OpCreate, ".git/modules/lib", ok},
		// Anything else git does not write.
		{policy.OpWrite, ".git/run.sh", object},
		{policy.OpCreate, ".git/x", object},
		{policy.OpWrite, ".git/info/other", object},
		{policy.OpWrite, ".git/a/.git/config", object},
		{policy.OpWrite, ".git/HEAD/x", object},
	}
	for _, tt := range tests {
		path := work + "/" + tt.path
		d := p.CheckPath(tt.op, path, "")
		switch {
		case tt.rule == ok && !d.Allowed:
			t.Errorf("%v %s: denied by %v (%s), want allowed", tt.op, tt.path, d.Rule, d.Detail)
		case tt.rule != ok && (d.Allowed || d.Rule.Pattern != tt.rule || d.Tier != policy.TierHard || d.Rule.Class != policy.ClassGit):
			t.Errorf("%v %s: %+v (%v), want a hard denial by %q", tt.op, tt.path, d, d.Rule, tt.rule)
		}
		// Reads are never the git model's business.
		if d := p.CheckPath(policy.OpRead, path, ""); !d.Allowed {
			t.Errorf("read %s: %v", tt.path, d.Rule)
		}
	}
	// The entry's own rule is not a protected subtree (the sandbox binds
	// those read-only whole).
	if d := p.CheckPath(policy.OpWrite, work+"/.git", ""); d.Rule.Kind != policy.KindGitMeta {
		t.Errorf(".git's rule is %v, want kind git metadata", d.Rule)
	}
}

// TestGitModelRelaxed: the sandbox rebuilds the policy from FileSpec with
// the class a tool creation may write dropped; only that class opens.
func TestGitModelRelaxed(t *testing.T) {
	const work = "/srv/w"
	full, err := policy.New(policy.Spec{WriteRoots: []string{work}})
	if err != nil {
		t.Fatal(err)
	}
	without := func(entry string) *policy.Policy {
		fs := full.FileSpec("")
		fs.Protected = slices.DeleteFunc(fs.Protected, func(e string) bool { return e == entry })
		p, err := policy.New(fs)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	noConfig, noRedirect := without(policy.GitConfigEntry), without(policy.GitRedirectEntry)
	tests := []struct {
		op                 policy.Op
		path               string
		full, cfg, redirct bool // allowed under each
	}{
		{policy.OpWrite, ".git/config", false, true, false},
		{policy.OpMove, ".git/config", false, true, false},
		{policy.OpWrite, ".git/worktrees/wt/config.worktree", false, true, false},
		{policy.OpWrite, ".git/hooks/pre-commit", false, false, false},
		{policy.OpWrite, ".git/commondir", false, false, true},
		{policy.OpWrite, ".git/worktrees/wt/gitdir", false, false, true},
		{policy.OpWrite, "wt/.git", false, false, true}, // git worktree add's pointer file
		{policy.OpDelete, "wt/.git", false, false, true},
		{policy.OpMove, "wt/.git", false, false, false},
		{policy.OpWrite, ".git/run.sh", false, false, false},
		{policy.OpWrite, ".git/HEAD", true, true, true},
	}
	for _, tt := range tests {
		for i, p := range []*policy.Policy{full, noConfig, noRedirect} {
			want := []bool{tt.full, tt.cfg, tt.redirct}[i]
			if d := p.CheckPath(tt.op, work+"/"+tt.path, ""); d.Allowed != want {
				t.Errorf("%v %s under policy %d: allowed=%v (%v), want %v", tt.op, tt.path, i, d.Allowed, d.Rule, want)
			}
		}
	}
}

// TestGitModelOff: without any git entry (ReplaceProtected) nothing in
// .git is judged; a host's own ".git" entry is a plain name that keeps
// the whole directory read-only, its creation included.
func TestGitModelOff(t *testing.T) {
	const work = "/srv/w"
	off, err := policy.New(policy.Spec{WriteRoots: []string{work}, ReplaceProtected: true, Protected: []string{".bashrc"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{".git", ".git/config", ".git/hooks/pre-commit", ".git/commondir"} {
		if d := off.CheckPath(policy.OpWrite, work+"/"+path, ""); !d.Allowed {
			t.Errorf("model off: write %s denied by %v", path, d.Rule)
		}
	}
	whole, err := policy.New(policy.Spec{WriteRoots: []string{work}, Protected: []string{".git"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		op   policy.Op
		path string
	}{{policy.OpCreate, ".git"}, {policy.OpWrite, ".git/HEAD"}, {policy.OpCreate, ".git/hooks"}, {policy.OpDelete, ".git/objects/ab/cd"}} {
		if d := whole.CheckPath(c.op, work+"/"+c.path, ""); d.Allowed || d.Rule.Pattern != ".git" || d.Rule.Kind != policy.KindProtected {
			t.Errorf("host entry .git: %v %s: %+v", c.op, c.path, d)
		}
	}
}

// gitEnv is the environment of the real git commands tests run: no system
// or user configuration, a HOME of the test's own, fixed identities.
func gitEnv(home string) []string {
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com",
		"GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}
}

func gitRun(t *testing.T, env []string, dir string, extraEnv []string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, append(append([]string(nil), env...), extraEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestGitLayoutFromRealGit runs git's ordinary commands on real
// repositories (git init and clone with an empty template, as the git
// profile's tool creations run them; commit, branch, merge, rebase,
// cherry-pick, revert, stash, tag, notes, bisect, fetch, pull, worktree
// add, gc, repack, commit-graph, pack-refs, prune) and checks that
// everything they left in the git directories is something the model lets
// a child write, configuration excepted (only a tool creation writes it),
// and worktree links (only git worktree writes them).
func TestGitLayoutFromRealGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := gitEnv(home)
	noTemplate := []string{"GIT_TEMPLATE_DIR="}
	src, clone, wt := filepath.Join(dir, "src"), filepath.Join(dir, "clone"), filepath.Join(dir, "wt")
	gitRun(t, env, dir, noTemplate, "init", "-q", "-b", "main", src)
	write := func(name, s string) {
		if err := os.WriteFile(name, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(src, "a"), "a\n")
	gitRun(t, env, src, nil, "add", "a")
	gitRun(t, env, src, nil, "commit", "-qm", "a")
	gitRun(t, env, dir, noTemplate, "clone", "-q", "file://"+src, clone)
	commit := func(name string) {
		write(filepath.Join(clone, name), name+"\n")
		gitRun(t, env, clone, nil, "add", name)
		gitRun(t, env, clone, nil, "commit", "-qm", name)
	}
	git := func(args ...string) { gitRun(t, env, clone, nil, args...) }
	git("checkout", "-qb", "feat")
	commit("f1")
	commit("f2")
	git("checkout", "-q", "main")
	commit("m1")
	git("rebase", "-q", "feat")
	git("tag", "-a", "v1", "-m", "v1")
	git("notes", "add", "-m", "note", "HEAD")
	git("checkout", "-qb", "side", "HEAD~2")
	commit("s1")
	git("checkout", "-q", "main")
	git("cherry-pick", "side")
	git("revert", "--no-edit", "HEAD")
	git("merge", "-q", "--no-edit", "side")
	git("bisect", "start", "HEAD", "HEAD~3")
	git("bisect", "good")
	git("bisect", "reset")
	git("fetch", "-q", "origin")
	git("pull", "-q", "--no-rebase", "origin", "main")
	git("worktree", "add", "-q", wt)
	git("gc", "-q")
	git("repack", "-adq")
	git("commit-graph", "write", "--reachable")
	git("pack-refs", "--all")
	git("prune")
	git("update-server-info")
	write(filepath.Join(clone, "a"), "changed\n")
	gitRun(t, env, clone, nil, "stash", "-q")
	gitRun(t, env, clone, nil, "stash", "pop", "-q")
	gitRun(t, env, wt, nil, "commit", "-q", "--allow-empty", "-m", "in the worktree")

	p, err := policy.New(policy.Spec{WriteRoots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, repo := range []string{src, clone} {
		gitDir := filepath.Join(repo, ".git")
		err := filepath.WalkDir(gitDir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(gitDir, path)
			op := policy.OpWrite
			if d.IsDir() {
				op = policy.OpCreate
			}
			seen++
			dec := p.CheckPath(op, path, "")
			switch {
			case rel == "config" || strings.HasSuffix(rel, "/config.worktree"):
				if dec.Allowed || dec.Rule.Pattern != policy.GitConfigEntry {
					t.Errorf("%s: %v, want the configuration rule", path, dec.Rule)
				}
			case strings.HasPrefix(rel, "worktrees/") && (strings.HasSuffix(rel, "/commondir") || strings.HasSuffix(rel, "/gitdir")):
				if dec.Allowed || dec.Rule.Pattern != policy.GitRedirectEntry {
					t.Errorf("%s: %v, want the redirect rule", path, dec.Rule)
				}
			case !dec.Allowed:
				t.Errorf("git wrote %s (%v), which the model refuses: %v (%s)", rel, op, dec.Rule, dec.Detail)
			}
			// Every state file may be removed and renamed over (git
			// writes each as a .lock and renames it), every state
			// directory removed; a directory that can hold
			// configuration, hooks or redirects is not moved whole.
			if dec.Allowed && rel != "." {
				ops := []policy.Op{policy.OpDelete, policy.OpMove}
				if d.IsDir() {
					ops = ops[:1]
				}
				for _, op := range ops {
					if d := p.CheckPath(op, path, ""); !d.Allowed {
						t.Errorf("%v %s: %v", op, rel, d.Rule)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen < 50 {
		t.Fatalf("only %d entries in the git directories: the commands did not run", seen)
	}
	// The worktree's pointer file is a redirect only git worktree writes.
	if d := p.CheckPath(policy.OpWrite, filepath.Join(wt, ".git"), ""); d.Allowed {
		t.Errorf("a child may write a worktree's .git pointer file")
	}
	// An empty template copies no hooks: clone and init made none.
	for _, repo := range []string{src, clone} {
		if _, err := os.Stat(filepath.Join(repo, ".git", "hooks")); !os.IsNotExist(err) {
			t.Errorf("%s: hooks directory with an empty template: %v", repo, err)
		}
	}
}
