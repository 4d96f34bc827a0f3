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
