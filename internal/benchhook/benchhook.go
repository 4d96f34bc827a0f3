// Package benchhook lets the benchmark table (internal/benchtable) reach
// settings of the module's packages that exist only to measure them.
// Being internal, it cannot be imported from outside this module, so no
// host can reach these settings.
package benchhook

// TrapFloor marks a *sandbox.Spec (procguard/sandbox sets it when it is
// linked in, on Linux) so that its supervisor answers every call the
// filter traps at once with "go on", reading and judging nothing: what
// the trap's round trip alone costs a workload, the floor under any
// supervisor of that design. Such a sandbox holds only what Landlock, the
// mounts and the namespaces hold, as with Spec.NoSeccomp, and Start and
// Session.Start refuse one with rlimits or tree cgroups, before anything
// starts (init sets them while it holds the target's first exec, which
// the floor lets go unread).
var TrapFloor func(spec any)
