package toolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/toolset"
)

// fixture is a workspace in t.TempDir() with a guard entered on it.
type fixture struct {
	t       testing.TB
	ws      string
	ctx     context.Context
	release func()
	set     *toolset.Set
	rec     *audit.Recorder
	log     *bytes.Buffer
}

// newFixture makes a workspace with a policy that lets writes land in it,
// forbids reading secrets/ and *.secret, and lets the given CIDRs be
// dialed.
func newFixture(t testing.TB, netAllow ...policy.NetRule) *fixture {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Spec{
		WriteRoots: []string{ws},
		ReadDeny:   []string{"*.secret", filepath.Join(ws, "secrets")},
		Home:       ws,
		Net:        policy.NetSpec{Rules: netAllow},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ws: ws, rec: audit.NewRecorder(), log: &bytes.Buffer{}}
	g, err := audit.New(pol, audit.WithRecorder(f.rec), audit.WithLogAllows(),
		audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	f.ctx, f.release, err = g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.release)
	f.set, err = toolset.New(f.ctx, toolset.Options{Workspace: ws,
		Logger: slog.New(slog.NewTextHandler(f.log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.set.Close() })
	return f
}

// file writes a file in the workspace with the raw OS, for set-up.
func (f *fixture) file(rel, content string) string {
	f.t.Helper()
	p := filepath.Join(f.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// read returns a workspace file's contents, "" and false when missing.
func (f *fixture) read(rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(f.ws, rel))
	return string(b), err == nil
}

// call runs a tool with a JSON input under call id id.
func (f *fixture) call(id, tool string, input any) (toolset.Result, error) {
	f.t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.set.Call(toolset.WithCallID(context.Background(), id), tool, b)
}

// callRaw runs a tool with a JSON input as written.
func (f *fixture) callRaw(tool, input string) (toolset.Result, error) {
	return f.set.Call(context.Background(), tool, json.RawMessage(input))
}

// mustOK fails unless the call succeeded; it returns the text.
func mustOK(t *testing.T, res toolset.Result, err error) string {
	t.Helper()
	if err != nil {
		t.Fatalf("call failed: %v", err)
	}
	return res.Text
}

// mustFail fails unless the call failed with kind and a message holding
// every one of want; it returns the error.
func mustFail(t *testing.T, res toolset.Result, err error, kind toolset.Kind, want ...string) *toolset.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("call succeeded, want a %v error; text:\n%s", kind, res.Text)
	}
	var te *toolset.Error
	if !errors.As(err, &te) {
		t.Fatalf("error is %T, not *toolset.Error: %v", err, err)
	}
	if te.Kind != kind {
		t.Fatalf("kind = %v, want %v; message:\n%s", te.Kind, kind, te.Msg)
	}
	for _, w := range want {
		if !strings.Contains(te.Msg, w) {
			t.Errorf("message lacks %q:\n%s", w, te.Msg)
		}
	}
	if strings.Contains(te.Msg, "goroutine ") || strings.Contains(te.Msg, ".go:") && kind != toolset.KindDenied {
		t.Errorf("message looks like a stack trace:\n%s", te.Msg)
	}
	return te
}

// snapshot is a file's content and modification time.
type snapshot struct {
	content string
	mod     time.Time
	exists  bool
}

func (f *fixture) snap(rel string) snapshot {
	fi, err := os.Stat(filepath.Join(f.ws, rel))
	if err != nil {
		return snapshot{}
	}
	c, _ := f.read(rel)
	return snapshot{content: c, mod: fi.ModTime(), exists: true}
}

func (f *fixture) unchanged(rel string, before snapshot) {
	f.t.Helper()
	if after := f.snap(rel); after != before {
		f.t.Errorf("%s changed: before %+v, after %+v", rel, before, after)
	}
}

// ok runs a tool and fails the test unless it succeeded; it returns the text.
func (f *fixture) ok(t *testing.T, id, tool string, input any) string {
	t.Helper()
	res, err := f.call(id, tool, input)
	return mustOK(t, res, err)
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// mustPolicy is the fixture's policy without read-deny or net rules.
func mustPolicy(t *testing.T, ws string) *policy.Policy {
	t.Helper()
	p, err := policy.New(policy.Spec{WriteRoots: []string{ws}, Home: ws})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
