// Package isolate runs a host tool call in its own sandboxed process, and
// builds and runs generated Go programs the same way.
//
// A host registers functions of the shape func(ctx, In) (Out, error) with
// Register, from an init function, and calls them by name with Call (or
// the typed Func.Call). Call re-executes the host binary inside the
// sandbox procguard builds for its commands (procguard/sandbox: user,
// mount, pid, ipc, uts and network namespaces, masks over read-denied
// paths, read-only binds over protected names, a seccomp supervisor for
// file calls, Landlock, rlimits), placed in a cgroup with the call's
// process and memory limits; the re-executed binary recognises its role
// by argv[0] and runs the one function there.
//
// What a call guarantees:
//
//   - The function runs in another process: a crash, hang, leak, panic or
//     fatal runtime error ends that process, never the host. Every failure
//     comes back as an *Error with a Kind: Failed, Panicked (value and the
//     child's stack), TimedOut ("tool X killed after 30s"), Canceled,
//     Crashed (signal or exit code), OutOfMemory, BadResult, BadInput,
//     Unknown, Setup.
//   - When Call returns, every process of the call is gone: the child is
//     its sandbox's target, and the end of the sandbox's init makes the
//     kernel kill every process in its pid namespace. A timeout, the
//     caller's context or the release of its guard scope kill the
//     sandbox (and its cgroup) at once.
//   - The kernel holds the child to the caller's policy: writes land only
//     in write roots, protected names stay unchanged, read-denied paths
//     read as empty, only approved programs execute, and the network is
//     loopback plus the loopback ports the policy names.
//   - The function's ctx carries a guard rebuilt from the caller's scope
//     (its policies with their provenance, modes, data snapshot as JSON,
//     and the tool call: the caller's audit.Call, or one named after the
//     function), so fsguard, procguard and netguard handles made from it
//     decide there as they would in the host. Each decision is replayed
//     into the host's logger and Recorder (audit.Record.Remote names the
//     call and the child's pid). OnCall and BeforeDeny run in the host,
//     asked over the channel; the child never runs host callbacks.
//   - In and Out must survive JSON: Register refuses types that cannot.
//
// Starting a child (a sandbox, then the host binary up to Register) is most
// of a call's cost, so after a call the next child for the same function
// and scope is started and waits, ready, in a pool: the next call only
// sends its request (Prewarm, SetPool). See docs/isolate.md for the costs.
//
// # Not guaranteed
//
//   - Hosts without user namespaces cannot build the sandbox: Call fails
//     with Setup (wrapping sandbox.ErrUnavailable) rather than run the
//     function unconfined.
//   - The child is the host binary: package init functions run there
//     before the function is served, and anything main does before a late
//     Register runs there too (confined). Register in init.
//   - Host data that does not encode as JSON is not carried to the child
//     (the callbacks, which run in the host, still see it); the child sees
//     the data as JSON values (map[string]any, float64...).
//   - TrustSite verdicts hold for the rest of that call only.
//   - Ready children are idle processes until a call, the scope's release
//     or SetPool(false) ends them (two processes each, at most eight).
//   - Out-of-memory is told apart from other kills only where a cgroup
//     memory controller enforces the limit (or the Go runtime reports it).
//
// See docs/isolate.md and docs/threat-model.md.
package isolate
