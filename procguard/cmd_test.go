package procguard_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

func TestDenyByDefault(t *testing.T) {
	e := setup(t, policy.ExecSpec{})
	marker := filepath.Join(e.dir, "ran")
	c := procguard.CommandContext(e.ctx, "touch", marker)
	c.Dir = e.dir
	err := c.Run()
	var de *audit.DenyError
	if !errors.As(err, &de) || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("err = %v, want a DenyError", err)
	}
	if de.Decision.Tier != policy.TierSoft || de.Decision.Rule.Kind != policy.KindExec {
		t.Fatalf("decision %+v", de.Decision)
	}
	if c.Process != nil {
		t.Fatal("a process was spawned")
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the command ran: %v", err)
	}
	recs := e.rec.Records()
	if len(recs) != 1 || recs[0].Outcome != audit.Denied || recs[0].Program == "" || len(recs[0].Argv) != 2 || recs[0].Target != "touch" {
		t.Fatalf("records %+v", recs)
	}
	if !strings.Contains(recs[0].Detail, "dir="+e.dir) {
		t.Fatalf("detail %q", recs[0].Detail)
	}
}

func TestRulesOnRealProcesses(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: []policy.ExecRule{
		{Program: "echo", Args: []string{"hello"}},
		{Program: "echo", Args: []string{"hello", "push"}, Deny: true},
		{Program: "true"},
	}})
	tests := []struct {
		argv []string
		out  string
		tier policy.Tier // TierNone: allowed
	}{
		{[]string{"echo", "hello", "world"}, "hello world\n", policy.TierNone},
		{[]string{"echo", "bye"}, "", policy.TierSoft},           // neighbour stays denied
		{[]string{"echo", "hello", "push"}, "", policy.TierHard}, // strictest wins
		{[]string{"/usr/bin/echo", "hello"}, "hello\n", policy.TierNone},
		{[]string{"./echo", "hello"}, "", policy.TierInvalid},
		{[]string{"bin/echo", "hello"}, "", policy.TierInvalid},
		{[]string{"false"}, "", policy.TierSoft},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			c := procguard.CommandContext(e.ctx, tt.argv[0], tt.argv[1:]...)
			c.Dir = e.dir
			if d := c.Check(); d.ExecJudged && d.Plan.Opaque != "" && tt.tier == policy.TierHard {
				// Where every exec is judged when it happens, an opaque
				// script is judged as the shell itself (no rule here):
				// what it runs would be judged when it starts.
				tt.tier = policy.TierSoft
			}
			c = procguard.CommandContext(e.ctx, tt.argv[0], tt.argv[1:]...)
			c.Dir = e.dir
			out, err := c.Output()
			if tt.tier == policy.TierNone {
				if err != nil || string(out) != tt.out {
					t.Fatalf("out %q err %v", out, err)
				}
				if c.ProcessState == nil || !c.ProcessState.Success() {
					t.Fatalf("state %v", c.ProcessState)
				}
				return
			}
			var de *audit.DenyError
			if !errors.As(err, &de) || de.Decision.Tier != tt.tier || c.Process != nil {
				t.Fatalf("err %v, want tier %v", err, tt.tier)
			}
		})
	}
}

func TestPathHijackAndRelativePath(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("true")})
	evil := t.TempDir()
	marker := filepath.Join(evil, "hijacked")
	script := "#!/bin/sh\ntouch " + marker + "\n"
	if err := os.WriteFile(filepath.Join(evil, "true"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", evil+":"+os.Getenv("PATH"))
	c := procguard.CommandContext(e.ctx, "true")
	c.Dir = e.dir
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the host PATH was used")
	}
	if strings.HasPrefix(c.Program, evil) || c.Program == "" {
		t.Fatalf("program %q", c.Program)
	}

	c = procguard.CommandContext(e.ctx, "true")
	c.Dir = e.dir
	c.Env = []string{"PATH=.:/usr/bin"}
	err := c.Run()
	var de *audit.DenyError
	if !errors.As(err, &de) || de.Decision.Tier != policy.TierInvalid {
		t.Fatalf("relative PATH entry: %v", err)
	}
}

func TestSymlinkJudgedByTarget(t *testing.T) {
	bin := t.TempDir()
	tru, _ := exec.LookPath("true")
	tru, _ = filepath.EvalSymlinks(tru)
	rm, _ := exec.LookPath("rm")
	rm, _ = filepath.EvalSymlinks(rm)
	os.Symlink(tru, filepath.Join(bin, "fine"))
	os.Symlink(rm, filepath.Join(bin, "true-ish"))
	e := setup(t, policy.ExecSpec{Path: []string{bin, "/usr/bin", "/bin"}, Rules: allow(tru)})
	victim := filepath.Join(e.dir, "victim")
	os.WriteFile(victim, nil, 0o644)

	c := procguard.CommandContext(e.ctx, "fine")
	c.Dir = e.dir
	if err := c.Run(); err != nil || c.Program != tru {
		t.Fatalf("symlink to true: %v (%s)", err, c.Program)
	}
	c = procguard.CommandContext(e.ctx, "true-ish", victim)
	c.Dir = e.dir
	if err := c.Run(); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("symlink to rm: %v", err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatal("rm ran")
	}
}

func TestShellAndWrappers(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: []policy.ExecRule{
		{Program: "echo"}, {Program: "cat"}, {Program: "tr"},
		{Program: "rm", Deny: true},
	}})
	tests := []struct {
		argv []string
		out  string
		tier policy.Tier
	}{
		{[]string{"sh", "-c", "echo a && echo b | tr b c; echo d > out.txt; cat out.txt"}, "a\nc\nd\n", 0},
		{[]string{"bash", "-c", "echo a || rm -rf ."}, "", policy.TierHard},
		{[]string{"sh", "-c", "echo $(cat /etc/hostname)"}, "", policy.TierHard},
		{[]string{"sh", "-c", "echo x > " + t.TempDir() + "/f"}, "", policy.TierSoft},
		{[]string{"env", "timeout", "5", "nice", "echo", "wrapped"}, "wrapped\n", 0},
		{[]string{"timeout", "5", "rm", "-rf", "."}, "", policy.TierHard},
		{[]string{"env", "LD_PRELOAD=/x.so", "echo", "x"}, "", policy.TierHard},
		{[]string{"sh", "-c", "env sh -c 'echo nested'"}, "nested\n", 0},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			c := procguard.CommandContext(e.ctx, tt.argv[0], tt.argv[1:]...)
			c.Dir = e.dir
			if d := c.Check(); d.ExecJudged && d.Plan.Opaque != "" && tt.tier == policy.TierHard {
				// Where every exec is judged when it happens, an opaque
				// script is judged as the shell itself (no rule here):
				// what it runs would be judged when it starts.
				tt.tier = policy.TierSoft
			}
			c = procguard.CommandContext(e.ctx, tt.argv[0], tt.argv[1:]...)
			c.Dir = e.dir
			out, err := c.Output()
			if tt.tier == policy.TierNone {
				if err != nil || string(out) != tt.out {
					t.Fatalf("out %q err %v", out, err)
				}
				return
			}
			var de *audit.DenyError
			if !errors.As(err, &de) || de.Decision.Tier != tt.tier {
				t.Fatalf("err %v, want tier %v", err, tt.tier)
			}
		})
	}
}

func TestEnvScrubbed(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("env"), Env: []string{"AUDITGUARD_VISIBLE"}})
	t.Setenv("LD_PRELOAD", "/nonexistent/auditguard-test.so")
	t.Setenv("AUDITGUARD_TEST_TOKEN", "s3cret")
	t.Setenv("AUDITGUARD_VISIBLE", "yes")
	for _, inherit := range []bool{false, true} {
		c := procguard.CommandContext(e.ctx, "env")
		c.Dir = e.dir
		if inherit {
			c.Env = append(os.Environ(), "EXTRA=1")
		}
		out, err := c.Output()
		if err != nil {
			t.Fatal(err)
		}
		got := string(out)
		for _, bad := range []string{"LD_PRELOAD", "s3cret", "AUDITGUARD_TEST_TOKEN"} {
			if strings.Contains(got, bad) {
				t.Fatalf("%s reached the child:\n%s", bad, got)
			}
		}
		for _, want := range []string{"PATH=" + strings.Join(policy.DefaultExecPath, ":"), "HOME=" + e.dir, "TMPDIR=" + e.dir, "AUDITGUARD_VISIBLE=yes"} {
			if !strings.Contains(got, want+"\n") {
				t.Fatalf("missing %s:\n%s", want, got)
			}
		}
		if inherit {
			if !strings.Contains(got, "EXTRA=1\n") || !strings.Contains(strings.Join(c.Confinement.EnvDropped, ","), "LD_PRELOAD") {
				t.Fatalf("explicit env: %s dropped %v", got, c.Confinement.EnvDropped)
			}
		}
	}
}

func TestDirMustBeInsideWriteRoot(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("true")})
	c := procguard.CommandContext(e.ctx, "true")
	c.Dir = t.TempDir()
	var de *audit.DenyError
	if err := c.Run(); !errors.As(err, &de) || de.Decision.Tier != policy.TierSoft {
		t.Fatalf("outside dir: %v", err)
	}
	sub := filepath.Join(e.dir, "sub")
	os.Mkdir(sub, 0o755)
	c = procguard.CommandContext(e.ctx, "true")
	c.Dir = sub
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
}

func TestBeforeDenySeesArgvProgramAndTool(t *testing.T) {
	var seen []string
	e := setup(t, policy.ExecSpec{}, audit.WithBeforeDeny(func(ctx context.Context, ev *audit.Event) bool {
		seen = append(seen, ev.Program+" "+strings.Join(ev.Argv, " "))
		return ev.Call != nil && ev.Call.Name == "search" && filepath.Base(ev.Program) == "grep"
	}))
	os.WriteFile(filepath.Join(e.dir, "f.txt"), []byte("needle\n"), 0o644)
	run := func(ctx context.Context) ([]byte, error) {
		c := procguard.CommandContext(ctx, "grep", "-r", "needle", ".")
		c.Dir = e.dir
		return c.Output()
	}
	if _, err := run(e.ctx); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("generated code ran grep: %v", err)
	}
	tool, done := audit.WithCall(e.ctx, "search", nil)
	out, err := run(tool)
	if err != nil || !strings.Contains(string(out), "needle") {
		t.Fatalf("trusted tool: %q %v", out, err)
	}
	done()
	if _, err := run(tool); !errors.Is(err, fs.ErrPermission) {
		t.Fatal("a finished tool call still grants")
	}
	if len(seen) != 3 || !strings.HasSuffix(seen[0], "grep -r needle .") || !strings.HasPrefix(seen[0], "/") {
		t.Fatalf("BeforeDeny saw %q", seen)
	}
}

func TestCheckSpawnsNothing(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("touch")})
	marker := filepath.Join(e.dir, "m")
	c := procguard.CommandContext(e.ctx, "touch", marker)
	c.Dir = e.dir
	d := c.Check()
	if d.Allowed != true || d.Err != nil || d.Rule.Pattern != "touch" || !strings.HasSuffix(d.Program, "/touch") {
		t.Fatalf("%+v", d)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("Check ran the command")
	}
	d = procguard.Check(e.ctx, "rm", marker)
	if d.Allowed || d.Err == nil || d.Tier != policy.TierSoft {
		t.Fatalf("%+v", d)
	}
}

func TestNoScope(t *testing.T) {
	err := procguard.CommandContext(context.Background(), "true").Run()
	if !errors.Is(err, audit.ErrNoScope) {
		t.Fatalf("err %v", err)
	}
}

func TestPipes(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("cat")})
	c := procguard.CommandContext(e.ctx, "cat")
	c.Dir = e.dir
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	in.Write([]byte("ping\n"))
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("%q %v", line, err)
	}
	in.Close()
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestHomeOutsideWriteRoot(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("true"), Home: t.TempDir()})
	c := procguard.CommandContext(e.ctx, "true")
	c.Dir = e.dir
	if err := c.Run(); err == nil || !strings.Contains(err.Error(), "not inside a write root") || c.Process != nil {
		t.Fatalf("err %v", err)
	}
}

func TestWarnModeRunsAndRecords(t *testing.T) {
	e := setup(t, policy.ExecSpec{}, audit.WithMode(audit.Exec, audit.Warn))
	c := procguard.CommandContext(e.ctx, "echo", "hi")
	c.Dir = e.dir
	out, err := c.Output()
	if err != nil || string(out) != "hi\n" {
		t.Fatalf("%q %v", out, err)
	}
	recs := e.rec.Records()
	if len(recs) != 1 || recs[0].Outcome != audit.Warned {
		t.Fatalf("records %+v", recs)
	}
	// Invalid input is denied even in Warn mode.
	c = procguard.CommandContext(e.ctx, "./echo")
	c.Dir = e.dir
	if err := c.Run(); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("invalid in warn mode: %v", err)
	}
}

func TestRestrictNarrows(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("echo", "true")})
	narrow, err := policy.New(policy.Spec{WriteRoots: []string{e.dir}, Exec: policy.ExecSpec{Rules: allow("true")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := audit.Restrict(e.ctx, narrow)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	c := procguard.CommandContext(ctx, "echo", "x")
	c.Dir = e.dir
	if err := c.Run(); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("restricted scope ran echo: %v", err)
	}
	c = procguard.CommandContext(ctx, "true")
	c.Dir = e.dir
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentCommands(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("echo")})
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			c := procguard.CommandContext(e.ctx, "echo", strconv.Itoa(i))
			c.Dir = e.dir
			out, err := c.Output()
			if err == nil && string(out) != strconv.Itoa(i)+"\n" {
				err = errors.New("wrong output " + string(out))
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestParallelStarts: 8 goroutines start sandboxed commands at once, as
// an agent's parallel tool calls do; every start ends, in its sandbox.
// (A trampoline cloned twice on one control socket once left a start
// waiting for ever here within a few hundred starts; the spawner's own
// tests hold the cause.)
func TestParallelStarts(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("true")})
	const workers, each = 8, 8
	errs := make(chan error, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
				c := procguard.CommandContext(ctx, "true")
				c.Dir = e.dir
				t0 := time.Now()
				err := c.Run()
				cancel()
				switch {
				case err != nil:
					errs <- fmt.Errorf("worker %d, start %d, after %v: %w", w, i, time.Since(t0).Round(time.Millisecond), err)
				case c.Confinement.Sandbox == nil && c.Confinement.SandboxNote == "":
					errs <- fmt.Errorf("worker %d, start %d: no sandbox and no note why", w, i)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestReleasedScopeRevokes(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("true")})
	ctx, release, _ := audit.From(e.ctx).Guard().Enter(e.ctx)
	release()
	c := procguard.CommandContext(ctx, "true")
	c.Dir = e.dir
	if err := c.Run(); !errors.Is(err, audit.ErrScopeClosed) {
		t.Fatalf("err %v", err)
	}
}

func TestDenialSaysWhichPart(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("echo")})
	c := procguard.CommandContext(e.ctx, "sh", "-c", "echo a && rm -rf x")
	c.Dir = e.dir
	err := c.Run()
	var de *audit.DenyError
	if !errors.As(err, &de) || de.Decision.Detail != "in a command the call would run" {
		t.Fatalf("err %v", err)
	}
	recs := e.rec.Records()
	// echo is a builtin: the script runs rm alone, and the error names it.
	if d := recs[len(recs)-1].Detail; !strings.Contains(d, "runs: [rm -rf x]") {
		t.Fatalf("detail %q", d)
	}
	if de.Decision.Command == nil || strings.Join(de.Decision.Command.Argv, " ") != "rm -rf x" || !strings.Contains(err.Error(), "command: rm -rf x") {
		t.Fatalf("the failing command is not named: %v", err)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("true")})
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	c := procguard.CommandContext(ctx, "true")
	c.Dir = e.dir
	if err := c.Start(); !errors.Is(err, context.Canceled) || c.Process != nil {
		t.Fatalf("err %v", err)
	}
}

func TestOffModeSkipsChecks(t *testing.T) {
	e := setup(t, policy.ExecSpec{}, audit.WithMode(audit.Exec, audit.Off))
	c := procguard.CommandContext(e.ctx, "echo", "off")
	c.Dir = e.dir
	out, err := c.Output()
	if err != nil || string(out) != "off\n" || len(e.rec.Records()) != 0 {
		t.Fatalf("%q %v %+v", out, err, e.rec.Records())
	}
	// The child is still supervised and confined.
	if c.Confinement.ProcessGroup == 0 {
		t.Fatalf("%+v", c.Confinement)
	}
}
