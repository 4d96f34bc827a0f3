package shellguard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/shellguard"
)

func TestPipelinesAndSubstitutions(t *testing.T) {
	e := setup(t)
	s := e.session(t, shellguard.Options{})
	res := run(t, s, `n=$(seq 1 3 | cat | cat); echo "got $n" | cat`)
	if res.ExitCode != 0 || res.Stdout != "got 1\n2\n3\n" {
		t.Fatalf("exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	for _, argv := range []string{"seq 1 3", "cat"} {
		if len(withArgv(res.Records, argv)) == 0 {
			t.Errorf("no record of %q", argv)
		}
	}
	// A refused stage fails with 126 and the others run: pipefail off, as
	// in bash; on, the pipeline fails.
	res = run(t, s, "seq 1 2 | rm -f x | cat; echo \"status $?\"; set -o pipefail; seq 1 2 | rm -f x | cat; echo \"pipefail $?\"")
	if res.Stdout != "status 0\npipefail 126\n" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
}

func TestExecRedirectionLastsForTheCall(t *testing.T) {
	e := setup(t)
	s := e.session(t, shellguard.Options{})
	res := run(t, s, "echo before; exec > log.txt; echo into the file; seq 1 2")
	if res.Stdout != "before\n" {
		t.Fatalf("stdout %q", res.Stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "log.txt")); string(b) != "into the file\n1\n2\n" {
		t.Fatalf("log.txt %q", b)
	}
	if res := run(t, s, "echo next call"); res.Stdout != "next call\n" {
		t.Fatalf("the next call's stdout %q", res.Stdout)
	}
	// The file exec made the shell's stdout was closed with its call.
	log := filepath.Join(e.dir, "log.txt")
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if target, _ := os.Readlink("/proc/self/fd/" + fd.Name()); target == log {
			t.Fatalf("descriptor %s still open on %s", fd.Name(), log)
		}
	}
}

func TestBackgroundJobEndsWithTheCall(t *testing.T) {
	e := setup(t)
	s := e.session(t, shellguard.Options{})
	for _, tc := range []struct{ name, script string }{
		// The job is running when the call ends, or still starting.
		{"running", "sleep %s & sleep 0.5; echo started"},
		{"starting", "sleep %s & echo started"},
		{"in a subshell", "(cat /dev/zero | sleep %s) & sleep 0.5; echo started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := fmt.Sprintf("1000.%06d", rand.IntN(1e6))
			start := time.Now()
			res := run(t, s, fmt.Sprintf(tc.script, marker))
			if res.Stdout != "started\n" || res.TimedOut || time.Since(start) > 10*time.Second {
				t.Fatalf("%+v after %v", res, time.Since(start))
			}
			noneFor(t, marker, 500*time.Millisecond)
		})
	}
	// Within a call, wait waits for it.
	res := run(t, s, "sleep 0.2 & wait; echo waited")
	if res.Stdout != "waited\n" || len(withArgv(res.Records, "sleep 0.2")) != 1 {
		t.Fatalf("%+v", res)
	}
}

func TestHandlersInAHostRunner(t *testing.T) {
	e := setup(t)
	if err := os.MkdirAll(filepath.Join(e.dir, ".git/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := shellguard.NewHandlers(e.ctx)
	var out, errb bytes.Buffer
	r, err := interp.New(append(h.Options(), interp.Dir(e.dir), interp.StdIO(nil, &out, &errb))...)
	if err != nil {
		t.Fatal(err)
	}
	file, err := syntax.NewParser().Parse(strings.NewReader(
		"echo hi > ok.txt; seq 1 2; rm ok.txt; echo \"rm $?\"; echo x > .git/hooks/pre-commit; echo \"hook $?\""), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, done := audit.WithCall(e.ctx, "host-shell#1", nil)
	defer done()
	if err := r.Run(ctx, file); err != nil {
		t.Fatalf("%v; stderr %s", err, errb.String())
	}
	if out.String() != "1\n2\nrm 126\nhook 1\n" {
		t.Fatalf("stdout %q, stderr %s", out.String(), errb.String())
	}
	if _, err := os.Stat(filepath.Join(e.dir, "ok.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".git/hooks/pre-commit")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the hook exists: %v", err)
	}
	var tools []string
	for _, rec := range e.rec.Records() {
		if rec.Outcome == audit.Denied {
			tools = append(tools, rec.Tool)
		}
	}
	if strings.Join(tools, ",") != "host-shell#1,host-shell#1" {
		t.Fatalf("denials by %v, want both by host-shell#1", tools)
	}
}

func TestEnvironmentReachesChildrenFiltered(t *testing.T) {
	e := setup(t)
	s := e.session(t, shellguard.Options{Env: []string{"PATH=/nowhere", "HOME=" + e.dir, "FOO=bar", "API_TOKEN=s3cret", "LD_PRELOAD=/tmp/x.so"}})
	res := run(t, s, `echo "shell sees $API_TOKEN"; printenv FOO; printenv API_TOKEN; echo "token $?"; printenv LD_PRELOAD; echo "preload $?"; printenv PATH`)
	out := strings.Split(res.Stdout, "\n")
	if len(out) < 5 || out[0] != "shell sees s3cret" || out[1] != "bar" || out[2] != "token 1" || out[3] != "preload 1" || out[4] == "/nowhere" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
}

func TestSessionsOnOneScopeKeepTheirRecords(t *testing.T) {
	e := setup(t)
	a := e.session(t, shellguard.Options{})
	b := e.session(t, shellguard.Options{Tool: "other"})
	type got struct {
		res *shellguard.Result
		err error
	}
	ra, rb := make(chan got, 1), make(chan got, 1)
	go func() { res, err := a.Run(context.Background(), "seq 1 1; seq 1 2; rm -f a"); ra <- got{res, err} }()
	go func() { res, err := b.Run(context.Background(), "seq 1 3; seq 1 4; rm -f b"); rb <- got{res, err} }()
	for _, tc := range []struct {
		ch   chan got
		tool string
		own  []string
	}{
		{ra, "bash#", []string{"seq 1 1", "seq 1 2", "rm -f a"}},
		{rb, "other#", []string{"seq 1 3", "seq 1 4", "rm -f b"}},
	} {
		g := <-tc.ch
		if g.err != nil {
			t.Fatal(g.err)
		}
		var argvs []string
		for _, r := range g.res.Records {
			argvs = append(argvs, strings.Join(r.Argv, " "))
			if r.Tool != g.res.Call || !strings.HasPrefix(r.Tool, tc.tool) {
				t.Errorf("record %v of call %s names %q", r.Argv, g.res.Call, r.Tool)
			}
		}
		if strings.Join(argvs, ",") != strings.Join(tc.own, ",") {
			t.Errorf("call %s: records %v, want %v", g.res.Call, argvs, tc.own)
		}
	}
}

// An agent (or a prompt injection) hiding a program or a target from a
// string list: the interpreter expands it first, so the guard sees the
// real argv and the real path.
func TestHidingDoesNotHelp(t *testing.T) {
	e := setup(t)
	keep := filepath.Join(e.dir, "keep", "f")
	write(t, keep, "x")
	if err := os.MkdirAll(filepath.Join(e.dir, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git/hooks/pre-commit", filepath.Join(e.dir, "innocent")); err != nil {
		t.Fatal(err)
	}
	// A fake cat in the workspace, to be found first through PATH.
	write(t, filepath.Join(e.dir, "bin", "cat"), "#!/bin/sh\necho fake\n")
	if err := os.Chmod(filepath.Join(e.dir, "bin", "cat"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := e.session(t, shellguard.Options{})
	for _, script := range []string{
		"rm -rf keep",
		"/usr/bin/rm -rf keep",
		"exec rm -rf keep",
		"command rm -rf keep",
		`eval "r""m -rf keep"`,
		`$(printf 'r\x6d') -rf keep`,
		"x=rm; $x -rf keep",
		"f() { \"$@\"; }; f rm -rf keep",
		"env rm -rf keep",
		"echo rm -rf keep | sh",
		"sh -c 'rm -rf keep'",
		"echo evil > innocent",
		"echo evil > ../escape-$$",
		"cd / && echo evil > tmp/escape-$$",
	} {
		t.Run(script, func(t *testing.T) {
			res := run(t, s, script)
			run(t, s, "cd "+e.dir)
			if res.ExitCode == 0 {
				t.Errorf("exit 0; stdout %q stderr %q", res.Stdout, res.Stderr)
			}
			if _, err := os.Stat(keep); err != nil {
				t.Fatalf("keep/f is gone: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(e.dir, ".git", "hooks", "pre-commit")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the hook was written through the link")
			}
			if !strings.Contains(res.Stderr, "auditguard:") {
				t.Errorf("no teaching text: %q", res.Stderr)
			}
		})
	}
	res := run(t, s, "export PATH=$PWD/bin:$PATH; echo real | cat")
	if res.Stdout != "real\n" {
		t.Fatalf("PATH in the session chose the program: %q", res.Stdout)
	}
}

func TestWaitingRunHonoursItsContext(t *testing.T) {
	e := setup(t)
	s := e.session(t, shellguard.Options{})
	busy := make(chan *shellguard.Result, 1)
	marker := fmt.Sprintf("2.%06d", rand.IntN(1e6))
	go func() {
		res, _ := s.Run(context.Background(), "sleep "+marker+"; echo first")
		busy <- res
	}()
	// Once its sleep runs, the first call holds the session.
	for deadline := time.Now().Add(10 * time.Second); len(procsWith(marker)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first call's sleep never started")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := s.Run(ctx, "echo second > second.txt")
	if !errors.Is(err, context.DeadlineExceeded) || res != nil || time.Since(start) > time.Second {
		t.Fatalf("a call whose context ended while it waited: %+v, %v after %v", res, err, time.Since(start))
	}
	if _, err := os.Stat(filepath.Join(e.dir, "second.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the call that gave up waiting ran")
	}
	if res := <-busy; res == nil || res.Stdout != "first\n" {
		t.Fatalf("the first call: %+v", res)
	}
}
