// Package sandbox runs one allowed child process inside a sandbox built
// from the guard's policy, so the kernel holds the child (and everything it
// starts) to the same rules the in-process facades enforce. procguard uses
// it for every command it starts on Linux; hosts rarely call it directly.
//
// The host binary is re-executed (/proc/self/exe) in new user, mount, pid,
// ipc, uts and (by default) network namespaces; this package's init
// function recognises the re-execution by argv[0] and becomes the
// sandbox's init, so any binary that imports procguard can sandbox, go
// test binaries included, with no change to main. Nothing of the host's
// environment or descriptors reaches the target but its stdio and the
// environment procguard computed.
//
// Re-executing a Go binary is most of a start's cost, so after the first
// start a trampoline is kept ready (one per network kind): it has made its
// namespaces, done the set-up that needs no command, and waits for the
// next Start. Prewarm fills the pool early; SetPrewarm(false) empties and
// disables it. An idle trampoline is one sleeping process that dies with
// the host. While the pool is on, its trampolines are cloned by a spawner:
// the host binary re-executed once, outside every namespace of the
// sandbox's, which makes each trampoline the host's own child
// (CLONE_PARENT), so that the host does not fork itself (a fork that makes a
// user namespace copies the host's page tables and leaves every page it
// writes afterwards to a copy-on-write fault). The spawner is one more
// sleeping process; it dies with the host and with the pool, and until it
// serves, or where it cannot run, the host clones trampolines itself.
//
// A Session goes further for commands run one after another: its sandbox
// outlives each command, and every later command with the same spec is
// forked from init's already confined thread, after init killed what the
// last one left (processes, System V IPC objects, keys in the keyrings
// that outlive a process) and closed its streams.
// Masks and read-only binds cover the names that existed when the sandbox
// was built; the supervisor holds every name, made earlier or later.
//
// StartRecycled, which procguard uses for every command outside a
// Session, does the same across commands without a Session: a command's
// sandbox is kept, idle, when the command ends by itself, and the next
// command whose spec shares everything a Session's commands share runs in
// it (at most 8 kept, each for 30 s; SetRecycle(false) or
// SetPrewarm(false) ends them). A sandbox is kept only where the
// supervisor judges file calls (Report.Seccomp), since its masks and
// binds are as old as the sandbox; a killed command's sandbox is never
// kept. Its Wait makes the command's os.ProcessState from init's report
// (os.ProcessState has no constructor; the layout is checked against this
// Go's, and nothing is recycled where it differs). With recycling off and
// the pool of ready trampolines on, each command's sandbox is new and is
// ended after the command's Wait, as a kept one would be, with init's
// exit in the background (EndsAfterWait).
//
// Inside, before the target runs:
//
//   - mounts are the sandbox's own (slaves of the host's: nothing
//     propagates out); /proc shows only its processes;
//   - every existing read-denied path (absolute entries, and name patterns
//     found in the write and read roots) is masked: an empty mode-000
//     tmpfs over a directory, /dev/null over a file;
//   - every existing protected path inside a write root (.git/hooks,
//     .bashrc, .env...) is bound read-only over itself, so it can be
//     neither changed nor removed;
//   - the loopback interface is up; loopback TCP ports the net rules allow,
//     and the egress proxy's port (Net.Proxy), are forwarded to the host,
//     which decides each connection (or each proxied request) again; no
//     other route exists (no TCP, no UDP, no abstract unix sockets out);
//   - every mount but the write roots is read-only (the write roots are
//     carried over writable, with the binds inside them), so no call, by
//     any name or descriptor, changes content, mode, owner, times or
//     extended attributes outside them;
//   - no process of the sandbox can make a user namespace
//     (user.max_user_namespaces=0 in the sandbox's own), so none regains
//     a capability and none can chroot: every process keeps the target's
//     root (Report.NoUserNamespaces);
//   - on one locked thread, init sets no_new_privs, drops every
//     capability, applies the Landlock ruleset (write roots writable,
//     everything else read-only, only approved programs executable) and
//     installs a seccomp filter whose file calls init judges with the
//     policy and performs itself on the objects it judged (creating a
//     protected name, reading a read-denied file by any name, connecting
//     a unix socket outside the write roots all fail with EACCES; see
//     package procguard/internal/seccomp); it forks the target from that
//     thread in a new session, and sets the rlimits before its first
//     instruction: while the supervisor holds its first exec where execs
//     are judged, else at a ptrace stop at its exec. Where ptrace is
//     refused, a second stage (the host binary again) does these steps
//     and execs the target.
//
// Init stays pid 1: it reaps, forwards the signals a host uses to stop a
// command (TERM, INT, HUP, ...) to the target, reports the target's exit
// and exits with it. Its own threads are outside the command's pids
// cgroup (Spec.TreeCgroup), so the tree reaching its process limit never
// leaves init unable to make a thread; if init dies anyway, Wait says so
// (ErrInitDied) rather than report its status as the target's. Init's
// end, whether the target exited, the host died (parent-death signal), or
// a timeout or cancel killed it, makes the kernel kill every process of
// the namespace and wait for them: setsid'd and double-forked descendants
// cannot survive.
//
// # Not guaranteed
//
//   - Protected and read-denied names that do not exist when the command
//     starts, or lie deeper than the scan (6 levels, 20,000 entries per
//     root), are covered by the supervisor only. It judges the object a
//     call reaches, not the spelling: /proc aliases, links, openat2
//     scopes and a second thread rewriting the name all resolve to what
//     is acted on. A read-denied file is known by inode where the scan
//     masked it (its older hard links are refused too) or the supervisor
//     refused it once; a hard link made before the command to a
//     read-denied file the scan did not reach is read by its own name.
//   - Calls the supervisor does not trap (stat, chown, utimes, xattrs,
//     fchmod of an open descriptor, writes through descriptors already
//     open) are held outside the write roots by the read-only root and
//     by Landlock, not judged inside them.
//   - Without user namespaces there is no sandbox: procguard falls back to
//     Landlock and cgroups and says so in Confinement, unless the policy
//     requires the sandbox (ExecSpec.RequireSandbox).
//   - With net rules, the target reaches the network only through the
//     host's egress proxy (procguard sets the proxy variables to it) and
//     the forwarded loopback ports; a program that ignores the proxy
//     variables has no route.
//
// See docs/threat-model.md for what each layer guarantees.
package sandbox
