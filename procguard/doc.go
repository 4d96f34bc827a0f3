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
