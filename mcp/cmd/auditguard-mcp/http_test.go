package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Streamable HTTP on loopback: the Go SDK's client over HTTP, then
// SIGTERM ends the server with status 0.
func TestStreamableHTTP(t *testing.T) {
	e := newAgentEnv(t)
	cmd := exec.Command(serverBinary(t), "--policy", e.policy, "--workspace", e.ws, "--log", e.log, "--http", "127.0.0.1:0", "--no-shell")
	cmd.Env = append(os.Environ(), "HOME="+e.home)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killOnCleanup(t, cmd)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "auditguard-mcp: listening on "); ok {
				addr <- a
			}
		}
	}()
	var endpoint string
	select {
	case endpoint = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatal("the server never said where it listens")
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range lt.Tools {
		if tool.Name == "bash" {
			t.Error("--no-shell still offers bash")
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": "notes/b.txt"}})
	if err != nil || res.IsError || text(t, res) != "     1\tTODO four\n" {
		t.Fatalf("read over HTTP: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"path": ".git/hooks/post-merge", "content": "x"}})
	if err != nil || !res.IsError || !strings.Contains(text(t, res), "fs write denied") {
		t.Fatalf("hook write over HTTP: %v %+v", err, res)
	}
	cs.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the server ended with %v after SIGTERM", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not end after SIGTERM")
	}
}

// Usage errors exit 2, a server that cannot start exits 1; neither
// serves.
func TestCommandLine(t *testing.T) {
	e := newAgentEnv(t)
	bad := filepath.Join(e.root, "bad.toml")
	if err := os.WriteFile(bad, []byte("[fs]\nwrite_rots = [\"/tmp\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--workspace", e.ws}, 2, "--policy is required"},
		{[]string{"--policy", e.policy}, 2, "--workspace is required"},
		{[]string{"--policy", e.policy, "--workspace", e.ws, "--http", "0.0.0.0:8080"}, 2, "only loopback addresses"},
		{[]string{"--policy", e.policy, "--workspace", e.ws, "extra"}, 2, "unexpected arguments"},
		{[]string{"--policy", bad, "--workspace", e.ws}, 1, "write_rots"},
		{[]string{"--policy", e.policy, "--workspace", filepath.Join(e.root, "missing")}, 1, "workspace"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, serverBinary(t), tc.args...)
			cmd.Env = append(os.Environ(), "HOME="+e.home)
			cmd.Stdin = strings.NewReader("") // a stdio server that starts would see EOF and end
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("exit: %v, want status %d; output:\n%s", err, tc.code, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}
