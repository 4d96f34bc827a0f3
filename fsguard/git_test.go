package fsguard_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// TestGitRepositoryOnDisk: a real repository (made by git) changed through
// a guarded handle. What git's own commands write may be written (a new
// branch, HEAD, the empty hooks directory), and git sees it; configuration,
// hooks, redirects, the .git entry itself and a crafted directory renamed
// into a container's place are refused, and git still reads the
// repository as it was.
func TestGitRepositoryOnDisk(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := tempDir(t)
	home := filepath.Join(root, "home")
	repo := filepath.Join(root, "repo")
	mustDo(t, os.Mkdir(home, 0o755))
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_TEMPLATE_DIR=", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a",
			"GIT_COMMITTER_EMAIL=a@example.com", "LC_ALL=C"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	mustDo(t, os.Mkdir(repo, 0o755))
	git("init", "-q", "-b", "main")
	write(t, filepath.Join(repo, "a.txt"), "a\n")
	git("add", "a.txt")
	git("commit", "-qm", "a")
	head := git("rev-parse", "HEAD")
	config, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	mustDo(t, err)

	ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{root}})
	g := fsguard.New(ctx, afero.NewOsFs())
	dotgit := filepath.Join(repo, ".git")

	// Allowed: git's own layout.
	mustDo(t, afero.WriteFile(g, filepath.Join(dotgit, "refs/heads/feature.lock"), []byte(head+"\n"), 0o644))
	mustDo(t, g.Rename(filepath.Join(dotgit, "refs/heads/feature.lock"), filepath.Join(dotgit, "refs/heads/feature")))
	mustDo(t, g.Mkdir(filepath.Join(dotgit, "hooks"), 0o755))
	if got := git("branch", "--list", "feature"); !strings.Contains(got, "feature") {
		t.Fatalf("git does not see the branch written through the handle: %q", got)
	}

	// Refused, each leaving the disk as it was.
	write(t, filepath.Join(root, "crafted", "attributes"), "* filter=evil\n")
	write(t, filepath.Join(root, "evil.cfg"), "[core]\n\thooksPath = /tmp\n")
	mustDo(t, os.Mkdir(filepath.Join(root, "other"), 0o755), os.Mkdir(filepath.Join(root, "linked"), 0o755))
	before := snapshot(t, root)
	refused := map[string]error{
		"config":            afero.WriteFile(g, filepath.Join(dotgit, "config"), []byte("[core]\n\tpager = evil\n"), 0o644),
		"config by rename":  g.Rename(filepath.Join(root, "evil.cfg"), filepath.Join(dotgit, "config")),
		"a hook":            afero.WriteFile(g, filepath.Join(dotgit, "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755),
		"commondir":         afero.WriteFile(g, filepath.Join(dotgit, "commondir"), []byte("/tmp\n"), 0o644),
		"alternates":        afero.WriteFile(g, filepath.Join(dotgit, "objects", "info", "alternates"), []byte("/tmp\n"), 0o644),
		"a file git skips":  afero.WriteFile(g, filepath.Join(dotgit, "run.sh"), nil, 0o755),
		"a pointer file":    afero.WriteFile(g, filepath.Join(root, "other", ".git"), []byte("gitdir: "+dotgit+"\n"), 0o644),
		"rename .git":       g.Rename(dotgit, filepath.Join(repo, "git-old")),
		"remove the repo":   g.RemoveAll(repo),
		"crafted info":      g.Rename(filepath.Join(root, "crafted"), filepath.Join(dotgit, "info")),
		"link to .git dir":  g.SymlinkIfPossible(dotgit, filepath.Join(root, "linked", ".git")),
		"hooks dir removed": g.Remove(filepath.Join(dotgit, "hooks")),
	}
	for name, err := range refused {
		if !isDenial(err) {
			t.Errorf("%s: want a denial, got %v", name, err)
		}
	}
	if d := diffSnapshots(before, snapshot(t, root)); len(d) > 0 {
		t.Fatalf("refused calls changed the disk: %v", d)
	}
	if b, _ := os.ReadFile(filepath.Join(dotgit, "config")); string(b) != string(config) {
		t.Fatalf("config changed: %q", b)
	}
	if got := git("rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD %s, want %s", got, head)
	}
	if got := git("rev-parse", "--git-path", "hooks"); got != ".git/hooks" {
		t.Fatalf("git's hooks path: %q", got)
	}
	if got := git("rev-parse", "--git-common-dir"); got != ".git" {
		t.Fatalf("git's common dir: %q", got)
	}
}
