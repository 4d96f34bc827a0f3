package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/procguard"
)

const runUsage = "usage: auditdemo run --policy FILE [--log FILE] [--file-calls] -- CMD ARGS..."

// Exit status of run when the command did not run to an exit status of
// its own.
const (
	exitRefused = 126 // the guard refused to start it, or it could not start
	exitKilled  = 137 // killed by its timeout or context
)

// cmdRun runs one command under procguard with the policy (Landlock, the
// exec rules and settings of the file, its modes), streams the command's
// output to stdout and stderr, then prints the decision records and the
// confinement that was enforced to stderr.
//
// Exit status: the command's own; 126 when it was refused or could not
// start; 137 when it was killed by its timeout; 2 on a usage error or a
// policy file that does not load.
func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("auditdemo run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("policy", "", "the policy `FILE`")
	logPath := fs.String("log", "", "write audit records as JSON lines to `FILE`")
	fileCalls := fs.Bool("file-calls", false, "record every file call the sandbox's supervisor allows too, not only its refusals (a round trip to the host per call)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cmdline := fs.Args()
	if *path == "" || len(cmdline) == 0 {
		fmt.Fprintln(stderr, runUsage)
		return 2
	}
	logger, closeLog, err := openLog(*logPath)
	if err != nil {
		fmt.Fprintln(stderr, "auditdemo run:", err)
		return 2
	}
	defer closeLog()
	rec := audit.NewRecorder()
	opts := []audit.Option{audit.WithRecorder(rec), audit.WithLogger(logger), audit.WithLogAllows()}
	if *fileCalls {
		opts = append(opts, audit.WithChildFileCalls())
	}
	_, g, err := loadGuard(*path, opts...)
	if err != nil {
		printLoadError(stderr, *path, err)
		return 2
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		fmt.Fprintln(stderr, "auditdemo run:", err)
		return 2
	}
	defer release()

	cmd := procguard.CommandContext(ctx, cmdline[0], cmdline[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	runErr := cmd.Run()

	status := 0
	var (
		exitErr *exec.ExitError
		killed  *procguard.KilledError
		denied  *audit.DenyError
	)
	fmt.Fprintln(stderr, "--- auditguard ---")
	switch {
	case runErr == nil:
	case errors.As(runErr, &killed):
		status = exitKilled
		fmt.Fprintln(stderr, "result:  ", runErr)
	case errors.As(runErr, &exitErr):
		status = exitErr.ExitCode()
		if status < 0 {
			status = exitKilled
		}
	case errors.As(runErr, &denied):
		status = exitRefused
		fmt.Fprintf(stderr, "refused: %v\n", runErr)
	default:
		status = exitRefused
		fmt.Fprintln(stderr, "error:   ", runErr)
	}
	printRecords(stderr, rec.Records())
	if cmd.Process != nil {
		fmt.Fprintf(stderr, "exit status: %d\n", status)
		printTree(stderr, cmd.Tree())
		printConfinement(stderr, cmd.Confinement, *fileCalls)
	}
	return status
}

// printTree prints what the command's tree ran, each program under the
// process that started it.
func printTree(w io.Writer, runs []procguard.ProgramRun) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprintln(w, "what ran:")
	depth := map[int]int{}
	for i, r := range runs {
		d := 0
		if i > 0 {
			d = depth[r.PPid] + 1
			if _, ok := depth[r.PPid]; !ok {
				d = 1
			}
		}
		if _, ok := depth[r.Pid]; !ok {
			depth[r.Pid] = d // a process that execs again keeps its place
		}
		outcome := r.Outcome.String()
		if r.Killed {
			outcome = "killed (changed after it was judged)"
		}
		fmt.Fprintf(w, "  %s[%d] %s  %s  %s\n", strings.Repeat("  ", d), r.Pid, r.Program, strings.Join(r.Argv, " "), outcome)
	}
}

// printRecords prints the decision records of a run.
func printRecords(w io.Writer, recs []audit.Record) {
	if len(recs) == 0 {
		fmt.Fprintln(w, "decisions: none recorded")
		return
	}
	fmt.Fprintln(w, "decisions:")
	for _, r := range recs {
		target := r.Target
		if len(r.Argv) > 0 {
			target = strings.Join(r.Argv, " ")
		}
		rule := r.Rule
		if r.Source != "" {
			rule += " (" + r.Source + ")"
		}
		outcome := r.Outcome.String()
		if r.Outcome != audit.Allowed {
			outcome += " [" + r.Tier.String() + "]"
		}
		fmt.Fprintf(w, "  %s %s %s: %s by %s\n", r.Protocol, r.Op, target, outcome, r.DecidedBy)
		fmt.Fprintf(w, "    rule:     %s\n", rule)
		if r.Program != "" {
			fmt.Fprintf(w, "    program:  %s\n", r.Program)
		}
		if r.Detail != "" {
			fmt.Fprintf(w, "    detail:   %s\n", r.Detail)
		}
		if r.Caller != "" {
			fmt.Fprintf(w, "    caller:   %s\n", r.Caller)
		}
	}
}

// printConfinement prints what Start enforced on the child.
func printConfinement(w io.Writer, c procguard.Confinement, fileCalls bool) {
	fmt.Fprintln(w, "confinement:")
	if sb := c.Sandbox; sb != nil {
		fmt.Fprintf(w, "  sandbox        %s\n", strings.Join(sb.Namespaces, ", ")+" namespaces")
		proc := "the host's (shared)"
		if sb.Proc {
			proc = "private (only the sandbox's processes)"
		}
		fmt.Fprintf(w, "  /proc          %s\n", proc)
		files := "masks and read-only binds only"
		if sb.Seccomp {
			files = "every create, write, delete, rename and link judged on what it reaches and performed by the supervisor (seccomp); refusals recorded above"
			if fileCalls {
				files = "every create, write, delete, rename and link judged on what it reaches and performed by the supervisor (seccomp), each recorded above (--file-calls)"
			}
			if sb.SeccompReads {
				files += "; reads judged against read-deny"
			}
		}
		fmt.Fprintf(w, "  file calls     %s\n", files)
		if sb.Exec {
			fmt.Fprintf(w, "  programs       every program the command's processes start judged when it starts, with its real argv, and checked at its exec to be what was judged (see what ran)\n")
		}
		fmt.Fprintf(w, "  masked         %d read-denied paths; %d protected paths read-only\n", len(sb.Masked), len(sb.ReadOnly))
		if sb.RootReadOnly {
			fmt.Fprintf(w, "  root           read-only outside the write roots (content, mode, owner, times, xattrs)\n")
		}
		netw := "host network"
		if sb.Loopback {
			netw = "own namespace: loopback only"
			var ports []uint16
			for _, p := range sb.Forwarded {
				if sb.Proxy == "" || !strings.HasSuffix(sb.Proxy, fmt.Sprintf(":%d", p)) {
					ports = append(ports, p)
				}
			}
			if sb.Proxy != "" {
				netw += "; egress proxy at " + sb.Proxy + " (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY), every request judged by the policy"
			}
			if len(ports) > 0 {
				netw += fmt.Sprintf("; host loopback ports %v forwarded", ports)
			}
		}
		fmt.Fprintf(w, "  network        %s\n", netw)
		if sb.NoCapabilities {
			caps := "none"
			if sb.NoUserNamespaces {
				caps += "; no user namespace can be made inside (none regains one)"
			}
			fmt.Fprintf(w, "  capabilities   %s\n", caps)
		}
		for _, n := range sb.Notes {
			fmt.Fprintf(w, "  sandbox note   %s\n", n)
		}
	} else {
		fmt.Fprintf(w, "  sandbox        none (%s)\n", c.SandboxNote)
	}
	fmt.Fprintf(w, "  landlock       %s\n", c.Landlock)
	if c.LandlockNote != "" {
		fmt.Fprintf(w, "  landlock note  %s\n", c.LandlockNote)
	}
	fmt.Fprintf(w, "  process group  %d\n", c.ProcessGroup)
	if c.Cgroup != "" {
		fmt.Fprintf(w, "  cgroup         %s\n", c.Cgroup)
	} else {
		fmt.Fprintf(w, "  cgroup         none (%s)\n", c.CgroupNote)
	}
	rl := "none"
	if len(c.Rlimits) > 0 {
		rl = strings.Join(c.Rlimits, " ")
	}
	fmt.Fprintf(w, "  rlimits        %s\n", rl)
	fmt.Fprintf(w, "  timeout        %s\n", durationOr(c.Timeout, "none"))
	if len(c.EnvDropped) > 0 {
		fmt.Fprintf(w, "  env dropped    %s\n", strings.Join(c.EnvDropped, " "))
	}
}
