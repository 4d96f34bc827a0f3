package server_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/mcp/server"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/toolset"
)

// The server in process, over the SDK's in-memory transports: tools keep
// their schemas and get annotations; results and tool errors map to
// MCP's; each call's records name it by its number.
func TestServerInMemory(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Spec{WriteRoots: []string{ws}, Home: ws})
	if err != nil {
		t.Fatal(err)
	}
	rec := audit.NewRecorder()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := audit.New(pol, audit.WithRecorder(rec), audit.WithLogAllows(), audit.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	set, err := toolset.New(ctx, toolset.Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	var calls strings.Builder
	srv := server.New(set, server.Options{Logger: slog.New(slog.NewTextHandler(&calls, nil))})

	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tl := range lt.Tools {
		tools[tl.Name] = tl
	}
	if len(tools) != len(set.Tools()) {
		t.Fatalf("%d tools listed, want %d", len(tools), len(set.Tools()))
	}
	if a := tools["read"].Annotations; a == nil || !a.ReadOnlyHint || *a.DestructiveHint {
		t.Errorf("read's annotations: %+v", a)
	}
	if a := tools["write"].Annotations; a == nil || a.ReadOnlyHint || !*a.DestructiveHint || *a.OpenWorldHint {
		t.Errorf("write's annotations: %+v", a)
	}
	if a := tools["fetch"].Annotations; a == nil || !*a.OpenWorldHint {
		t.Errorf("fetch's annotations: %+v", a)
	}

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": "a.txt"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "     1\talpha\n" {
		t.Fatalf("read: %v %+v", err, res)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"path": ".git/hooks/pre-push", "content": "x"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "fs write denied") {
		t.Fatalf("hook write: %v %+v", err, res)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": 3}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `argument "path" must be a string`) {
		t.Fatalf("mistyped read: %v %+v", err, res)
	}
	// An unknown tool is the SDK's protocol error, not a tool call.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rm", Arguments: map[string]any{}}); err == nil {
		t.Error("an unknown tool was called")
	}

	byTool := map[string]bool{}
	for _, r := range rec.Records() {
		byTool[r.Tool] = true
	}
	if !byTool["read#1"] || !byTool["write#2"] {
		t.Errorf("records by tool call: %v", byTool)
	}
	for _, want := range []string{"call=read#1 outcome=ok", "call=write#2 outcome=denied", "call=read#3 outcome=input"} {
		if !strings.Contains(calls.String(), want) {
			t.Errorf("the call log lacks %q:\n%s", want, calls.String())
		}
	}
}
