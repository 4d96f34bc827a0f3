package procguard_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/internal/proctree"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

// The scripts use $! and subshells, so they are judged as the shell itself:
// the policy allows sh outright, and the programs the scripts start have
// rules too (a child may execute only allowed programs by default).
var leftovers = []struct {
	name   string
	script string
}{
	{"background", `sleep 100 & echo $!; sleep 100`},
	{"nohup", `nohup sleep 100 >/dev/null 2>&1 & echo $!; sleep 100`},
	{"double fork", `(sleep 100 & echo $!) ; sleep 100`},
	{"setsid", `setsid sleep 100 & echo $!; sleep 100`},
}

// TestKillLeavesNoSurvivors: a timeout, a cancelled context and a leader
// that exits on its own all leave zero live processes in the group, and the
// setsid escapee (its own group) dies with the cgroup.
func TestKillLeavesNoSurvivors(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("sh", "sleep", "nohup", "setsid")})
	for _, how := range []string{"timeout", "cancel", "leader exits"} {
		for _, lo := range leftovers {
			t.Run(how+"/"+lo.name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(e.ctx)
				defer cancel()
				script := lo.script
				if how == "leader exits" {
					script = strings.TrimSuffix(script, "; sleep 100") + "; read x"
				} else {
					script = strings.Replace(script, "; sleep 100", "; read x; sleep 100", 1)
				}
				c := procguard.CommandContext(ctx, "sh", "-c", script)
				c.Dir = e.dir
				if how == "timeout" {
					// Long enough that the child is still there to be
					// seen alive below on a loaded machine (100 ms was
					// not, at load 15 under -race).
					c.Timeout = 2 * time.Second
				}
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
				line, err := bufio.NewReader(out).ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				child, err := strconv.Atoi(strings.TrimSpace(line))
				if err != nil {
					t.Fatalf("pid line %q", line)
				}
				ns := ""
				if sb := c.Confinement.Sandbox; sb != nil {
					// The child printed its pid in the sandbox's namespace.
					ns = sb.PidNamespace
					if child = proctree.HostPid(ns, child); child == 0 {
						t.Fatalf("pid %s not found in %s", line, ns)
					}
				}
				if !proctree.Alive(child) {
					t.Fatalf("background child %d not running", child)
				}
				if lo.name == "setsid" {
					// Wait (bounded) until setsid has moved the child out of the group.
					deadline := time.Now().Add(5 * time.Second)
					for {
						_, cpg, _ := proctree.Stat(child)
						if cpg != c.Confinement.ProcessGroup {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("setsid child %d did not leave the group", child)
						}
						time.Sleep(time.Millisecond)
					}
				}
				switch how {
				case "cancel":
					cancel()
				case "leader exits":
					in.Write([]byte("\n"))
				}
				err = c.Wait()
				var ke *procguard.KilledError
				switch how {
				case "timeout":
					if !errors.As(err, &ke) || !errors.Is(err, procguard.ErrTimeout) {
						t.Fatalf("err %v", err)
					}
				case "cancel":
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("err %v", err)
					}
				default:
					if err != nil {
						t.Fatalf("err %v", err)
					}
				}
				pg := c.Confinement.ProcessGroup
				if pg == 0 {
					t.Fatal("no process group recorded")
				}
				if ns == "" {
					if m := groupMembers(t, pg); len(m) > 0 {
						t.Fatalf("survivors in group %d: %v", pg, m)
					}
				} else if m := leftOf(c); len(m) > 0 {
					// The group is init's alone (the target is a session
					// leader inside): the namespace holds everything.
					t.Fatalf("survivors in the sandbox's %s: %v", ns, m)
				}
				if c.Confinement.Cgroup == "" && ns == "" {
					if lo.name == "setsid" {
						t.Skipf("no cgroup v2 (%s): setsid escapees are not caught", c.Confinement.CgroupNote)
					}
				} else {
					if proctree.Alive(child) {
						t.Fatalf("child %d survived", child)
					}
					// The cgroup is removed or pooled for reuse, and empty either way.
					if b, err := os.ReadFile(c.Confinement.Cgroup + "/cgroup.events"); err == nil && !strings.Contains(string(b), "populated 0") {
						t.Fatalf("cgroup %s still populated: %s", c.Confinement.Cgroup, b)
					}
				}
			})
		}
	}
}

func TestNoCgroupSwitch(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("true"), NoCgroup: true})
	c := procguard.CommandContext(e.ctx, "true")
	c.Dir = e.dir
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if c.Confinement.Cgroup != "" || !strings.Contains(c.Confinement.CgroupNote, "NoCgroup") {
		t.Fatalf("%+v", c.Confinement)
	}
	if cg := c.Confinement.Cgroups; cg.Kill != procguard.CgroupKillNone || cg.KillWhy != procguard.CgroupDisabled || cg.Pids.Max != 0 {
		t.Fatalf("cgroup facts %+v, want no kill and no limits, disabled", cg)
	}
}

func TestOutputCap(t *testing.T) {
	const limit = 1 << 20
	e := setup(t, policy.ExecSpec{Rules: allow("head"), OutputLimit: limit})
	c := procguard.CommandContext(e.ctx, "head", "-c", strconv.Itoa(100<<20), "/dev/zero")
	c.Dir = e.dir
	out, err := c.Output()
	var te *procguard.TruncatedError
	if !errors.Is(err, procguard.ErrTruncated) || !errors.As(err, &te) || te.Limit != limit || !strings.Contains(err.Error(), "1048576 bytes") {
		t.Fatalf("the cut is not in the error: %v", err)
	}
	if len(out) != limit || cap(out) > limit || !c.StdoutTruncated() || c.StderrTruncated() {
		t.Fatalf("len %d cap %d truncated %v", len(out), cap(out), c.StdoutTruncated())
	}
	if !c.ProcessState.Success() {
		t.Fatalf("the producer did not finish: %v", c.ProcessState)
	}
}

func TestRlimits(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("sh"), Limits: policy.ExecLimits{OpenFiles: 64, CPUSeconds: 30, FileSize: 1 << 20, AddressSpace: 1 << 30}})
	c := procguard.CommandContext(e.ctx, "sh", "-c", "read x; ulimit -n; ulimit -t; ulimit -f; ulimit -v")
	c.Dir = e.dir
	in, _ := c.StdinPipe()
	var b strings.Builder
	c.Stdout = &b
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// The limits are applied before Start returns; the script reads them after.
	in.Write([]byte("\n"))
	in.Close()
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "64\n30\n2048\n1048576\n" {
		t.Fatalf("limits %q (applied %v)", got, c.Confinement.Rlimits)
	}
	if len(c.Confinement.Rlimits) != 4 {
		t.Fatalf("recorded %v", c.Confinement.Rlimits)
	}
}

// TestCommandsAfterAKillRun guards the cgroup pool: a cgroup that was
// killed must not be reused (some kernels kill children cloned into it).
func TestCommandsAfterAKillRun(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("sleep", "true")})
	for range 3 {
		c := procguard.CommandContext(e.ctx, "sleep", "100")
		c.Dir = e.dir
		c.Timeout = time.Millisecond
		if err := c.Run(); !errors.Is(err, procguard.ErrTimeout) {
			t.Fatalf("err %v", err)
		}
	}
	for range 10 {
		c := procguard.CommandContext(e.ctx, "true")
		c.Dir = e.dir
		if err := c.Run(); err != nil {
			t.Fatal(err)
		}
	}
}
