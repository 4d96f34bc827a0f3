package procguard_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// TestConfinementOnEveryStartPath: a command gets the same confinement
// whichever way its sandbox was made: cold (the host binary re-executed
// during the start), from a trampoline that waited ready in the pool, and
// from the one the previous command's refill made, taken right after that
// command ended, one a finished command left idle (recycled), and a
// session's sandbox, which a command built and the next reuses (Session). The Confinement facts are compared, and the command
// itself tries what they promise it cannot do: write a protected name,
// read a masked file, write outside the write root, open more files than
// its limit.
func TestConfinementOnEveryStartPath(t *testing.T) {
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "token")
	must(t, os.WriteFile(secret, []byte("SECRET-VALUE\n"), 0o644))
	outside := t.TempDir()
	e := sandboxEnv(t, policy.Spec{
		ReadDeny: []string{secretDir},
		Exec: policy.ExecSpec{Rules: shellTools.Rules,
			Limits: policy.ExecLimits{OpenFiles: 64, Processes: 64}},
	})
	needSandbox(t, e)
	defer sandbox.SetPrewarm(true)

	script := `
echo ran
b=.ba; b="${b}shrc"; echo x > "$b" 2>/dev/null && echo "bashrc written"
cat "$1" 2>/dev/null && echo "secret read"
echo x > "$2/escape" 2>/dev/null && echo "outside written"
echo "nofile $(ulimit -n)"
echo ok > fine.txt && echo "fine written"`
	var sess *procguard.Session
	run := func(name string) *procguard.Cmd {
		t.Helper()
		os.Remove(filepath.Join(e.dir, "fine.txt"))
		out, err, c := runScriptIn(t, e, sess, script, secret, outside)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		for _, want := range []string{"ran", "nofile 64", "fine written"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", name, want, out)
			}
		}
		for _, bad := range []string{"bashrc written", "SECRET-VALUE", "secret read", "outside written"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: %q:\n%s", name, bad, out)
			}
		}
		if _, err := os.Stat(filepath.Join(outside, "escape")); err == nil {
			t.Errorf("%s: a file was written outside the write root", name)
		}
		if _, err := os.Stat(filepath.Join(e.dir, ".bashrc")); err == nil {
			t.Errorf("%s: .bashrc exists", name)
		}
		if c.Confinement.Sandbox == nil {
			t.Fatalf("%s: no sandbox: %s", name, c.Confinement.SandboxNote)
		}
		return c
	}

	sandbox.SetPrewarm(false)
	cold := run("cold")
	sandbox.SetPrewarm(true)
	sandbox.SetRecycle(false)
	if err := sandbox.Prewarm(false); err != nil {
		t.Fatal(err)
	}
	ready := run("ready")
	refilled := run("refilled") // takes what ready's refill made
	sandbox.SetRecycle(true)
	kept := run("recycled, first") // its sandbox is kept for the next
	recycled := run("recycled, second")
	if recycled.ProcessState == nil || recycled.ProcessState.Pid() != kept.ProcessState.Pid() {
		t.Errorf("the second command did not reuse the first one's kept sandbox: init %d, then %v", kept.ProcessState.Pid(), recycled.ProcessState)
	}
	sess = &procguard.Session{}
	defer sess.Close()
	built := run("session, first")
	reused := run("session, second")
	if reused.Process.Pid != built.Process.Pid || reused.ProcessState != nil {
		t.Errorf("the session's second command did not reuse its sandbox: init %d, then %d (state %v)", built.Process.Pid, reused.Process.Pid, reused.ProcessState)
	}
	want := facts(cold)
	for _, c := range []struct {
		name string
		cmd  *procguard.Cmd
	}{{"ready", ready}, {"refilled", refilled}, {"recycled, first", kept}, {"recycled, second", recycled},
		{"session, first", built}, {"session, second", reused}} {
		if got := facts(c.cmd); got != want {
			t.Errorf("%s start's confinement differs from a cold one's:\n got %s\nwant %s", c.name, got, want)
		}
	}
	t.Logf("every path: %s", want)
}

// facts renders what a Confinement enforces, without what differs from
// one start to the next (pids, cgroup directory names).
func facts(c *procguard.Cmd) string {
	cf := c.Confinement
	r := *cf.Sandbox
	r.Pid, r.PidNamespace = 0, ""
	r.Masked = slices.Clone(r.Masked)
	slices.Sort(r.Masked)
	r.ReadOnly = slices.Clone(r.ReadOnly)
	slices.Sort(r.ReadOnly)
	return strings.Join([]string{
		"sandbox: " + r.String(),
		"landlock: " + cf.Landlock.String(),
		"rlimits: " + strings.Join(cf.Rlimits, ","),
		"cgroups: " + cf.CgroupNote,
		"exec judged: " + map[bool]string{true: "yes", false: "no"}[cf.ExecJudged],
		"timeout: " + cf.Timeout.String(),
	}, "; ")
}
