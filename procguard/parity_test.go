package procguard_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

// TestZeroCmd: a Cmd not made by CommandContext returns an error from
// every entry point, never panics.
func TestZeroCmd(t *testing.T) {
	var c procguard.Cmd
	if err := c.Run(); !errors.Is(err, procguard.ErrNoCommand) {
		t.Fatalf("Run: %v", err)
	}
	if _, err := (&procguard.Cmd{}).Output(); !errors.Is(err, procguard.ErrNoCommand) {
		t.Fatalf("Output: %v", err)
	}
	if _, err := (&procguard.Cmd{}).CombinedOutput(); !errors.Is(err, procguard.ErrNoCommand) {
		t.Fatalf("CombinedOutput: %v", err)
	}
	if d := (&procguard.Cmd{}).Check(); d.Allowed || !errors.Is(d.Err, procguard.ErrNoCommand) {
		t.Fatalf("Check: %+v", d)
	}
	if s := (&procguard.Cmd{}).String(); s != "" {
		t.Fatalf("String: %q", s)
	}
	if (&procguard.Cmd{}).Environ() != nil {
		t.Fatal("Environ of a zero Cmd")
	}
}

// TestMissingProgram: a program that is not there is exec.ErrNotFound,
// not a policy denial.
func TestMissingProgram(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("true")})
	c := procguard.CommandContext(e.ctx, "no-such-program-auditguard")
	c.Dir = e.dir
	err := c.Run()
	var de *audit.DenyError
	if !errors.Is(err, exec.ErrNotFound) || errors.As(err, &de) || strings.Contains(err.Error(), "denied") {
		t.Fatalf("err %v", err)
	}
	if d := procguard.CheckIn(e.ctx, e.dir, "no-such-program-auditguard"); !errors.Is(d.Err, exec.ErrNotFound) {
		t.Fatalf("Check: %+v", d)
	}
}

// TestCheckInDir: Check and CheckIn judge the working directory as
// Cmd.Check does.
func TestCheckInDir(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("true")})
	if d := procguard.CheckIn(e.ctx, e.dir, "true"); !d.Allowed || d.Dir != e.dir {
		t.Fatalf("CheckIn inside the root: %+v", d)
	}
	c := procguard.CommandContext(e.ctx, "true")
	c.Dir = e.dir
	if a, b := c.Check(), procguard.CheckIn(e.ctx, e.dir, "true"); a.Allowed != b.Allowed || a.Dir != b.Dir {
		t.Fatalf("Cmd.Check %+v vs CheckIn %+v", a, b)
	}
	if d := procguard.CheckIn(e.ctx, t.TempDir(), "true"); d.Allowed {
		t.Fatalf("CheckIn outside the roots allowed: %+v", d)
	}
}

// TestEnvironAndString mirror exec.Cmd's.
func TestEnvironAndString(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("true")})
	t.Setenv("AUDITGUARD_TEST_HOSTVAR", "h")
	c := procguard.CommandContext(e.ctx, "true", "a", "b")
	c.Dir = e.dir
	c.Env = append(os.Environ(), "MINE=1", "LD_PRELOAD=/x.so")
	if c.String() != "true a b" {
		t.Fatalf("String %q", c.String())
	}
	env := strings.Join(c.Environ(), "\n")
	if !strings.Contains(env, "MINE=1") || strings.Contains(env, "LD_PRELOAD") || strings.Contains(env, "AUDITGUARD_TEST_HOSTVAR") {
		t.Fatalf("Environ:\n%s", env)
	}
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dropped := strings.Join(c.Confinement.EnvDropped, ",")
	if !strings.Contains(dropped, "LD_PRELOAD") || !strings.Contains(dropped, "AUDITGUARD_TEST_HOSTVAR") {
		t.Fatalf("dropped %q", dropped)
	}
}

// TestTimeoutNamesLimit: the kill error says which limit.
func TestTimeoutNamesLimit(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("sleep")})
	c := procguard.CommandContext(e.ctx, "sleep", "10")
	c.Dir = e.dir
	c.Timeout = 200 * time.Millisecond
	err := c.Run()
	if !errors.Is(err, procguard.ErrTimeout) || !strings.Contains(err.Error(), "killed after 200ms (Timeout)") {
		t.Fatalf("err %v", err)
	}
}

// TestWhatRunsEndToEnd: harmless programs written into a temp dir; env
// PATH=dir makes the one in dir run, and that one is what is judged.
func TestWhatRunsEndToEnd(t *testing.T) {
	bin := t.TempDir()
	prog := filepath.Join(bin, "hello")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho from-temp\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := setup(t, policy.ExecSpec{Rules: append(allow("env", "tar"), policy.ExecRule{Program: prog}), LandlockExecAny: true})
	c := procguard.CommandContext(e.ctx, "env", "PATH="+bin, "hello")
	c.Dir = e.dir
	out, err := c.Output()
	if err != nil || strings.TrimSpace(string(out)) != "from-temp" {
		t.Fatalf("env PATH=bin hello: %v %q", err, out)
	}
	if got := c.Check().Plan.Commands; len(got) != 1 || got[0].Program != prog {
		t.Fatalf("judged %+v, want %s", got, prog)
	}
	// The same name in the policy's PATH would be another file: with no rule
	// for a relative PATH entry the call is refused before anything runs.
	c = procguard.CommandContext(e.ctx, "env", "PATH=rel:"+bin, "hello")
	c.Dir = e.dir
	if err := c.Run(); err == nil {
		t.Fatal("env with a relative PATH entry ran")
	}
	// tar --to-comm= (an abbreviation of --to-command) is refused: nothing runs.
	c = procguard.CommandContext(e.ctx, "tar", "-xf", "a.tar", "--to-comm=sh")
	c.Dir = e.dir
	var de *audit.DenyError
	if err := c.Run(); !errors.As(err, &de) || de.Decision.Tier != policy.TierHard || c.Process != nil {
		t.Fatalf("tar --to-comm: %v", err)
	}
}

// TestBuiltinsRunWithoutRules: a script of shell builtins needs no rule
// for binaries of the same names.
func TestBuiltinsRunWithoutRules(t *testing.T) {
	e := setup(t, policy.ExecSpec{})
	for _, script := range []string{":", "true", "echo x", "test -d .", "[ -d . ]"} {
		c := procguard.CommandContext(e.ctx, "sh", "-c", script)
		c.Dir = e.dir
		if err := c.Run(); err != nil {
			t.Errorf("%q: %v", script, err)
		}
	}
	c := procguard.CommandContext(e.ctx, "sh", "-c", "exit 3")
	c.Dir = e.dir
	var ee *exec.ExitError
	if err := c.Run(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("exit 3: %v", err)
	}
}
