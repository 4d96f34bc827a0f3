package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/auditguard/auditguard/internal/proctree"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// childTimeout bounds every process the exec row starts.
const childTimeout = 30 * time.Second

// execMaxRounds caps the starts of the exec row (each round starts one
// process per side), whatever the time budget.
const execMaxRounds = 1000

// execRow starts /bin/true in procguard's default confinement (the
// sandbox, with a trampoline ready in the pool: the steady state of a
// host), with bubblewrap giving it about the same namespaces and mounts,
// and with os/exec, one start per side per round.
func execRow(e *env) (*row, error) {
	dir, err := e.mkdir("exec")
	if err != nil {
		return nil, err
	}
	ctx, _, err := e.enter(policy.Spec{
		WriteRoots: []string{dir}, Home: dir,
		Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: "true"}}},
	})
	if err != nil {
		return nil, err
	}
	// Before each side, untimed, the pool gets its next trampoline, so a
	// trampoline's start-up never runs during another side's start. An
	// error means no sandbox here; the probe below says so.
	prep := func(int) error { sandbox.Prewarm(false); return nil }
	guarded := func(int) error {
		cctx, cancel := context.WithTimeout(ctx, childTimeout)
		defer cancel()
		c := procguard.CommandContext(cctx, "true")
		c.Dir, c.Timeout = dir, childTimeout
		if err := c.Run(); err != nil {
			return err
		}
		if c.Confinement.Sandbox == nil {
			return errors.New("started without the sandbox: " + c.Confinement.SandboxNote)
		}
		return nil
	}
	run := func(name string, args ...string) func(int) error {
		return func(int) error {
			cctx, cancel := context.WithTimeout(context.Background(), childTimeout)
			defer cancel()
			x := exec.CommandContext(cctx, name, args...)
			x.WaitDelay = time.Second
			return x.Run()
		}
	}
	sb := &side{name: "sandbox", prep: prep, op: guarded,
		note: "procguard.CommandContext(ctx, \"true\").Run(): the default confinement, a ready trampoline in the pool"}
	// Probe: the side is skipped, with the reason, where no sandbox can
	// be made (no user namespaces).
	c := procguard.CommandContext(ctx, "true")
	c.Dir, c.Timeout = dir, childTimeout
	if err := c.Run(); err != nil {
		sb.skip = "procguard could not start true: " + err.Error()
	} else if c.Confinement.Sandbox == nil {
		sb.skip = "no sandbox on this host: " + c.Confinement.SandboxNote
	}
	if sb.skip != "" {
		prep = nil // no pool to refill
	}
	bw := &side{name: "bwrap", prep: prep}
	if path, err := exec.LookPath("bwrap"); err != nil {
		bw.skip = "bubblewrap is not installed (apt-get install bubblewrap to compare)"
	} else {
		args := []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts",
			"--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
			"--bind", dir, dir, "--chdir", dir, "/bin/true"}
		bw.op = run(path, args...)
		bw.note = path + " " + strings.ReplaceAll(strings.Join(args, " "), dir, "<tmp>/exec")
		if err := bw.op(0); err != nil {
			bw.skip = fmt.Sprintf("bwrap does not run here: %v", err)
		}
	}
	return &row{
		group: "exec", call: "/bin/true", base: "raw",
		sides: []*side{
			{name: "raw", prep: prep, op: run("/bin/true"), note: "exec.CommandContext(ctx, \"/bin/true\").Run()"},
			sb, bw,
		},
		n: 1, minRounds: 60, maxRounds: execMaxRounds,
		targets: []target{{side: "sandbox", vs: "bwrap", maxRatio: 0.75, text: "<= 0.75x bwrap"}},
	}, nil
}

// endChildren ends the pool's ready trampolines and checks that nothing
// the table started is still alive; any survivor is killed by its pid
// and reported.
func endChildren() error {
	sandbox.SetPrewarm(false)
	defer sandbox.SetPrewarm(true)
	deadline := time.Now().Add(5 * time.Second)
	for {
		kids, err := proctree.Children()
		if err != nil {
			return err
		}
		if len(kids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, pid := range kids {
				if p, err := os.FindProcess(pid); err == nil {
					_ = p.Kill()
				}
			}
			return fmt.Errorf("processes started by the table outlived it (killed): %v", kids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
