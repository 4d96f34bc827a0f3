package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// go test through the bash tool, under the short policy's shape of
// docs/agents.md (the go profile, caches, HOME and TMPDIR in the agent's
// tree, test binaries run from TMPDIR): the agent writes a test, runs it,
// sees it fail, fixes the code with edit, and runs it green.
func TestAgentRunsGoTest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs go test in the sandbox")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home, tmp, cache := filepath.Join(root, "ws"), filepath.Join(root, "home"), filepath.Join(root, "tmp"), filepath.Join(root, "cache")
	pol := filepath.Join(root, "policy.toml")
	files := map[string]string{
		"ws/go.mod":       "module example.com/calc\n\ngo 1.22\n",
		"ws/calc.go":      "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
		"ws/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n",
		"home/.keep":      "",
		"tmp/.keep":       "",
		"cache/.keep":     "",
		"policy.toml": fmt.Sprintf(`use = ["go", "coreutils"]

[fs]
write_roots = [%q]

[exec]
home = %q
tmp_dir = %q
cache_dir = %q
timeout = "3m"

[[exec.allow]]
under = %q
`, root, home, tmp, cache, tmp),
	}
	for rel, content := range files {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.Command(serverBinary(t), "--policy", pol, "--workspace", ws, "--log", filepath.Join(root, "log.jsonl"), "--shell-timeout", "4m")
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Stderr = &lockedBuffer{}
	killOnCleanup(t, cmd)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-agent", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, cmd.Stderr)
	}
	defer cs.Close()
	bash := func(script string) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": script}})
		if err != nil || res.IsError {
			t.Fatalf("bash %q: %v %+v", script, err, res)
		}
		return text(t, res)
	}
	got := bash("go test ./...")
	if !strings.Contains(got, "Add(2, 3) = -1, want 5") || !strings.HasPrefix(got, "exit code 1") {
		t.Fatalf("the failing go test:\n%s\nserver stderr:\n%s", got, cmd.Stderr)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "edit", Arguments: map[string]any{"path": "calc.go", "old_string": "a - b", "new_string": "a + b"}})
	if err != nil || res.IsError {
		t.Fatalf("edit: %v %+v", err, res)
	}
	got = bash("go test ./... && go vet ./...")
	if !strings.HasPrefix(got, "exit code 0") || !strings.Contains(got, "ok  \texample.com/calc") {
		t.Fatalf("the fixed go test:\n%s", got)
	}
}
