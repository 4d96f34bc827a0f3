// Package seccomp sends a sandboxed child's filesystem calls to a
// supervisor through seccomp user notification (SECCOMP_RET_USER_NOTIF,
// seccomp_unotify(2)), so a policy can refuse what Landlock cannot: creating
// a protected name that does not exist yet (.bashrc, .git/hooks/pre-commit,
// .env at any depth) inside a writable directory, or opening a file whose
// name a read-deny pattern matches.
//
// Install loads a BPF filter on the calling thread; every task forked or
// exec'd from that thread afterwards carries it, and nothing can remove it.
// Serve, on another thread, reads each trapped call's arguments from the
// task, builds a Call and asks decide, then lets the call go on
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE) or fails it with decide's errno.
//
// What it guarantees, for a task carrying the filter:
//
//   - A trapped call (see Filter) does not run until Serve answered it.
//     The BPF program settles the rest in the kernel, with no round trip:
//     read-only open and openat run (unless Filter.Reads), unlisted calls
//     run.
//   - decide sees absolute names in the supervisor's view: a relative name is
//     joined to the readlink of /proc/<tid>/cwd or /proc/<tid>/fd/<dirfd>, an
//     absolute one is prefixed with /proc/<tid>/root when the task is
//     chrooted. Names are not cleaned and no symlink is resolved: that is the
//     policy's job, and Path.FollowFinal says whether the kernel will follow
//     the last component.
//   - Fail closed: a call whose name cannot be read (EFAULT), is too long
//     (ENAMETOOLONG), or is relative to a directory that has no usable path
//     (a pipe, a socket, a deleted directory: EACCES; not a directory:
//     ENOTDIR) fails without decide being asked. Nothing read from the task is
//     trusted until SECCOMP_IOCTL_NOTIF_ID_VALID confirms, after the reads,
//     that the notification (hence the task and its memory) is still the
//     same.
//   - io_uring_setup, name_to_handle_at and open_by_handle_at fail with EPERM
//     in the kernel: io_uring's opens never pass the filter, and a file
//     handle opens a file without its name. A call made
//     through a foreign ABI (i386 or x32 on amd64, AArch32 on arm64) kills
//     the process.
//   - Nothing hangs when the supervisor goes: once every copy of the
//     listener fd is closed (Serve closes its own when it returns; a process
//     dying closes its), every pending and every later trapped call fails
//     with ENOSYS.
//   - decide runs on Serve's goroutine, one call at a time, never
//     concurrently and never reentrantly; it may keep the *Call. Serve must
//     not run on a filtered thread (its own reads of /proc could be trapped
//     and wait for themselves).
//
// # Not guaranteed
//
//   - It is a policy aid, not a boundary (see docs/threat-model.md). Names,
//     open_how and sockaddrs live in the task's memory: another thread of the
//     task, or a process sharing its memory, can change them after Serve
//     read them and before the kernel does (seccomp_unotify(2)). The fd
//     table and the cwd can change in between too. The walls are Landlock
//     and the mounts.
//   - Calls not trapped are not judged: stat, readlink, access, execve,
//     xattr calls, bind(2) of a pathname unix socket (it creates a node),
//     fchmod, fchown, ftruncate and writes through fds already open (or
//     inherited), and read-only opens unless Filter.Reads.
//   - Names are resolved in the supervisor's view, which must share the
//     task's mount namespace and see a /proc of the task's pid namespace:
//     /proc/self in a name means the supervisor once the policy resolves
//     it, and openat2's RESOLVE_IN_ROOT and RESOLVE_BENEATH scopes are not
//     applied to the joined name.
//   - Serve is sequential: a slow decide holds up every trapped call of
//     every filtered task, and stop is noticed only between notifications.
//   - linux/amd64 and linux/arm64 only (elsewhere Install and Serve return
//     errors.ErrUnsupported; arm64 is compiled, not run, by the tests).
//     Linux 5.5 or later (CONTINUE); before 5.8 the listener never reports
//     that every task is gone, so only stop ends Serve. A task's filter
//     chain holds one listener at most: Install fails with EBUSY under
//     another user-notification filter. Serve needs ptrace read access to
//     the tasks (/proc/<tid>/mem); without it every trapped call fails.
package seccomp
