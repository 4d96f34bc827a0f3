package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// quiet is the logger every guard of the table uses: a text handler that
// formats into io.Discard, so a denial costs what it costs a host that
// logs (allows are not logged: the scopes are silent unless OnCall is set).
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env owns what the table makes: one temp dir and the guard scopes, all
// undone by close in reverse order.
type env struct {
	dir   string // resolved temp dir, on tmpfs when the host has one
	where string // "tmpfs /dev/shm" or "temp dir /tmp"
	roots int    // write roots of the many-roots row (0: 10,000)
	undo  []func()
}

// newEnv makes the table's temp dir under /dev/shm when it is a writable
// directory (tmpfs: a slow disk would hide the guard's own cost), else
// under os.TempDir.
func newEnv(parent string) (*env, error) {
	e := &env{}
	where := "temp dir"
	if parent == "" {
		parent = os.TempDir()
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			if d, err := os.MkdirTemp("/dev/shm", "auditguard-bench-"); err == nil {
				e.dir, where = d, "tmpfs"
			}
		}
	}
	if e.dir == "" {
		d, err := os.MkdirTemp(parent, "auditguard-bench-")
		if err != nil {
			return nil, err
		}
		e.dir = d
	}
	e.undo = append(e.undo, func() { os.RemoveAll(e.dir) })
	real, err := filepath.EvalSymlinks(e.dir)
	if err != nil {
		e.close()
		return nil, err
	}
	e.dir = real
	e.where = where + " " + filepath.Dir(real)
	return e, nil
}

// close undoes everything, the temp dir last.
func (e *env) close() {
	for i := len(e.undo) - 1; i >= 0; i-- {
		e.undo[i]()
	}
	e.undo = nil
}

// mkdir makes a directory (and its parents) under the temp dir.
func (e *env) mkdir(rel ...string) (string, error) {
	p := filepath.Join(append([]string{e.dir}, rel...)...)
	return p, os.MkdirAll(p, 0o755)
}

// enter builds a guard on spec and enters it; the scope is released when
// the env closes.
func (e *env) enter(spec policy.Spec, opts ...audit.Option) (context.Context, *policy.Policy, error) {
	pol, err := policy.New(spec)
	if err != nil {
		return nil, nil, err
	}
	g, err := audit.New(pol, append([]audit.Option{audit.WithLogger(quiet)}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		return nil, nil, err
	}
	e.undo = append(e.undo, release)
	return ctx, pol, nil
}

// onCallContinue is an OnCall callback that lets every call go on to the
// policy: with it no call is silent, so each one builds its event and runs
// the whole pipeline.
var onCallContinue = audit.WithOnCall(func(context.Context, *audit.Event) audit.Verdict { return audit.Continue })

// errNotDenied reports a call the table expected the guard to deny.
var errNotDenied = errors.New("the guard allowed a call the table expects it to deny")
