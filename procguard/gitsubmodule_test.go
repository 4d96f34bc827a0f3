package procguard_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitSubmoduleUpdateInSandbox: under the docs/agents.md policy in the
// sandbox, git submodule update of a submodule already configured and
// cloned checks out the commit the superproject records; it writes only
// the submodule's state under .git/modules, and no configuration or hook.
func TestGitSubmoduleUpdateInSandbox(t *testing.T) {
	ctx, root := agentScope(t)
	ws := filepath.Join(root, "ws")
	git := func(dir string, args ...string) string {
		t.Helper()
		c := exec.Command("git", args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com",
			"GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	// The submodule's repository, outside the workspace, with two commits.
	sub := filepath.Join(root, "sub")
	must(t, os.MkdirAll(sub, 0o755))
	git(sub, "init", "-q", "-b", "main")
	must(t, os.WriteFile(filepath.Join(sub, "v.txt"), []byte("one\n"), 0o644))
	git(sub, "add", ".")
	git(sub, "commit", "-q", "-m", "one")
	one := git(sub, "rev-parse", "HEAD")
	must(t, os.WriteFile(filepath.Join(sub, "v.txt"), []byte("two\n"), 0o644))
	git(sub, "commit", "-q", "-am", "two")
	two := git(sub, "rev-parse", "HEAD")
	// The superproject in the workspace records "two"; its submodule is
	// configured and cloned (by the host), checked out at "one".
	repo := filepath.Join(ws, "app")
	must(t, os.MkdirAll(repo, 0o755))
	git(repo, "init", "-q", "-b", "main")
	git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "lib")
	git(repo, "commit", "-q", "-m", "with lib")
	git(filepath.Join(repo, "lib"), "checkout", "-q", one)
	config, err := os.ReadFile(filepath.Join(repo, ".git/config"))
	must(t, err)

	code, out := guarded(t, ctx, repo, nil, "git", "submodule", "update")
	if code != 0 {
		t.Fatalf("git submodule update: exit %d\n%s", code, out)
	}
	if got := git(filepath.Join(repo, "lib"), "rev-parse", "HEAD"); got != two {
		t.Errorf("the submodule is at %s, want the recorded %s", got, two)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "lib/v.txt")); string(b) != "two\n" {
		t.Errorf("lib/v.txt = %q", b)
	}
	if after, _ := os.ReadFile(filepath.Join(repo, ".git/config")); !bytes.Equal(after, config) {
		t.Errorf(".git/config changed:\n%s", after)
	}
	hooks, _ := filepath.Glob(filepath.Join(repo, ".git/modules/lib/hooks/*"))
	for _, h := range hooks {
		if !strings.HasSuffix(h, ".sample") {
			t.Errorf("a hook appeared: %s", h)
		}
	}
}
