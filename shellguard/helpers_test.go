package shellguard_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/shellguard"
)

// env is one guard scope over a temporary workspace.
type env struct {
	ctx context.Context
	dir string // the write root, symbolic links resolved
	rec *audit.Recorder
}

// programs every test policy allows (bare names, looked up in the
// policy's PATH); rm and anything else is left without a rule.
var allowed = []string{"true", "false", "echo", "cat", "printenv", "sleep", "ls", "gofmt", "seq"}

// setup enters a guard whose only write root is a temporary directory,
// allowing the programs above and recording every decision, allows too.
// HOME is a temporary directory, never the real one.
func setup(t testing.TB, opts ...audit.Option) *env {
	t.Helper()
	return setupWith(t, nil, opts...)
}

// setupWith is setup with the policy's spec changed by edit first.
func setupWith(t testing.TB, edit func(*policy.Spec), opts ...audit.Option) *env {
	t.Helper()
	if tt, ok := t.(*testing.T); ok {
		tt.Setenv("HOME", t.TempDir())
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := slices.Clone(policy.DefaultExecPath)
	if p, err := exec.LookPath("gofmt"); err == nil {
		path = append(path, filepath.Dir(p))
	}
	var rules []policy.ExecRule
	for _, p := range allowed {
		rules = append(rules, policy.ExecRule{Program: p})
	}
	spec := policy.Spec{
		WriteRoots: []string{dir},
		ReadDeny:   []string{filepath.Join(dir, "secrets")},
		Exec:       policy.ExecSpec{Rules: rules, Path: path},
	}
	if edit != nil {
		edit(&spec)
	}
	pol, err := policy.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	rec := audit.NewRecorder()
	base := []audit.Option{audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), audit.WithRecorder(rec), audit.WithLogAllows()}
	g, err := audit.New(pol, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return &env{ctx: ctx, dir: dir, rec: rec}
}

// session starts a session in e.dir, closed when the test ends.
func (e *env) session(t testing.TB, opts shellguard.Options) *shellguard.Session {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = e.dir
	}
	opts.Recorder = e.rec
	s, err := shellguard.New(e.ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// run runs script and fails the test on a session error.
func run(t testing.TB, s *shellguard.Session, script string) *shellguard.Result {
	t.Helper()
	res, err := s.Run(context.Background(), script)
	if err != nil {
		t.Fatalf("Run(%q): %v", script, err)
	}
	return res
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// withArgv returns the records whose argv is argv.
func withArgv(recs []audit.Record, argv string) []audit.Record {
	var out []audit.Record
	for _, r := range recs {
		if strings.Join(r.Argv, " ") == argv {
			out = append(out, r)
		}
	}
	return out
}

// procsWith lists the live processes whose command line holds marker as
// one argument.
func procsWith(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(b), "\x00"), marker) {
			out = append(out, pid)
		}
	}
	return out
}

// noneFor fails the test if a process with marker exists at any time
// within d: a call's process that Run did not wait for would show up
// (alive, or being started) right after Run returned.
func noneFor(t testing.TB, marker string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if p := procsWith(marker); len(p) > 0 {
			t.Fatalf("processes with %s outlived their call: %v", marker, p)
		}
	}
}
