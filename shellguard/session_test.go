package shellguard_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/internal/proctree"
	"github.com/auditguard/auditguard/shellguard"
)

func TestStateAcrossCalls(t *testing.T) {
	e := setup(t)
	sub := filepath.Join(e.dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	s := e.session(t, shellguard.Options{})

	res := run(t, s, `cd sub && export GREETING=hello && plain=kept && greet() { echo "$GREETING from $(pwd)"; }`)
	if res.ExitCode != 0 || res.Dir != sub || s.Dir() != sub {
		t.Fatalf("first call: exit %d, Dir %q, session Dir %q, stderr %q", res.ExitCode, res.Dir, s.Dir(), res.Stderr)
	}
	// A failing call and an exit end the call, not the session.
	if res := run(t, s, "false"); res.ExitCode != 1 {
		t.Fatalf("false: exit %d", res.ExitCode)
	}
	if res := run(t, s, "echo before; exit 3; echo after"); res.ExitCode != 3 || res.Stdout != "before\n" {
		t.Fatalf("exit 3: exit %d, stdout %q", res.ExitCode, res.Stdout)
	}
	// The function, the exported variable (reaching a child through
	// procguard), the plain one (not reaching it) and the directory.
	res = run(t, s, `greet; printenv GREETING; echo "$plain"; printenv plain; echo "status $?"; pwd`)
	want := fmt.Sprintf("hello from %s\nhello\nkept\nstatus 1\n%s\n", sub, sub)
	if res.Stdout != want || res.Dir != sub {
		t.Fatalf("state not kept:\nstdout %q\nwant   %q\nstderr %q", res.Stdout, want, res.Stderr)
	}
	if res := run(t, s, "cd .. && unset GREETING && printenv GREETING; echo $?"); res.Stdout != "1\n" || res.Dir != e.dir {
		t.Fatalf("cd .. and unset: stdout %q, Dir %q", res.Stdout, res.Dir)
	}
}

func TestLoopJudgedPerArgv(t *testing.T) {
	e := setup(t)
	write(t, filepath.Join(e.dir, "a.go"), "package a\n")
	write(t, filepath.Join(e.dir, "b.go"), "package   b\nfunc  F( ) {}\n")
	s := e.session(t, shellguard.Options{})

	res := run(t, s, `for f in *.go; do gofmt -l "$f"; done`)
	if res.ExitCode != 0 || res.Stdout != "b.go\n" {
		t.Fatalf("loop: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	for _, argv := range []string{"gofmt -l a.go", "gofmt -l b.go"} {
		recs := withArgv(res.Records, argv)
		if len(recs) != 1 {
			t.Fatalf("%d records with argv %q in %+v", len(recs), argv, res.Records)
		}
		if r := recs[0]; r.Protocol != audit.Exec || r.Outcome != audit.Allowed || r.Tool != res.Call {
			t.Errorf("record of %q: %v %v tool %q, want exec allowed by call %q", argv, r.Protocol, r.Outcome, r.Tool, res.Call)
		}
	}
	// The glob listed the directory through fsguard: its read is recorded
	// for this call too.
	if !slices.ContainsFunc(res.Records, func(r audit.Record) bool {
		return r.Protocol == audit.FS && r.Resolved == e.dir && r.Tool == res.Call
	}) {
		t.Errorf("no fs record of the glob's directory read in %+v", res.Records)
	}
}

func TestDeniedProgram(t *testing.T) {
	e := setup(t)
	keep := filepath.Join(e.dir, "keep")
	write(t, filepath.Join(keep, "f"), "x")
	s := e.session(t, shellguard.Options{})

	res := run(t, s, "rm -rf keep; echo \"after $?\"")
	if res.ExitCode != 0 || res.Stdout != "after 126\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	for _, want := range []string{"line 1:1: rm: auditguard: exec denied", "to allow:", "retrying this call"} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.Stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(keep, "f")); err != nil {
		t.Fatalf("rm was refused but the file is gone: %v", err)
	}
	denied := withArgv(res.Records, "rm -rf keep")
	if len(denied) != 1 || denied[0].Outcome != audit.Denied || denied[0].Tool != res.Call {
		t.Fatalf("records of rm: %+v", denied)
	}
	if res := run(t, s, "rm keep/f"); res.ExitCode != shellguard.StatusDenied {
		t.Fatalf("rm as the last command: exit %d", res.ExitCode)
	}
	// A program the policy's PATH does not hold is 127, and the session
	// goes on.
	if res := run(t, s, "no-such-program-xyz"); res.ExitCode != shellguard.StatusNotFound || !strings.Contains(res.Stderr, "command not found") {
		t.Fatalf("missing program: exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
	if res := run(t, s, "echo still here"); res.Stdout != "still here\n" {
		t.Fatalf("after the denial: %q", res.Stdout)
	}
}

func TestProtectedRedirections(t *testing.T) {
	e := setup(t)
	if err := os.MkdirAll(filepath.Join(e.dir, ".git/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := e.session(t, shellguard.Options{})
	for _, tc := range []struct{ name, script, path string }{
		{"truncate", "echo evil > .git/hooks/pre-commit", ".git/hooks/pre-commit"},
		{"append", "echo evil >> .git/hooks/pre-commit", ".git/hooks/pre-commit"},
		{"both streams", "echo evil &> .git/hooks/pre-push", ".git/hooks/pre-push"},
		{"heredoc", "cat > .git/hooks/post-checkout <<'EOF'\n#!/bin/sh\nEOF", ".git/hooks/post-checkout"},
		{"from a subdirectory", "cd .git && echo evil > hooks/pre-commit", ".git/hooks/pre-commit"},
		{"through a variable", "h=.git/hooks; f=pre-commit; echo evil > \"$h/$f\"", ".git/hooks/pre-commit"},
		{"git config", "echo '[core]' > .git/config", ".git/config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, s, tc.script+"\necho \"status $?\"")
			if !strings.Contains(res.Stdout, "status 1") || !strings.Contains(res.Stderr, "auditguard: fs write denied") || !strings.Contains(res.Stderr, "to allow:") {
				t.Fatalf("stdout %q\nstderr %s", res.Stdout, res.Stderr)
			}
			if _, err := os.Lstat(filepath.Join(e.dir, tc.path)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s exists on disk after a refused redirection (%v)", tc.path, err)
			}
			if !slices.ContainsFunc(res.Records, func(r audit.Record) bool {
				return r.Protocol == audit.FS && r.Outcome == audit.Denied && r.Resolved == filepath.Join(e.dir, tc.path) && r.Tool == res.Call
			}) {
				t.Fatalf("no denied fs record of %s for call %s in %+v", tc.path, res.Call, res.Records)
			}
			run(t, s, "cd "+e.dir)
		})
	}
	// A protected name tests as not writable; the workspace does.
	res := run(t, s, "test -w .git/config; echo $?; test -w .; echo $?")
	if res.Stdout != "1\n0\n" {
		t.Fatalf("test -w: %q", res.Stdout)
	}
}

func TestHeredocWritesFile(t *testing.T) {
	e := setup(t)
	s := e.session(t, shellguard.Options{})
	res := run(t, s, "cat > NOTES.md <<'EOF'\n# Notes\n$HOME and $(rm -rf /) stay as written\nEOF\necho done")
	if res.ExitCode != 0 || res.Stdout != "done\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	b, err := os.ReadFile(filepath.Join(e.dir, "NOTES.md"))
	if err != nil || string(b) != "# Notes\n$HOME and $(rm -rf /) stay as written\n" {
		t.Fatalf("NOTES.md: %q, %v", b, err)
	}
	// An expanding heredoc and an appending redirection of a builtin.
	res = run(t, s, "name=agent\ncat >> NOTES.md <<EOF\nby $name\nEOF\necho tail >> NOTES.md\ncat NOTES.md")
	if want := "# Notes\n$HOME and $(rm -rf /) stay as written\nby agent\ntail\n"; res.Stdout != want {
		t.Fatalf("stdout %q, want %q (stderr %q)", res.Stdout, want, res.Stderr)
	}
}

func TestReadDenyHoldsForTheShell(t *testing.T) {
	e := setup(t)
	write(t, filepath.Join(e.dir, "secrets", "token"), "s3cret\n")
	s := e.session(t, shellguard.Options{})
	res := run(t, s, "read -r x < secrets/token; echo \"read $? $x\"; echo secrets/*; test -e secrets/token; echo \"test $?\"; source secrets/token; echo \"source $?\"")
	if strings.Contains(res.Stdout, "s3cret") || strings.Contains(res.Stderr, "s3cret") || strings.Contains(res.Stdout, "secrets/token") {
		t.Fatalf("the shell read a read-denied file:\nstdout %q\nstderr %q", res.Stdout, res.Stderr)
	}
	want := "read 1 \nsecrets/*\ntest 1\nsource 1\n"
	if res.Stdout != want {
		t.Fatalf("stdout %q, want %q (stderr %q)", res.Stdout, want, res.Stderr)
	}
	if !strings.Contains(res.Stderr, "auditguard: fs read denied") {
		t.Fatalf("no teaching text for the refused read: %q", res.Stderr)
	}
}

func TestTimeoutKillsTree(t *testing.T) {
	e := setup(t)
	s := e.session(t, shellguard.Options{Timeout: 3 * time.Second})
	// Markers make the call's processes findable in /proc: a background
	// job's sleep, and the loop's sleeps.
	bg := fmt.Sprintf("1000.%06d", rand.IntN(1e6))
	loop := fmt.Sprintf("0.2%06d", rand.IntN(1e6))
	script := fmt.Sprintf("sleep %s &\n(sleep %s; echo never) &\nwhile true; do sleep %s; done", bg, bg, loop)

	seen := map[int]bool{}
	var mu sync.Mutex
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			mu.Lock()
			for _, p := range append(procsWith(bg), procsWith(loop)...) {
				seen[p] = true
			}
			mu.Unlock()
		}
	}()
	start := time.Now()
	res := run(t, s, script)
	took := time.Since(start)
	close(stop)
	<-watched

	if !res.TimedOut || res.ExitCode != shellguard.StatusKilled || !strings.Contains(res.Stderr, "[timed out after 3s: every program the call started was killed]") {
		t.Fatalf("TimedOut %v, exit %d, stderr %q", res.TimedOut, res.ExitCode, res.Stderr)
	}
	if took > 3*time.Second+10*time.Second {
		t.Fatalf("the call took %v with a 3s timeout", took)
	}
	if strings.Contains(res.Stdout, "never") {
		t.Fatalf("a background job ran past the call: %q", res.Stdout)
	}
	mu.Lock()
	defer mu.Unlock()
	var bgSeen int
	for pid := range seen {
		if proctree.Alive(pid) {
			t.Errorf("pid %d of the call is alive after Run returned", pid)
		}
	}
	for _, p := range procsWith(bg) {
		t.Errorf("pid %d (sleep %s) is alive after Run returned", p, bg)
	}
	for _, p := range procsWith(loop) {
		t.Errorf("pid %d (sleep %s) is alive after Run returned", p, loop)
	}
	for pid := range seen {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(b), bg) {
			bgSeen++
		}
	}
	if len(seen) == 0 {
		t.Fatal("the watcher saw none of the call's processes: the test proves nothing")
	}
	t.Logf("saw %d processes of the call (took %v); none left", len(seen), took)

	// The session goes on, in the same place.
	if res := run(t, s, "echo alive; pwd"); res.Stdout != "alive\n"+e.dir+"\n" || res.TimedOut {
		t.Fatalf("after the timeout: %+v", res)
	}
}

func TestOutputCap(t *testing.T) {
	e := setup(t)
	const max = 1000
	s := e.session(t, shellguard.Options{MaxOutput: max})
	var lines strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&lines, "line %d\n", i)
	}
	full := lines.String()
	write(t, filepath.Join(e.dir, "big.txt"), full)

	for _, tc := range []struct{ name, script string }{
		{"builtin", "i=0; while [ $i -lt 2000 ]; do echo \"line $i\"; i=$((i+1)); done"},
		{"program", "cat big.txt"},
		{"program then builtin", "cat big.txt; echo end >&2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, s, tc.script)
			cut := len(full) - max
			if res.StdoutCut != cut {
				t.Fatalf("StdoutCut %d, want %d", res.StdoutCut, cut)
			}
			note := fmt.Sprintf("\n[output truncated: %d bytes omitted]\n", cut)
			head, tail, ok := strings.Cut(res.Stdout, note)
			if !ok {
				t.Fatalf("no %q in %q", note, res.Stdout)
			}
			if !strings.HasPrefix(full, head) || !strings.HasSuffix(full, tail) || len(head)+len(tail) != max {
				t.Fatalf("kept %d+%d bytes, not the first and last of %d", len(head), len(tail), max)
			}
			if res.StderrCut != 0 || strings.Contains(res.Stderr, "truncated") {
				t.Fatalf("stderr was cut: %q", res.Stderr)
			}
		})
	}
	if res := run(t, s, "echo short"); res.Stdout != "short\n" || res.StdoutCut != 0 {
		t.Fatalf("a short output: %+v", res)
	}
}

func TestParseError(t *testing.T) {
	e := setup(t)
	s := e.session(t, shellguard.Options{})
	for _, tc := range []struct{ script, pos string }{
		{"echo made > made.txt\nif true; then echo x", "2:1"},
		{"echo made > made.txt\necho 'unterminated", "2:6"},
		{"echo made > made.txt; cd /; done", "1:29"},
	} {
		res, err := s.Run(context.Background(), tc.script)
		var pe *shellguard.ParseError
		if !errors.As(err, &pe) || res != nil {
			t.Fatalf("%q: result %v, error %v; want a *ParseError", tc.script, res, err)
		}
		if !strings.Contains(err.Error(), tc.pos) || !strings.Contains(err.Error(), "nothing ran") {
			t.Errorf("%q: %v lacks %s", tc.script, err, tc.pos)
		}
		if _, err := os.Stat(filepath.Join(e.dir, "made.txt")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%q ran in part: made.txt exists", tc.script)
		}
	}
	if res := run(t, s, "pwd"); res.Stdout != e.dir+"\n" {
		t.Fatalf("after parse errors: %q", res.Stdout)
	}
}

func TestConcurrentRunsAreSerialised(t *testing.T) {
	e := setup(t)
	s := e.session(t, shellguard.Options{})
	run(t, s, "n=0")
	const calls = 8
	outs := make([]string, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			// A read, a program and a write of the same variable: a
			// call interleaved with another would lose an increment.
			res, err := s.Run(context.Background(), "m=$n; /bin/true; n=$((m+1)); echo $n")
			if err != nil {
				t.Error(err)
				return
			}
			outs[i] = strings.TrimSpace(res.Stdout)
		})
	}
	wg.Wait()
	slices.Sort(outs)
	want := []string{"1", "2", "3", "4", "5", "6", "7", "8"}
	if !slices.Equal(outs, want) {
		t.Fatalf("outputs %v, want %v", outs, want)
	}
}

func TestCloseEndsRun(t *testing.T) {
	e := setup(t)
	s := e.session(t, shellguard.Options{})
	marker := fmt.Sprintf("900.%06d", rand.IntN(1e6))
	type out struct {
		res *shellguard.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := s.Run(context.Background(), "sleep "+marker)
		done <- out{res, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(procsWith(marker)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("sleep never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Close returned: the call has returned and its program is gone. (The
	// goroutine that called Run gets to its send a moment after Run
	// returned, which may be after Close did: it is given a second.)
	if p := procsWith(marker); len(p) > 0 {
		t.Fatalf("sleep still alive after Close: %v", p)
	}
	select {
	case o := <-done:
		if !errors.Is(o.err, shellguard.ErrClosed) || o.res == nil || o.res.ExitCode != shellguard.StatusCancelled {
			t.Fatalf("the interrupted Run: %+v, %v", o.res, o.err)
		}
	case <-time.After(time.Second):
		t.Fatal("the Run Close interrupted did not return")
	}
	if _, err := s.Run(context.Background(), "true"); !errors.Is(err, shellguard.ErrClosed) {
		t.Fatalf("Run after Close: %v", err)
	}
}

func TestCallNameFromContext(t *testing.T) {
	e := setup(t)
	s := e.session(t, shellguard.Options{})
	ctx, done := audit.WithCall(context.Background(), "bash#toolu_01", nil)
	defer done()
	res, err := s.Run(ctx, "/bin/true; rm -rf /")
	if err != nil {
		t.Fatal(err)
	}
	if res.Call != "bash#toolu_01" || len(res.Records) != 2 {
		t.Fatalf("call %q, records %+v", res.Call, res.Records)
	}
	for _, r := range res.Records {
		if r.Tool != "bash#toolu_01" {
			t.Errorf("record %v names tool %q", r.Argv, r.Tool)
		}
	}
	// Another call's records are not this one's.
	res2 := run(t, s, "/bin/true")
	if res2.Call == res.Call || len(res2.Records) != 1 || !strings.HasPrefix(res2.Call, "bash#") {
		t.Fatalf("second call %q, records %+v", res2.Call, res2.Records)
	}
}

func TestContextCancelEndsRun(t *testing.T) {
	e := setup(t)
	s := e.session(t, shellguard.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := s.Run(ctx, "while true; do sleep 0.1; done")
	if err != nil {
		t.Fatalf("a deadline of the caller's is a timeout, not an error: %v", err)
	}
	if !res.TimedOut || time.Since(start) > 10*time.Second {
		t.Fatalf("TimedOut %v after %v", res.TimedOut, time.Since(start))
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	res, err = s.Run(ctx, "while true; do sleep 0.1; done")
	if !errors.Is(err, context.Canceled) || res == nil || res.ExitCode != shellguard.StatusCancelled {
		t.Fatalf("cancelled: %+v, %v", res, err)
	}
}

func TestNewRefuses(t *testing.T) {
	e := setup(t)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		dir  string
	}{
		{"no scope", context.Background(), e.dir},
		{"relative dir", e.ctx, "work"},
		{"no dir", e.ctx, ""},
		{"missing dir", e.ctx, filepath.Join(e.dir, "missing")},
	} {
		if s, err := shellguard.New(tc.ctx, shellguard.Options{Dir: tc.dir}); err == nil {
			s.Close()
			t.Errorf("%s: New succeeded", tc.name)
		}
	}
}

// TestProgramsShareOneSandbox: a session's programs, one after another,
// run in one sandbox (the same pid namespace), each with its own status;
// a program killed by the call's timeout ends that sandbox, and the next
// call's programs run in a new one.
func TestProgramsShareOneSandbox(t *testing.T) {
	e := setup(t)
	s := e.session(t, shellguard.Options{Timeout: time.Second})
	ns := func(out string) []string {
		var ids []string
		for _, f := range strings.Fields(out) {
			if strings.HasPrefix(f, "pid:[") {
				ids = append(ids, f)
			}
		}
		return ids
	}
	res := run(t, s, `ls -l /proc/self/ns/pid; false; echo "false=$?"; ls -l /proc/self/ns/pid`)
	ids := ns(res.Stdout)
	if len(ids) != 2 || !strings.Contains(res.Stdout, "false=1") {
		t.Skipf("no sandbox here, or ls failed: %q %q", res.Stdout, res.Stderr)
	}
	if ids[0] != ids[1] {
		t.Errorf("two programs of a call ran in two sandboxes: %v", ids)
	}
	if next := ns(run(t, s, `ls -l /proc/self/ns/pid`).Stdout); len(next) != 1 || next[0] != ids[0] {
		t.Errorf("the next call's program ran in %v, not the session's sandbox %s", next, ids[0])
	}
	res, err := s.Run(context.Background(), `sleep 30`)
	if err != nil || !res.TimedOut {
		t.Fatalf("timed-out call: %v %+v", err, res)
	}
	res = run(t, s, `ls -l /proc/self/ns/pid`)
	if after := ns(res.Stdout); len(after) != 1 || after[0] == ids[0] {
		t.Errorf("after a timeout the programs ran in %v, the killed sandbox was %s", after, ids[0])
	}
}
