// Package procguard is auditguard's process runner, shaped like os/exec:
// CommandContext returns a *Cmd whose Start, Run, Output and
// CombinedOutput first ask the guard scope in the context whether the
// program may run, and spawn nothing when it may not. A denial is an
// *exec.Error naming the command with the *audit.DenyError inside, as
// os/exec reports a program it cannot run.
//
// Before asking, procguard gathers the facts (the only I/O of a decision):
// it looks the name up in the policy's PATH (never the host's), resolves
// symbolic links so a program is judged by its real file, unwraps shell
// scripts (sh -c) and wrappers (env, timeout, xargs, find -exec, sudo...)
// with policy.PlanExec, and resolves the working directory and redirection
// targets. The decision itself is policy.ExecRequest, pure, run through
// audit.Check like every guarded call.
//
// An allowed child starts from a minimal environment (policy.ExecEnv), in
// its own process group and, when the host can, its own cgroup v2; on Linux
// it runs under a Landlock domain derived from the policy's write roots,
// applied to a dedicated thread so the host stays unrestricted. When the
// leader exits, times out or its context is cancelled, the whole group (and
// cgroup) is killed, so background jobs, nohup and double forks do not
// survive the call. Captured output is capped per stream and keeps
// draining. Cmd.Confinement says exactly what was enforced.
//
// A command's sandbox is kept, idle, when the command ends by itself, and
// the next command with the same policy runs in it (recycling,
// sandbox.StartRecycled): it is forked from the kept init's confined
// thread after init killed everything the last command left, so it is
// held exactly as in a new sandbox, and starts in a fraction of the time.
// sandbox.SetRecycle(false) gives every command a new sandbox (ended after
// the command's Wait while the pool of ready trampolines is on; see
// sandbox.EndsAfterWait).
//
// Commands given a Session (Cmd.Session) run one after another in one
// sandbox: the first builds it, the later ones are forked from its init,
// each still decided, confined and limited as a command of its own (see
// Session for what differs: no ProcessState, a shared init).
//
// # Cgroups left behind
//
// A command's cgroup directories are removed when it is released, except
// the few empty ones kept for reuse by the next commands; those are
// removed once no command gave one back for 5 s, or by Shutdown, which a
// host calls before it exits. Go runs no code at exit, and none when a
// host is killed, so:
//
//   - a host that calls Shutdown after its commands are released leaves
//     no cgroup directory;
//   - one that exits without it, or is killed, leaves its directories, and
//     the commands still running in them: the first command of a later
//     host on the machine (the first cgroup it makes), or the Shutdown of
//     a host that made cgroups, removes them, and kills those commands
//     first.
//
// Each directory is named auditguard-<pid>-<start>-<pidns>-<seq>: the
// host's pid, its start time (/proc/PID/stat field 22) and the inode of
// its pid namespace. A later host removes a directory only when it is
// auditguard's and its host is proven gone: same pid namespace, and no
// process has the pid, or it has exited, or it started at another time (a
// reused pid, in the same time namespace). Only that host put processes
// there, so what is inside is its commands. Not guaranteed: a directory
// made in another pid namespace (another container) is never judged, so
// it stays until a host of that namespace cleans it (or forever, if none
// comes); one of a host that cannot read its own identity from /proc is
// never judged either; one holding processes this pid namespace cannot
// see is left alone; directories of older versions
// (auditguard-<pid>-<seq>) are removed only when empty and their pid is
// free, and what is inside them is never killed.
//
// For tests, WithDouble installs a Double on a guard: commands its scopes
// allow are then played by the double (procguard/proctest.Fake) instead of
// spawned, after the same decision.
//
// # Check
//
// Check is a dry run of the call it stands for, the same in every facade
// (fsguard, netguard, procguard): it takes that call's own route (Start's
// LookPath, EvalSymlinks, working directory, plan of what really runs, the
// same request) and runs the whole audit pipeline, the scope, every policy,
// OnCall and BeforeDeny asked with audit.Event.DryRun set, and the
// protocol's mode, then stops before the act: nothing is spawned, and
// nothing is recorded or logged. Its answer holds an audit.Result: Allowed
// (the call would go ahead), Outcome, By (who decided), the deciding rule,
// and Err, the error the call would return, in the call's own shape
// (*exec.Error with the *audit.DenyError inside). The answer holds for now;
// a later call is decided afresh.
package procguard
