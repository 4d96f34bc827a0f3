package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// cmdResult is one in-process run of the command line.
type cmdResult struct {
	code           int
	stdout, stderr string
}

// cli runs the auditdemo command line in-process.
func cli(t *testing.T, args ...string) cmdResult {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return cmdResult{code: code, stdout: out.String(), stderr: errb.String()}
}

func (r cmdResult) String() string {
	return "exit " + strconv.Itoa(r.code) + "\n--- stdout:\n" + r.stdout + "--- stderr:\n" + r.stderr
}

// agentHome makes a temporary HOME with a work directory, which the
// example policy testdata/agent.toml makes its write root ("~/work"), and
// returns the resolved work directory and the policy's absolute path.
func agentHome(t *testing.T) (work, pol string) {
	t.Helper()
	pol, err := filepath.Abs(filepath.Join("testdata", "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	work = filepath.Join(home, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	return work, pol
}

// wantAll fails unless s contains every string of want.
func wantAll(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, s)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
