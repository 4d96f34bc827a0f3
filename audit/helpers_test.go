package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// quiet discards slog output in tests that do not look at it.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func tempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newPolicy(t testing.TB, spec policy.Spec) *policy.Policy {
	t.Helper()
	p, err := policy.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newGuard(t testing.TB, p *policy.Policy, opts ...Option) *Guard {
	t.Helper()
	g, err := New(p, append([]Option{WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func enter(t testing.TB, g *Guard) context.Context {
	t.Helper()
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return ctx
}

// fsCheck does what fsguard does for one path: resolve on the real OS
// filesystem (fail closed), then ask the pipeline.
func fsCheck(ctx context.Context, op policy.Op, name, cwd string) error {
	follow := op != policy.OpDelete && op != policy.OpMove
	ev := &Event{Protocol: FS, Op: op, Target: name}
	resolved, err := policy.Resolve(policy.OSFS{}, name, cwd, follow)
	if err != nil {
		return Check(ctx, ev, resolveFailure{err})
	}
	ev.Resolved = resolved
	return Check(ctx, ev, &policy.PathRequest{Op: op, Path: resolved, Cwd: cwd})
}

// resolveFailure denies a target that could not be resolved.
type resolveFailure struct{ err error }

var ruleResolve = &policy.Rule{Kind: policy.KindResolve, Pattern: "targets must resolve safely", Source: "test"}

func (r resolveFailure) Decide(*policy.Policy) policy.Decision {
	return policy.Deny(policy.TierInvalid, ruleResolve, r.err.Error())
}

// logBuffer collects JSON slog records.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) records(t testing.TB) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(l.buf.Bytes()))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}
