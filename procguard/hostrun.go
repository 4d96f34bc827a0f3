package procguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/landlock"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// HostCommand is a program the host itself runs on behalf of a guard
// scope, confined as a child of that scope: the isolate package runs the
// host binary this way (a tool call in its own process) and the Go
// toolchain that builds generated code. The scope's exec rules are not
// asked (the host chose the program, not generated code) and nothing is
// recorded for the start; everything else is as for a guarded command:
// the sandbox built from the scope's policies (mounts, masks, the
// file-call supervisor, Landlock with only the approved programs
// executable, the network), a per-command cgroup, rlimits before the first
// instruction, the timeout, and the kill on cancellation or scope release.
// Unlike Start, StartHost never runs the program without the sandbox.
type HostCommand struct {
	// Path is the program's absolute path; Args its argv (Args[0] as the
	// program sees it).
	Path string
	Args []string
	// Env is exactly the program's environment (nil: empty). Unlike
	// Cmd.Env it is not filtered: the host wrote it.
	Env []string
	// Dir is the working directory; empty means the host's.
	Dir string
	// Stdin, Stdout and Stderr are as in exec.Cmd: an *os.File is handed
	// to the program itself, anything else goes through a pipe; nil is the
	// null device. Output is not capped.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Executable lists more files or directories (their subtrees) the
	// program and its children may execute, besides the program and the
	// programs the scope's exec rules allow: a toolchain's tool directory.
	Executable []string
	// Timeout kills the whole sandbox after this long (0: none).
	Timeout time.Duration
	// Limits overrides the scope policy's exec limits field by field: a
	// non-zero field here wins.
	Limits policy.ExecLimits
	// WaitDelay is as Cmd.WaitDelay (0: DefaultWaitDelay).
	WaitDelay time.Duration
}

// HostProcess is a running HostCommand: Wait on its Cmd as on any guarded
// command (a timeout, cancellation or release gives a *KilledError).
type HostProcess struct {
	*Cmd
	cg        *cgroup
	oomBefore int64
	memLimit  uint64
}

// StartHost starts h confined by the scope ctx carries and returns it
// running. It fails, starting nothing, when ctx carries no open scope, or
// when this host cannot build the sandbox (errors.Is(err,
// sandbox.ErrUnavailable)).
func StartHost(ctx context.Context, h *HostCommand) (*HostProcess, error) {
	scope := audit.From(ctx)
	if err := scope.Err(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(h.Path) || len(h.Args) == 0 {
		return nil, fmt.Errorf("procguard: StartHost needs an absolute Path and an argv (got %q, %d args)", h.Path, len(h.Args))
	}
	if why := sandboxMissing.Load(); why != nil {
		return nil, fmt.Errorf("%w: %s", sandbox.ErrUnavailable, *why)
	}
	real, err := filepath.EvalSymlinks(h.Path)
	if err != nil {
		return nil, &exec.Error{Name: h.Path, Err: err}
	}
	pols := scope.Policies()
	pr := &prepared{pol: pols[0], pols: pols, path: h.Path, program: real}
	if wd, err := os.Getwd(); err == nil {
		pr.cwd, _ = policy.Resolve(policy.OSFS{}, wd, "/", true)
	}
	dir := h.Dir
	if dir == "" {
		dir = pr.cwd
	}
	if dir == "" {
		dir = "/"
	}
	pr.req = policy.ExecRequest{Dir: dir, Cwd: pr.cwd,
		Plan: policy.ExecPlan{Commands: []policy.ExecCommand{{Name: h.Args[0], Program: real, Argv: h.Args}}}}
	es := pr.pol.Exec()
	limits := mergeLimits(es.Limits, h.Limits)

	// The host's own program is not held to the exec rules: what it
	// starts is confined by Landlock's execute right (h.Executable), not
	// judged when it starts.
	c := &Cmd{ctx: ctx, Path: h.Path, Program: real, Args: h.Args, Dir: dir,
		Stdin: h.Stdin, Stdout: h.Stdout, Stderr: h.Stderr, Timeout: h.Timeout, started: true, hostRun: true}
	rs, note, err := c.landlockRuleset(pr)
	c.Confinement.LandlockNote = note
	if err != nil {
		return nil, err
	}
	if rs != nil && !es.LandlockExecAny {
		for _, p := range h.Executable {
			if landlock.Exists(p) {
				rs.Rules = append(rs.Rules, landlock.Rule{Path: p, Access: landlock.ReadExec})
			}
		}
		rs.Normalize()
	}
	env := h.Env
	if env == nil {
		env = []string{}
	}
	spec := c.sandboxSpec(pr, env, rs, limits)
	spec.Path = real

	cg := c.makeCgroup(limits, es.NoCgroup)
	c.WaitDelay = h.WaitDelay
	if c.WaitDelay <= 0 {
		c.WaitDelay = DefaultWaitDelay
	}
	hp := &HostProcess{Cmd: c, cg: cg, oomBefore: cg.oomKills(), memLimit: limits.MemoryBytes}
	stdio := sandbox.Stdio{Stdin: h.Stdin, Stdout: h.Stdout, Stderr: h.Stderr, WaitDelay: c.WaitDelay}
	if err := c.startInSandbox(spec, stdio, cg); err != nil {
		cg.remove()
		if errors.Is(err, sandbox.ErrUnavailable) {
			why := err.Error()
			sandboxMissing.Store(&why)
		}
		return nil, err
	}
	c.Confinement.Timeout = h.Timeout
	c.sup = supervise(ctx, c.Process.Pid, c.keptLaunch(), cg, h.Timeout, nil, 0)
	return hp, nil
}

// OutOfMemory reports, after Wait, whether the program was killed by the
// kernel's OOM killer: it died of SIGKILL that no timeout, cancel or
// release sent, and the OOM-kill count of its cgroup's memory controller
// grew while it ran. False without a memory controller. The count is read
// after Wait returned the cgroup for reuse, so an OOM of a later command
// that got the same cgroup in between could be counted (a false positive
// only for a program that was SIGKILLed anyway).
func (h *HostProcess) OutOfMemory() bool {
	if h.cg == nil || h.Signal != syscall.SIGKILL || h.sup.cause() != nil {
		return false
	}
	return h.cg.oomKills() > h.oomBefore
}

// MemoryLimit is the memory limit asked for the program's tree (0: none);
// Confinement.CgroupNote says whether a controller enforces it.
func (h *HostProcess) MemoryLimit() uint64 { return h.memLimit }

// mergeLimits takes each non-zero field of over, else base's.
func mergeLimits(base, over policy.ExecLimits) policy.ExecLimits {
	pick := func(b, o uint64) uint64 {
		if o != 0 {
			return o
		}
		return b
	}
	return policy.ExecLimits{
		CPUSeconds:   pick(base.CPUSeconds, over.CPUSeconds),
		FileSize:     pick(base.FileSize, over.FileSize),
		AddressSpace: pick(base.AddressSpace, over.AddressSpace),
		OpenFiles:    pick(base.OpenFiles, over.OpenFiles),
		Processes:    pick(base.Processes, over.Processes),
		MemoryBytes:  pick(base.MemoryBytes, over.MemoryBytes),
	}
}
