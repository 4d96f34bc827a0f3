// Command auditguard-mcp serves auditguard's guarded tool set (read,
// write, edit, glob, grep, list, fetch, bash) to an MCP client, over stdio
// or, with --http, streamable HTTP on a loopback address.
//
//	auditguard-mcp --policy policy.toml --workspace ~/src/project [--log decisions.jsonl] [--http 127.0.0.1:8765] [--no-shell]
//
// The policy file (docs/policy.md) decides every call; it is reloaded
// when it changes, and an edit that does not load keeps the last good
// policy. Every decision (allowed calls too) and every tool call is
// logged as one JSON line to stderr, or appended to --log. Each tool
// call's decisions carry its name and number ("tool":"edit#3").
//
// Exit status: 0 when the client went away or a signal ended the server,
// 1 when it could not start (a policy that does not load, a missing
// workspace, an address in use), 2 on a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/mcp/server"
	"github.com/auditguard/auditguard/policy/policyfile"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/shellguard"
	"github.com/auditguard/auditguard/toolset"
)

func main() {
	code := run(os.Args[1:], os.Stderr)
	procguard.Shutdown() // leave no cgroup of this process behind
	os.Exit(code)
}

type config struct {
	policy, workspace, log, http string
	noShell                      bool
	shellTimeout                 time.Duration
}

func parse(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("auditguard-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.policy, "policy", "", "the policy file (TOML, docs/policy.md); required, reloaded on change")
	fs.StringVar(&c.workspace, "workspace", "", "the workspace directory relative paths start from; required")
	fs.StringVar(&c.log, "log", "", "append the JSON-line decision log to this file instead of stderr")
	fs.StringVar(&c.http, "http", "", "serve streamable HTTP on this loopback address (127.0.0.1:PORT, [::1]:PORT, localhost:PORT) instead of stdio")
	fs.BoolVar(&c.noShell, "no-shell", false, "leave the bash tool out")
	fs.DurationVar(&c.shellTimeout, "shell-timeout", shellguard.DefaultTimeout, "the longest one bash call may run")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	case c.policy == "":
		return c, errors.New("--policy is required")
	case c.workspace == "":
		return c, errors.New("--workspace is required")
	}
	if c.http != "" {
		if err := loopback(c.http); err != nil {
			return c, err
		}
	}
	return c, nil
}

// loopback refuses an HTTP address that is not on loopback: the MCP
// client is not authenticated.
func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %s: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--http %s: only loopback addresses are served (the MCP client is not authenticated)", addr)
}

func run(args []string, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "auditguard-mcp:", err)
		return 2
	}
	logOut := stderr
	if c.log != "" {
		f, err := os.OpenFile(c.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(stderr, "auditguard-mcp:", err)
			return 1
		}
		defer f.Close()
		logOut = f
	}
	log := slog.New(slog.NewJSONHandler(logOut, nil))
	if err := serve(c, log, stderr); err != nil {
		log.Error("auditguard-mcp: stopped", "error", err.Error())
		if c.log != "" {
			fmt.Fprintln(stderr, "auditguard-mcp:", err)
		}
		return 1
	}
	return 0
}

func serve(c config, log *slog.Logger, stderr io.Writer) error {
	first, err := policyfile.LoadFile(c.policy)
	if err != nil {
		return fmt.Errorf("policy %s: %w", c.policy, err)
	}
	g, err := audit.New(first.Policy, audit.WithLogger(log), audit.WithLogAllows())
	if err != nil {
		return err
	}
	w, err := policyfile.Watch(c.policy, g, policyfile.WithWatchLogger(log))
	if err != nil {
		return fmt.Errorf("policy %s: %w", c.policy, err)
	}
	defer w.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	gctx, release, err := g.Enter(ctx)
	if err != nil {
		return err
	}
	defer release()

	opts := toolset.Options{Workspace: c.workspace, Logger: log}
	if !c.noShell {
		opts.Shell = &shellguard.Options{Timeout: c.shellTimeout}
	}
	set, err := toolset.New(gctx, opts)
	if err != nil {
		return err
	}
	defer set.Close()
	srv := server.New(set, server.Options{Logger: log,
		Instructions: "Tools over the workspace " + set.Workspace() + ", every call decided by an auditguard policy. A refusal's text says which rule refused and how it could be allowed; retrying a refused call will be refused again."})
	log.Info("auditguard-mcp: serving", "workspace", set.Workspace(), "policy", c.policy, "http", c.http)

	if c.http == "" {
		err := srv.Run(ctx, &mcp.StdioTransport{})
		if ctx.Err() != nil || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	ln, err := net.Listen("tcp", c.http)
	if err != nil {
		return err
	}
	// The address actually bound (a port 0 is chosen here), for whoever
	// started the server.
	fmt.Fprintf(stderr, "auditguard-mcp: listening on http://%s/\n", ln.Addr())
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil),
		ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
