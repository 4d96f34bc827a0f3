// Package server serves a guarded tool set (package toolset) as MCP tools
// with the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// Each toolset.Tool becomes one MCP tool with the same name, description
// and input schema. A tools/call runs Tool.Call under the call id
// "N" (numbered per server, from 1), so the guard's records for it carry
// "tool#N" (audit.Record.Tool); the result is one text content, and a
// failed call is a tool error (IsError) whose text is the toolset.Error's
// message: a denial's teaching text, or what was wrong with the input.
// Protocol errors are left to the SDK: an unknown tool, a malformed
// request.
//
// Guaranteed: the server adds no behaviour to the tools (what they
// guarantee is in package toolset's documentation); a tool that panics
// answers with a tool error and the server goes on; every call is logged
// (Options.Logger) with its tool, id, outcome and duration.
//
// Every client session of one server shares its tool set, and so its
// shell session (working directory, variables): over stdio there is one
// client; over HTTP, give each agent its own server.
//
// Not guaranteed: the MCP client is not authenticated. Over stdio the
// client is the process that started the server; over HTTP, anything
// that can reach the listening address can call the tools, so listen on
// loopback only (the auditguard-mcp command refuses anything else).
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/auditguard/auditguard/toolset"
)

// Options configure New.
type Options struct {
	// Name and Version are the server's implementation info
	// ("auditguard", "dev" when empty).
	Name, Version string
	// Instructions are shown to the client, if it shows them.
	Instructions string
	// Logger receives one line per tool call (slog.Default() when nil).
	Logger *slog.Logger
}

// readOnly are the tools that change nothing.
var readOnly = map[string]bool{"read": true, "glob": true, "grep": true, "list": true, "fetch": true}

// New returns an MCP server offering every tool of set.
func New(set *toolset.Set, opts Options) *mcp.Server {
	if opts.Name == "" {
		opts.Name = "auditguard"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version},
		&mcp.ServerOptions{Instructions: opts.Instructions})
	seq := new(atomic.Uint64)
	for _, t := range set.Tools() {
		open := t.Name == "fetch" || t.Name == "bash"
		destructive := !readOnly[t.Name]
		srv.AddTool(&mcp.Tool{
			Name:        t.Name,
			Description: t.Description,
			InputSchema: t.InputSchema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly[t.Name], DestructiveHint: &destructive, OpenWorldHint: &open},
		}, handler(t, seq, opts.Logger))
	}
	return srv
}

// handler runs one tool for tools/call.
func handler(t *toolset.Tool, seq *atomic.Uint64, log *slog.Logger) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		id := strconv.FormatUint(seq.Add(1), 10)
		start := time.Now()
		outcome := "ok"
		defer func() {
			if r := recover(); r != nil {
				// The tool set recovers its tools' panics; this is the
				// adapter's own, and it must not take the server down.
				outcome = "panic"
				log.Error("auditguard-mcp: tool handler panicked", "tool", t.Name, "call", t.Name+"#"+id, "panic", fmt.Sprint(r))
				res, err = errorResult("internal error in the server; the call may not have run"), nil
			}
			log.Info("tool call", "tool", t.Name, "call", t.Name+"#"+id, "outcome", outcome,
				"duration_ms", time.Since(start).Milliseconds())
		}()
		var args []byte
		if req != nil && req.Params != nil {
			args = req.Params.Arguments
		}
		r, err := t.Call(toolset.WithCallID(ctx, id), args)
		if err != nil {
			outcome = "error"
			var te *toolset.Error
			if errors.As(err, &te) {
				outcome = te.Kind.String()
			}
			return errorResult(err.Error()), nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Text}}}, nil
	}
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
