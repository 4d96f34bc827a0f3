package seccomp

import (
	"fmt"
	"strings"

	"github.com/auditguard/auditguard/policy"
)

// Filter says which calls are sent to the supervisor. Always trapped:
// open, openat (when they ask to write), creat, openat2, mkdir, mkdirat,
// mknod, mknodat, unlink, unlinkat, rmdir, rename, renameat, renameat2,
// link, linkat, symlink, symlinkat, truncate, chmod, fchmodat and
// fchmodat2 (arm64 has only the *at calls and truncate).
type Filter struct {
	// Reads also traps open and openat without a write flag (needed when
	// the policy has read-deny entries). Without it they run unjudged,
	// with no round trip to the supervisor.
	Reads bool
	// UnixConnect traps connect(2), so connecting to a pathname unix
	// socket is judged (OpConnect) on the socket file the name reaches.
	// Every connect is then performed by the supervisor on its copy of
	// the task's socket, on a confined thread of its own; other addresses
	// (inet, abstract or unnamed unix) are not judged, and the address
	// connected to is the one read, whatever the task's memory says after.
	UnixConnect bool
	// Exec traps execve(2) and execveat(2): the program, its argv and
	// environment are read once and judged (Call.Exec); an allowed exec
	// goes on in the kernel (see Handler.BeforeExec for how the caller
	// checks that what the kernel ran is what was judged).
	//
	// The supervisor of such a filter must not be in a process whose
	// threads carry it and start children: Go forks with vfork, and the
	// forking thread answers no stop-the-world until the child has
	// exec'd, so a collection starting meanwhile waits for a supervisor
	// that waits for the collection. Install it in the process that
	// execs (as the sandbox's target stage does).
	Exec bool
}

// Path is one name a call acts on.
type Path struct {
	// Name is the absolute, clean path of what the call acts on, as the
	// supervisor resolved it in the task's context: every symbolic link
	// followed the way the call follows it (the last component only when
	// the call would: open without O_NOFOLLOW, truncate, chmod, connect,
	// linkat's old name with AT_SYMLINK_FOLLOW), /proc/self and magic
	// links taken as the task sees them, openat2's RESOLVE_* scope
	// applied. The act is done on the directory the supervisor holds, so
	// Name is what is judged and what is acted on. Empty for an object
	// with no path (a pipe or socket reached through /proc/<pid>/fd/N).
	Name string
	// Mode is the file type (S_IFMT bits) of what Name names now, not
	// followed; 0 when it does not exist (yet).
	Mode uint32
	// Dev and Ino identify the existing file Name names (0 when absent).
	// A read, link or rename acts on exactly this file: if another name
	// was swapped in before the act, the call fails with EAGAIN.
	Dev, Ino uint64
}

// Call is one trapped system call, as decide sees it.
type Call struct {
	Pid  int    // the calling thread's id, in the supervisor's pid namespace
	Nr   int    // system call number of the task's architecture
	Name string // system call name, "openat"
	// Op is what the call does to Paths: OpRead (open without a write
	// flag, O_PATH), OpWrite (open with a write flag, creat, mknod,
	// truncate), OpCreate (mkdir), OpDelete (unlink, rmdir), OpMove
	// (rename: both names), OpLink (link: both names; symlink: the new
	// entry), OpAttr (chmod, chown, utimes) or OpConnect.
	Op policy.Op
	// Paths holds one name, or two for rename and link (old, then new).
	Paths []Path
	// Flags is the call's flags argument: the open flags for the open
	// family (openat2: open_how.flags; creat: O_CREAT|O_WRONLY|O_TRUNC),
	// otherwise the AT_* or RENAME_* flags of the calls that take some,
	// and 0 for the rest.
	Flags uint64
	// Target is the link text of symlink and symlinkat (never resolved).
	Target string
	// Exec is set for execve and execveat (Op is OpExec, Paths[0] the
	// program, every link followed).
	Exec *Exec
}

// Exec is what an execve or execveat would run, read once from the task.
type Exec struct {
	// Filename is the name the kernel gives the program (and puts in a
	// script interpreter's argv): the name passed, or /dev/fd/N[/name]
	// for execveat from a descriptor.
	Filename string
	// Argv and Env are the arguments and environment passed.
	Argv, Env []string
	// Dir is the task's working directory.
	Dir string
	// Interp lists the "#!" interpreters the kernel runs, outermost
	// last: Interp[0] runs the script Paths[0], Interp[1] runs Interp[0]
	// when that is a script too. Each is resolved in the task's context.
	Interp []Interp
	// Loaded is the program the dynamic loader maps when the program run
	// is the loader itself ("ld-linux-x86-64.so.2 PROG ARGS"), with the
	// argv PROG sees; nil otherwise, or when no program is named.
	Loaded *Loaded
}

// Interp is one "#!" interpreter: its line's name and optional argument,
// and the file the name reaches.
type Interp struct {
	Name, Arg string
	Path      Path
}

// Loaded is the program the dynamic loader runs as a program.
type Loaded struct {
	Path Path
	Argv []string
	// Options are the loader's options that load other code or change
	// where libraries come from (--preload, --audit, --library-path,
	// --inhibit-rpath, --glibc-hwcaps-prepend): the command line forms of
	// LD_PRELOAD, LD_AUDIT and LD_LIBRARY_PATH.
	Options []string
}

// Final is the file the kernel maps last: the outermost interpreter of a
// script, else the program itself. It is what /proc/<pid>/exe names once
// the exec is done.
func (x *Exec) Final(program Path) Path {
	if n := len(x.Interp); n > 0 {
		return x.Interp[n-1].Path
	}
	return program
}

// KernelArgv is the argv the new program starts with: Argv, rewritten by
// the kernel for each "#!" level (binfmt_script: the interpreter's name,
// its optional argument, the script's name, then Argv[1:]).
func (x *Exec) KernelArgv() []string {
	argv := x.Argv
	script := x.Filename
	for _, in := range x.Interp {
		next := []string{in.Name}
		if in.Arg != "" {
			next = append(next, in.Arg)
		}
		next = append(next, script)
		if len(argv) > 1 {
			next = append(next, argv[1:]...)
		}
		argv, script = next, in.Name
	}
	return argv
}

// String renders the call for logs and test failures.
func (c *Call) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s[%d] %s", c.Name, c.Pid, c.Op)
	for _, p := range c.Paths {
		fmt.Fprintf(&b, " %q", p.Name)
	}
	if c.Target != "" {
		fmt.Fprintf(&b, " -> %q", c.Target)
	}
	if c.Flags != 0 {
		fmt.Fprintf(&b, " flags=%#x", c.Flags)
	}
	return b.String()
}
