// Package seccomp sends a sandboxed child's filesystem calls to a
// supervisor through seccomp user notification (SECCOMP_RET_USER_NOTIF,
// seccomp_unotify(2)), which judges each one and performs the allowed ones
// itself, so a policy can refuse what Landlock cannot: creating a
// protected name that does not exist yet (.bashrc, .git/hooks/pre-commit,
// .env at any depth) inside a writable directory, or opening a file whose
// name a read-deny pattern matches, by any name that reaches it.
//
// Install loads a BPF filter on the calling thread; every task forked or
// exec'd from that thread afterwards carries it, and nothing can remove it.
// Serve, on another thread, answers each trapped call:
//
//  1. it reads the call's arguments from the task's memory once (names,
//     openat2's open_how, a symlink's text, a socket address) and opens
//     the objects the call starts from through /proc/<tid>/ (root, cwd,
//     the directory descriptor; a socket with pidfd_getfd(2));
//  2. it checks the notification is still pending (so all of that was the
//     task's own), then resolves each name itself, on those descriptors,
//     as the kernel would for the task: /proc/self and /proc/thread-self
//     stand for the task, magic links (/proc/<pid>/cwd, root, fd/N) are
//     opened to what they refer to, openat2's RESOLVE_* flags scope the
//     walk, the last component is followed only when the call follows it
//     (one openat2 of the name's directory, in which the kernel follows
//     ordinary links from the task's root and no magic link, when that
//     ends outside procfs; a walk of one component at a time otherwise);
//  3. decide judges the resolved, absolute names (Call);
//  4. an allowed call is performed by the supervisor on the directory
//     descriptor it resolved, never on the name (openat, mkdirat, mknodat,
//     unlinkat, renameat2, linkat, symlinkat, truncate, chmod, connect),
//     and the result goes back to the task: a descriptor through
//     SECCOMP_IOCTL_NOTIF_ADDFD, which on Linux 5.14 and later completes
//     the call with its number in the same step (SECCOMP_ADDFD_FLAG_SEND),
//     a value or an errno. An exclusive create whose descriptor is never
//     installed (the task has no room for it, and the call fails with
//     EMFILE as the kernel's would; or the task was killed in the call) is
//     removed again. The threads that answer block every signal another
//     thread or process could send them, so none can interrupt an add; a
//     stop of the whole supervisor (SIGSTOP, a freezer, a debugger) that
//     still does kills the task rather than let its open return a
//     descriptor it does not have.
//
// What it guarantees, for a task carrying the filter:
//
//   - A trapped call (see Filter) does not run until Serve answered it.
//     The BPF program settles the rest in the kernel, with no round trip:
//     read-only open and openat run (unless Filter.Reads), unlisted calls
//     run.
//   - What is judged is what is acted on. Nothing read from the task is
//     read twice, and the kernel never resolves the task's name again:
//     another thread rewriting the name, the socket address or the
//     open_how after the read, swapping a directory or a link in, changes
//     nothing. A read, link or rename acts on the very file (device and
//     inode) decide saw, or fails with EAGAIN.
//   - The one call that goes on in the kernel (SECCOMP_USER_NOTIF_FLAG_CONTINUE)
//     is an O_PATH open by open or openat (the kernel cannot install an
//     O_PATH descriptor for a supervisor): its flags are in registers the
//     task cannot change, and an O_PATH descriptor reads and writes
//     nothing; every call that later uses it (as a directory, reopened
//     through /proc/self/fd/N) is trapped and judged itself. openat2 with
//     O_PATH fails with ENOSYS (its flags are in memory), so programs take
//     their openat path.
//   - The supervisor acts with the task's limits, not init's: the serving
//     thread keeps no capability but CAP_SYS_PTRACE (to read the task), so
//     permission bits and owners bind it; files are created with the
//     task's umask (read from /proc/<tid>/status, set on the serving
//     thread, which has a file-system context of its own); a call that may
//     wait (a connect, the open of a FIFO) runs on a thread of its own,
//     under the confinement ServeConfined's caller gives (the sandbox: the
//     target's Landlock ruleset, network rules included).
//   - Fail closed: a call whose name cannot be read (EFAULT), is too long
//     (ENAMETOOLONG), starts from a descriptor that is not a directory
//     (ENOTDIR), a deleted directory (ENOENT) or one that cannot be opened
//     (EACCES) fails without decide being asked.
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
//     not run on a filtered thread (its own calls would be trapped and
//     wait for themselves); it sets a thread apart for itself.
//
// # Not guaranteed
//
//   - Calls not trapped are not judged: stat, readlink, access, execve,
//     chown, lchown, fchownat, utimes and utimensat, xattr calls, bind(2)
//     of a pathname unix socket (it creates a node), sendto(2) to a
//     pathname datagram socket, fchmod, fchown, ftruncate and writes
//     through fds already open (or inherited), and read-only opens unless
//     Filter.Reads. The sandbox's read-only root holds every metadata call
//     outside the write roots; inside them an owner or a time makes
//     nothing run, a mode can (chmod is trapped; fchmod of a descriptor
//     the task opened for writing is not).
//   - Serve is sequential: a slow decide holds up every trapped call of
//     every filtered task, and stop is noticed only between notifications.
//     A connect waits on its own thread, but the task waits with it and,
//     once the call is taken (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV), only
//     a fatal signal interrupts it.
//   - Names are resolved in the supervisor's mount namespace, which must
//     be the task's, with a /proc of the task's pid namespace.
//   - A parent directory with a default ACL: the supervisor applies the
//     task's umask as the kernel would, through its own umask; the ACL
//     still wins, as it does for the task.
//   - linux/amd64 and linux/arm64 only (elsewhere Install and Serve return
//     errors.ErrUnsupported; arm64 is compiled, not run, by the tests).
//     Linux 5.9 or later (SECCOMP_IOCTL_NOTIF_ADDFD), 5.6 for pidfd_getfd;
//     before 5.8 the listener never reports that every task is gone, so
//     only stop ends Serve. A task's filter chain holds one listener at
//     most: Install fails with EBUSY under another user-notification
//     filter. Serve needs ptrace access to the tasks (process_vm_readv(2),
//     /proc/<tid>/); without it every trapped call fails.
package seccomp
