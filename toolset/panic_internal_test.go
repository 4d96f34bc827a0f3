package toolset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// A tool that panics returns a KindPanic error for the model, with no
// stack; the stack goes to the host's logger, and the Set keeps working.
func TestPanicBecomesAnError(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	pol, err := policy.New(policy.Spec{WriteRoots: []string{ws}, Home: ws})
	if err != nil {
		t.Fatal(err)
	}
	var quiet bytes.Buffer
	g, _ := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(&quiet, nil))))
	ctx, release, _ := g.Enter(context.Background())
	defer release()
	var log bytes.Buffer
	s, err := New(ctx, Options{Workspace: ws, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var inCall *audit.Call
	res, err := call(s, WithCallID(ctx, "p1"), "boom", struct{}{}, func(e *env, _ struct{}) (string, error) {
		inCall = audit.CallFrom(e.ctx)
		var m map[string]int
		m["x"] = 1 // a real runtime panic: assignment to a nil map
		return "unreachable", nil
	})
	var te *Error
	if !errors.As(err, &te) || te.Kind != KindPanic || te.Tool != "boom" || te.ID != "p1" || res.Text != "" {
		t.Fatalf("res %+v, err %#v", res, err)
	}
	if !strings.Contains(te.Msg, "internal error: the boom tool failed") || strings.Contains(te.Msg, "goroutine") {
		t.Errorf("message: %s", te.Msg)
	}
	if !strings.Contains(log.String(), "assignment to entry in nil map") || !strings.Contains(log.String(), "goroutine") {
		t.Errorf("the host's log lacks the panic and its stack:\n%s", log.String())
	}
	if inCall == nil || inCall.Active() {
		t.Errorf("the panicking call's mark: %+v", inCall)
	}
	if _, err := s.Write(ctx, WriteInput{Path: "after.txt", Content: "ok"}); err != nil {
		t.Errorf("the Set does not work after a panic: %v", err)
	}
}

// A walk over a tree larger than its bound stops and says so.
func TestWalkBound(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	for i := range 10 {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pol, _ := policy.New(policy.Spec{WriteRoots: []string{ws}, Home: ws})
	g, _ := audit.New(pol, audit.WithLogger(slog.New(slog.DiscardHandler)))
	ctx, release, _ := g.Enter(context.Background())
	defer release()
	s, err := New(ctx, Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer func(n int) { maxWalkEntries = n }(maxWalkEntries)
	maxWalkEntries = 4
	for _, tc := range []struct {
		tool string
		run  func() (Result, error)
	}{
		{"glob", func() (Result, error) { return s.Glob(ctx, GlobInput{Pattern: "*.txt"}) }},
		{"grep", func() (Result, error) { return s.Grep(ctx, GrepInput{Pattern: "x"}) }},
	} {
		res, err := tc.run()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Text, "[stopped after 4 entries") || strings.Count(res.Text, ".txt") != 4 {
			t.Errorf("%s over 10 files with a bound of 4:\n%s", tc.tool, res.Text)
		}
	}
}
