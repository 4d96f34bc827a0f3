package proctest_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/proctest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// enter returns a scope of a guard that allows git and sh in dir and
// serves them from f.
func enter(t *testing.T, f *proctest.Fake, opts ...audit.Option) (context.Context, string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{
		{Program: "git"}, {Program: "sh"}, {Program: "echo"}, {Program: "tr"}}}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(pol, append([]audit.Option{audit.WithLogger(quiet), procguard.WithDouble(f)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return ctx, dir
}

func TestFakeServesCommandContext(t *testing.T) {
	cases := []struct {
		name     string
		script   func(f *proctest.Fake)
		argv     []string
		stdin    string
		timeout  time.Duration
		wantOut  string
		wantErr  string // substring; "" for none
		wantCode int
		wantIs   error
		problems int // entries of Verify
	}{
		{name: "exact", script: func(f *proctest.Fake) { f.Expect("git", "status").Stdout("clean\n") },
			argv: []string{"git", "status"}, wantOut: "clean\n"},
		{name: "prefix", script: func(f *proctest.Fake) { f.ExpectPrefix("git", "log").Stdout("abc\n") },
			argv: []string{"git", "log", "-1", "--oneline"}, wantOut: "abc\n"},
		{name: "matcher", script: func(f *proctest.Fake) {
			f.ExpectFunc("any sh -c", func(argv []string) bool { return len(argv) == 3 && argv[1] == "-c" }).Stdout("ran\n")
		}, argv: []string{"sh", "-c", "echo hi"}, wantOut: "ran\n"},
		{name: "exit code", script: func(f *proctest.Fake) { f.Expect("git", "diff").Stdout("d").Exit(1) },
			argv: []string{"git", "diff"}, wantOut: "d", wantErr: "exit status 1", wantCode: 1},
		{name: "stdin matches", script: func(f *proctest.Fake) { f.Expect("git", "apply").Stdin("patch").Stdout("ok") },
			argv: []string{"git", "apply"}, stdin: "patch", wantOut: "ok"},
		{name: "stdin differs", script: func(f *proctest.Fake) { f.Expect("git", "apply").Stdin("patch").Stdout("ok") },
			argv: []string{"git", "apply"}, stdin: "other", wantOut: "ok", problems: 1},
		{name: "unscripted", script: func(f *proctest.Fake) {},
			argv: []string{"git", "push"}, wantErr: "unexpected command", wantCode: -1, wantIs: proctest.ErrUnexpected, problems: 1},
		{name: "exhausted", script: func(f *proctest.Fake) {
			f.Expect("git", "fetch").Times(0) // expects none: the call is unexpected
		}, argv: []string{"git", "fetch"}, wantErr: "already used 0 times", wantCode: -1, wantIs: proctest.ErrUnexpected, problems: 1},
		{name: "start fails", script: func(f *proctest.Fake) { f.Expect("git", "lfs").Fail(exec.ErrNotFound) },
			argv: []string{"git", "lfs"}, wantCode: -1, wantIs: exec.ErrNotFound},
		{name: "delay then timeout", script: func(f *proctest.Fake) { f.Expect("git", "gc").Delay(time.Hour) },
			argv: []string{"git", "gc"}, timeout: 20 * time.Millisecond, wantCode: -1, wantIs: procguard.ErrTimeout},
		{name: "delay within timeout", script: func(f *proctest.Fake) { f.Expect("git", "gc").Delay(5 * time.Millisecond).Stdout("done") },
			argv: []string{"git", "gc"}, timeout: 10 * time.Second, wantOut: "done"},
		{name: "unused", script: func(f *proctest.Fake) {
			f.Expect("git", "status").Stdout("x")
			f.Expect("git", "stash")
		}, argv: []string{"git", "status"}, wantOut: "x", problems: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &proctest.Fake{}
			tc.script(f)
			ctx, dir := enter(t, f)
			c := procguard.CommandContext(ctx, tc.argv[0], tc.argv[1:]...)
			c.Dir, c.Timeout = dir, tc.timeout
			if tc.stdin != "" {
				c.Stdin = strings.NewReader(tc.stdin)
			}
			out, err := c.Output()
			if string(out) != tc.wantOut {
				t.Errorf("stdout %q, want %q", out, tc.wantOut)
			}
			if (err == nil) != (tc.wantErr == "" && tc.wantIs == nil) ||
				(tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr)) ||
				(tc.wantIs != nil && !errors.Is(err, tc.wantIs)) {
				t.Errorf("err %v, want %q / %v", err, tc.wantErr, tc.wantIs)
			}
			code := -1
			if c.ProcessState != nil {
				code = c.ProcessState.ExitCode()
			}
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			if c.Process != nil {
				t.Error("a faked command has a Process")
			}
			var n int
			if err := f.Verify(); err != nil {
				n = len(strings.Split(err.Error(), "\n"))
			}
			if n != tc.problems {
				t.Errorf("Verify: %d problems, want %d: %v", n, tc.problems, f.Verify())
			}
		})
	}
}

// TestDeniedNeverReachesTheFake: the policy decides first.
func TestDeniedNeverReachesTheFake(t *testing.T) {
	f := &proctest.Fake{}
	f.Expect("curl", "http://example.com").AnyTimes()
	ctx, dir := enter(t, f)
	c := procguard.CommandContext(ctx, "curl", "http://example.com")
	c.Dir = dir
	if err := c.Run(); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("%v", err)
	}
	if n := len(f.Calls()); n != 0 {
		t.Fatalf("the fake saw %d calls", n)
	}
}

// TestPipes: StdinPipe and StdoutPipe behave as with a real child: the
// reader sees EOF when the play ends, the play sees EOF when the writer
// is closed.
func TestPipes(t *testing.T) {
	f := &proctest.Fake{}
	f.Expect("sh", "-c", "tr a-z A-Z").Do(func(ctx context.Context, in io.Reader, out, _ io.Writer) int {
		b, _ := io.ReadAll(in)
		io.WriteString(out, strings.ToUpper(string(b)))
		return 0
	})
	ctx, dir := enter(t, f)
	c := procguard.CommandContext(ctx, "sh", "-c", "tr a-z A-Z")
	c.Dir = dir
	w, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "hello")
	w.Close()
	b, err := io.ReadAll(r)
	if err != nil || string(b) != "HELLO" {
		t.Fatalf("%q %v", b, err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if c.Confinement.SandboxNote != procguard.NoteDouble {
		t.Fatalf("confinement %+v", c.Confinement)
	}
}

// TestScopeReleaseKillsThePlay: releasing the scope kills a faked command
// as it kills a real child.
func TestScopeReleaseKillsThePlay(t *testing.T) {
	f := &proctest.Fake{}
	f.Expect("git", "fetch").Delay(time.Hour)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	pol, _ := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: "git"}}}})
	g, _ := audit.New(pol, audit.WithLogger(quiet), procguard.WithDouble(f))
	ctx, release, _ := g.Enter(context.Background())
	c := procguard.CommandContext(ctx, "git", "fetch")
	c.Dir = dir
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Running()); n != 1 {
		t.Fatalf("%d running", n)
	}
	release()
	if err := c.Wait(); !errors.Is(err, audit.ErrScopeClosed) {
		t.Fatalf("%v", err)
	}
	if n := len(f.Running()); n != 0 {
		t.Fatalf("%d running after the kill", n)
	}
}

// TestRunner: code written against procguard.Runner gets the fake
// directly (policy first when ctx carries a scope), or through
// procguard.Guarded when the fake is installed on the guard.
func TestRunner(t *testing.T) {
	f := &proctest.Fake{}
	f.Expect("git", "branch", "--show-current").Stdout("main\n").Times(2)
	ctx, dir := enter(t, f)
	for _, r := range []procguard.Runner{f, procguard.Guarded} {
		res, err := r.Run(ctx, procguard.Request{Name: "git", Args: []string{"branch", "--show-current"}, Dir: dir})
		if err != nil || string(res.Stdout) != "main\n" || res.ExitCode != 0 {
			t.Fatalf("%T: %+v %v", r, res, err)
		}
	}
	// Without a scope the fake plays without a policy.
	if _, err := f.Run(context.Background(), procguard.Request{Name: "git", Args: []string{"push"}}); !errors.Is(err, proctest.ErrUnexpected) {
		t.Fatalf("%v", err)
	}
	if err := f.Verify(); err == nil || !strings.Contains(err.Error(), `unexpected command "git", "push"`) {
		t.Fatalf("Verify: %v", err)
	}
}
