package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The same agent session driven by the official TypeScript SDK's client,
// installed from the npm registry into a temporary directory. Skipped,
// with the reason, where node or npm is missing or the registry cannot
// be reached.
func TestAgentSessionTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the npm install takes tens of seconds")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"auditguard-mcp-ts-e2e","private":true,"type":"module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ictx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	install := exec.CommandContext(ictx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "@modelcontextprotocol/sdk@1")
	install.Dir = dir
	install.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(dir, ".npm"), "HOME="+dir)
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("the TypeScript SDK could not be installed from the npm registry (%v):\n%s", err, out)
	}
	script, err := os.ReadFile("testdata/agent.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}

	e := newAgentEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "agent.mjs", serverBinary(t), "--policy", e.policy, "--workspace", e.ws, "--log", e.log)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+e.home)
	// node and the server it starts share a process group, killed whole
	// by its id on timeout or failure.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	t.Cleanup(func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client failed: %v\nstderr:\n%s", err, stderr.String())
	}
	var got struct {
		Tools []string
		Calls []struct {
			Name    string
			IsError bool
			Text    string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output is not JSON: %v\n%s", err, out)
	}
	if strings.Join(got.Tools, " ") != "bash edit fetch glob grep list read write" {
		t.Errorf("tools: %v", got.Tools)
	}
	want := []struct {
		isError bool
		parts   []string
	}{
		{false, []string{"     6\t\tfmt.Println(\"hello\")"}},
		{false, []string{"1 replacement(s)"}},
		{false, []string{"a.txt: 3", "b.txt: 1"}},
		{false, []string{"notes/a.txt:3: TODO three", "read denied by policy (1): prod.secret"}},
		{true, []string{"auditguard: fs write denied", ".git/hooks", "to allow:"}},
		{true, []string{"auditguard: net connect denied", "169.254.169.254"}},
		{true, []string{`argument "limit" must be an integer, got a string`}},
	}
	if len(got.Calls) != len(want) {
		t.Fatalf("%d calls, want %d: %+v", len(got.Calls), len(want), got.Calls)
	}
	for i, w := range want {
		c := got.Calls[i]
		if c.IsError != w.isError {
			t.Errorf("call %d (%s): isError %v, want %v:\n%s", i+1, c.Name, c.IsError, w.isError, c.Text)
		}
		for _, p := range w.parts {
			if !strings.Contains(c.Text, p) {
				t.Errorf("call %d (%s) lacks %q:\n%s", i+1, c.Name, p, c.Text)
			}
		}
		if strings.Contains(c.Text, "sk-live") {
			t.Errorf("call %d (%s) printed a read-denied file", i+1, c.Name)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "main.go")); !strings.Contains(string(b), "hello from ts") {
		t.Errorf("main.go after the TypeScript client's edit:\n%s", b)
	}
	if _, err := os.Lstat(filepath.Join(e.ws, ".git/hooks/pre-commit")); !os.IsNotExist(err) {
		t.Errorf("the refused hook exists: %v", err)
	}
	lines := readLog(t, e.log)
	for _, call := range []string{"write#5", "fetch#6"} {
		found := false
		for _, l := range lines {
			if l["tool"] == call && l["outcome"] == "denied" {
				found = true
			}
		}
		if !found {
			t.Errorf("no denied decision logged for %s", call)
		}
	}
}
