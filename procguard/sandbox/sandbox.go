package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/landlock"
)

// Dialer dials a loopback address on behalf of a sandboxed child; it must
// decide with the policy first. Used only when the spec forwards ports.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// Stdio is the target's standard streams and how long Wait waits for
// their copying once the sandbox is gone, as in exec.Cmd: an *os.File is
// handed to the target itself, nil means the null device, any other
// reader or writer is fed through a pipe.
type Stdio struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// ExtraFiles become the target's descriptors 3, 4, ... (a nil entry
	// leaves its number closed), as exec.Cmd.ExtraFiles.
	ExtraFiles []*os.File
	WaitDelay  time.Duration
}

// Spec is everything the trampoline needs to run one target. The host
// builds it from the guard scope (procguard does) and sends it to the
// trampoline as JSON; nothing else of the host reaches the sandbox.
type Spec struct {
	// Path is the real path of the program; Args its argv (Args[0] as
	// given); Env exactly the target's environment; Dir its working
	// directory.
	Path string   `json:"path"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`

	// Files holds the filesystem rules of every policy of the scope
	// (policy.Policy.FileSpec); a child's file call must pass all of them.
	Files []policy.Spec `json:"files"`
	// Landlock is the ruleset applied to the target last before exec; nil
	// means none.
	Landlock *landlock.Ruleset `json:"landlock,omitempty"`
	// Net says what network the target gets.
	Net Net `json:"net"`
	// Rlimits are set on the target before exec, so it runs under them
	// from its first instruction.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// NoSeccomp turns off the supervisor that judges the target's file
	// calls (protected names, read-deny patterns) through seccomp user
	// notification.
	NoSeccomp bool `json:"no_seccomp,omitempty"`
	// Judge, when set, is asked in the host about every file call the
	// supervisor refuses, before the refusal stands: it records the
	// denial and may overturn it (a BeforeDeny rescue, Warn mode) by
	// returning true. It runs on one goroutine, one call at a time, while
	// the calling process waits; an answer that takes longer than
	// JudgeTimeout leaves the call refused. A refusal the policy's rules do
	// not make (FileCall.Reason) is reported and never overturned.
	Judge func(*FileCall) bool `json:"-"`
	// AskHost is set by Start when Judge is: init sends refusals to the
	// host and waits for its answer.
	AskHost bool `json:"ask_host,omitempty"`
	// AskAllowed, with Judge, asks Judge about every file call the
	// supervisor allows as well (FileCall.Allowed set): the host records
	// it and may refuse it by returning false. It costs the calling
	// process a round trip to the host per trapped call, so a host sets it
	// only when it wants allowed calls seen (procguard: the guard's
	// audit.WithChildFileCalls).
	AskAllowed bool `json:"ask_allowed,omitempty"`
	// JudgeExec, when set, is asked in the host about every program a
	// process of the sandbox starts (execve, execveat) after the target
	// itself, with what really runs: it returns true to let it run. The
	// process waits meanwhile, at most JudgeTimeout; past it, or when the
	// answer is false, the exec fails with EACCES. It runs on the same
	// goroutine as Judge, one call at a time. It is also told (Changed
	// set, the answer unused) about an exec killed because the kernel
	// ran something other than what was judged.
	JudgeExec func(*ExecCall) bool `json:"-"`
	// ExecJudged is set by Start when JudgeExec is: init traps execs and
	// sends them to the host.
	ExecJudged bool `json:"exec_judged,omitempty"`
	// TreeCgroups, when set, are cgroup.procs files, open for writing, of
	// the cgroups that limit the command's tree. Init writes the target's
	// pid to each before the target's first instruction, so whatever the
	// target starts is born there and init's own threads, which the join
	// given to Start placed elsewhere, do not count against the tree's
	// process limit (a Go init that cannot make a thread dies). Where
	// every exec is judged (JudgeExec) init writes them while it holds the
	// target's first exec; otherwise it holds the target at a ptrace stop
	// at that exec. Where ptrace is refused the target starts through a
	// stage, whose pid init writes as soon as it exists: the stage's few
	// threads count until it execs the target. A failed write fails the
	// start: the command never runs outside its limit. The kernel checks
	// the permission of the host that opened the file; Start sends init a
	// copy, and the caller keeps (and closes) its own. A session's
	// commands name all of their cgroups here: init, which outlives each,
	// joins none of them.
	TreeCgroups []*os.File `json:"-"`

	// trapFloor makes the supervisor answer every trapped call at once,
	// unread and unjudged: the benchmark table's floor sides set it
	// (internal/benchhook.TrapFloor) to weigh the trap's round trip
	// alone. It protects no more than NoSeccomp.
	trapFloor bool
}

// ExecCall is one program a process of the sandbox starts, as the host's
// Spec.JudgeExec sees it: read once from the process when it called
// execve or execveat, resolved in its context by the supervisor.
type ExecCall struct {
	ID uint64 `json:"id"`
	// Pid is the starting thread (its process's id for a single-threaded
	// caller, and the process's once the exec is done) and PPid its
	// parent process, as the sandbox's pid namespace names them: the
	// target is the root of the tree (Report.Pid).
	Pid  int `json:"pid"`
	PPid int `json:"ppid"`
	// Program is the real path of what is judged: the file named, every
	// link followed (a "#!" script itself, not its interpreter), or the
	// program the dynamic loader maps when the loader is run as one.
	Program string `json:"program"`
	// Argv is the program's argv (for the loader's program, the argv it
	// sees); Dir the process's working directory.
	Argv []string `json:"argv"`
	Dir  string   `json:"dir"`
	// Interp lists the real paths of a script's "#!" interpreters.
	Interp []string `json:"interp,omitempty"`
	// Loader is the dynamic loader's path when it was run as a program
	// (Program is then what it maps), and LoaderOptions its options that
	// load other code (--preload, --audit, --library-path...).
	Loader        string   `json:"loader,omitempty"`
	LoaderOptions []string `json:"loader_options,omitempty"`
	// Set lists the environment's entries ("NAME=VALUE") the command
	// did not start with: what processes of the tree set or changed.
	Set []string `json:"set,omitempty"`
	// InterpreterOf is set when this exec carries out the
	// "#!/usr/bin/env NAME" line of a script that was judged and allowed
	// just before (the script's path): env, run by the kernel as the
	// script's interpreter, now starts NAME, as Landlock's plan of the
	// script's interpreters foresees.
	InterpreterOf string `json:"interpreter_of,omitempty"`
	// Reason is set when the sandbox refuses the exec whatever the host
	// says (the loader asked to search for its program); such a refusal
	// is reported, never overturned.
	Reason string `json:"reason,omitempty"`
	// Changed is set on a report that the process was killed at its exec
	// stop: the kernel ran another program, argv or environment than the
	// one judged (another thread or process rewrote them in between).
	Changed bool `json:"changed,omitempty"`
	// Repeat is set on a report of an exec init allowed without asking:
	// the host had said this very ExecCall (program, argv, interpreters,
	// loader, variables set) is allowed and Cacheable. JudgeExec is still
	// called, so it is recorded, but later: reports come in batches (at
	// most 32, before any question init asks, and at the target's exit,
	// so all before Wait returns unless the sandbox is killed first); the
	// answer is not waited for.
	Repeat bool `json:"repeat,omitempty"`
	// Cacheable is set by JudgeExec when it allowed the call and would
	// allow the same call again without asking anyone (no OnCall, which
	// sees every call; an outcome of the policy alone): init then allows
	// its repeats without a round trip to the host (Repeat).
	Cacheable bool `json:"-"`
}

// JudgeTimeout bounds how long a child's file call waits for Spec.Judge:
// past it the call is refused, whatever the host answers later.
const JudgeTimeout = 5 * time.Second

// FileCall is a file call of a sandboxed process that the supervisor
// refused, as the host's Spec.Judge sees it.
type FileCall struct {
	ID   uint64 `json:"id"`
	Pid  int    `json:"pid"`  // the caller's pid inside the sandbox
	Call string `json:"call"` // the system call ("openat", "renameat2")
	// Op is what the call does to Paths, the absolute names the
	// supervisor resolved (links, /proc aliases and openat2 scopes taken
	// as the caller's kernel would): one, or two for a move or link.
	Op    policy.Op `json:"op"`
	Paths []string  `json:"paths"`
	// Reason is set when no policy rule makes the refusal: the file is
	// known read-denied by its inode, Landlock does not let the target
	// read it, or a move or link would give a read-denied file a new
	// name. Such a refusal is not overturned.
	Reason string `json:"reason,omitempty"`
	// Allowed is set when the supervisor allowed the call and the host is
	// asked only because of Spec.AskAllowed: Judge's true lets it go on.
	Allowed bool `json:"allowed,omitempty"`
}

// Net is the target's network.
type Net struct {
	// Host keeps the host's network namespace (no isolation); by default
	// the target gets an empty one with loopback only (ExecSpec.HostNetwork
	// opts out).
	Host bool `json:"host,omitempty"`
	// Forward lists loopback TCP ports the policy allows: inside the
	// sandbox, 127.0.0.1:PORT reaches the host's 127.0.0.1:PORT through
	// the host, which decides each connection again.
	Forward []uint16 `json:"forward,omitempty"`
	// Proxy, when set, is the forwarded port that reaches the host's
	// egress proxy (procguard sets the proxy variables to it); for reports.
	Proxy uint16 `json:"proxy,omitempty"`
}

// Rlimit is one resource limit (both soft and hard).
type Rlimit struct {
	Resource int    `json:"resource"` // RLIMIT_* number
	Name     string `json:"name"`     // "cpu", "nofile", ... for reports
	Value    uint64 `json:"value"`
}

// Report is what the trampoline enforced, sent when the target started.
type Report struct {
	// Pid is the target's pid inside the sandbox's pid namespace, and
	// PidNamespace that namespace as the host names it ("pid:[4026532]"):
	// every process of the sandbox, and only those, is in it.
	Pid          int    `json:"pid"`
	PidNamespace string `json:"pid_namespace,omitempty"`
	// Namespaces lists the namespaces the target runs in ("user", "mnt",
	// "pid", "ipc", "net", "uts").
	Namespaces []string `json:"namespaces"`
	// Proc is true when /proc shows only the sandbox's processes.
	Proc bool `json:"proc"`
	// Masked lists read-denied paths made unreadable by a mount;
	// ReadOnly protected paths bound read-only inside write roots.
	Masked   []string `json:"masked,omitempty"`
	ReadOnly []string `json:"read_only,omitempty"`
	// RootReadOnly is true when every mount but the write roots is
	// read-only in the sandbox: no call, through any name or descriptor,
	// changes a file's content, mode, owner, times or extended
	// attributes outside them.
	RootReadOnly bool `json:"root_read_only"`
	// ScanTruncated is set when a write or read root had more entries
	// than the scan for protected and read-denied names looks at; the
	// seccomp supervisor still judges every call.
	ScanTruncated bool `json:"scan_truncated,omitempty"`
	// Seccomp is true when the target's file calls are judged by the
	// supervisor; SeccompReads when read-only opens are judged too.
	Seccomp      bool `json:"seccomp"`
	SeccompReads bool `json:"seccomp_reads,omitempty"`
	// MemfdNoExec is true when no memfd of the sandbox can be executed
	// (vm.memfd_noexec=2 in its pid namespace).
	MemfdNoExec bool `json:"memfd_noexec,omitempty"`
	// NoUserNamespaces is true when no process of the sandbox can make a
	// user namespace (user.max_user_namespaces=0 in the sandbox's own):
	// none regains a capability, so none can chroot, and all keep the
	// target's root.
	NoUserNamespaces bool `json:"no_user_namespaces,omitempty"`
	// Exec is true when every program a process of the sandbox starts
	// after the target is judged by the host when it starts
	// (Spec.JudgeExec), and checked at its exec stop to be what was
	// judged.
	Exec bool `json:"exec,omitempty"`
	// Landlock is the domain applied to the target.
	Landlock landlock.Status `json:"landlock"`
	// Rlimits lists the limits set before exec ("cpu=10").
	Rlimits []string `json:"rlimits,omitempty"`
	// NoCapabilities is true when every capability was dropped (the
	// bounding, inheritable and ambient sets) before exec.
	NoCapabilities bool `json:"no_capabilities"`
	// Loopback is true when the sandbox's lo is up; Forwarded lists the
	// host loopback ports reachable from inside.
	Loopback  bool     `json:"loopback"`
	Forwarded []uint16 `json:"forwarded,omitempty"`
	// Proxy is the address of the egress proxy inside the sandbox
	// ("127.0.0.1:3128"), empty without one: the child's only route to
	// destinations other than the forwarded loopback ports.
	Proxy string `json:"proxy,omitempty"`
	// Notes says what could not be enforced and why.
	Notes []string `json:"notes,omitempty"`
}

// String renders the report on one line for events and logs.
func (r *Report) String() string {
	if r == nil {
		return "no sandbox"
	}
	var b strings.Builder
	b.WriteString("namespaces=" + strings.Join(r.Namespaces, ","))
	if r.Proc {
		b.WriteString(" proc=private")
	}
	if r.RootReadOnly {
		b.WriteString(" root=ro")
	}
	if r.Seccomp {
		b.WriteString(" seccomp=files")
		if r.SeccompReads {
			b.WriteString("+reads")
		}
		if r.Exec {
			b.WriteString("+exec")
		}
	}
	if n := len(r.Masked); n > 0 {
		fmt.Fprintf(&b, " masked=%d", n)
	}
	if n := len(r.ReadOnly); n > 0 {
		fmt.Fprintf(&b, " read-only=%d", n)
	}
	if r.NoCapabilities {
		b.WriteString(" caps=none")
	}
	if r.NoUserNamespaces {
		b.WriteString(" userns=none")
	}
	if len(r.Forwarded) > 0 {
		fmt.Fprintf(&b, " forwarded=%v", r.Forwarded)
	}
	if r.Proxy != "" {
		b.WriteString(" proxy=" + r.Proxy)
	}
	if len(r.Rlimits) > 0 {
		b.WriteString(" rlimits=" + strings.Join(r.Rlimits, ","))
	}
	return b.String()
}

// Exit is how the target ended.
type Exit struct {
	// Code is the target's exit code, or -1 when a signal killed it.
	Code int `json:"code"`
	// Signal is the signal that killed the target, 0 when it exited.
	Signal syscall.Signal `json:"signal,omitempty"`
	// Usage is the target's resource usage as init's wait for it
	// reported it (the target's and that of the descendants it waited
	// for); nil when the target never ran.
	Usage *syscall.Rusage `json:"usage,omitempty"`
}

// ExitError is a session command's unsuccessful end (Launch.Wait): no
// process of the host's ended with it, so no os.ProcessState carries it.
// Its text is the one exec.ExitError would have.
type ExitError struct{ Exit }

func (e *ExitError) Error() string {
	if e.Signal != 0 {
		return "signal: " + e.Signal.String()
	}
	return "exit status " + strconv.Itoa(e.Code)
}

// ExitCode is the target's exit code, -1 when a signal killed it (as
// os.ProcessState.ExitCode).
func (e *ExitError) ExitCode() int { return e.Code }

// SetupError reports a sandbox that could not be set up: nothing of the
// target ran. Step names the step ("mount proc", "landlock"), Path the
// file it was working on, if any.
type SetupError struct {
	Step string
	Path string
	Err  error
}

func (e *SetupError) Error() string {
	s := "sandbox: " + e.Step
	if e.Path != "" {
		s += " " + e.Path
	}
	return s + ": " + e.Err.Error()
}

func (e *SetupError) Unwrap() error { return e.Err }

// ErrUnavailable is returned (wrapped) when this host cannot build the
// sandbox at all: not Linux, or no user namespaces.
var ErrUnavailable = errors.New("sandbox: unavailable")

// ErrInitDied is matched (errors.Is) by the error Launch.Wait returns
// when the sandbox's init ended on its own before it could say how the
// target ended (a fault of the sandbox, such as its runtime failing to
// make a thread): the exit status is init's, not the command's. The
// error's text carries the first line init's runtime wrote as it died.
var ErrInitDied = errors.New("sandbox: init died before the target ended")

// fileID is the object a path named: device and inode, both 0 when
// nothing was there (held_linux.go).
type fileID struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev,omitempty"`
	Ino  uint64 `json:"ino,omitempty"`
}

// message is one line of the trampoline's status stream to the host.
type message struct {
	Event  string  `json:"event"` // "started", "error", "exit"
	Report *Report `json:"report,omitempty"`
	Step   string  `json:"step,omitempty"`
	Path   string  `json:"path,omitempty"`
	Err    string  `json:"err,omitempty"`
	Errno  int     `json:"errno,omitempty"`
	Exit   *Exit   `json:"exit,omitempty"`
	// Last, with a session's "exit": the sandbox ends with this command
	// (its target started through a stage, not from init's confined
	// thread).
	Last bool `json:"last,omitempty"`
	// Held, with a sandbox's first "started": what each path it mounted
	// over (masks, read-only binds, write roots) named when it did.
	Held []fileID `json:"held,omitempty"`
	// File is a refused file call to judge ("file"); the host answers on
	// the control socket with a judgement line.
	File *FileCall `json:"file,omitempty"`
	// Exec is a program to judge ("exec", answered like "file"), or one
	// killed at its exec stop ("exec-changed", not answered).
	Exec *ExecCall `json:"exec,omitempty"`
	// Execs are repeats of allowed execs init let run ("exec-repeats",
	// not answered), in the order they ran.
	Execs []*ExecCall `json:"execs,omitempty"`
}

// judgement is the host's answer to a "file" message.
type judgement struct {
	ID    uint64 `json:"id"`
	Allow bool   `json:"allow"`
	// Cache: an "exec" the host allowed would be allowed again, with no
	// callback asked, for the same ExecCall (ExecCall.Cacheable).
	Cache bool `json:"cache,omitempty"`
}

// setupErr rebuilds a *SetupError from its message, keeping the errno so
// errors.Is(err, fs.ErrNotExist) and friends still work.
func (m *message) setupErr() *SetupError {
	var err error = errors.New(m.Err)
	if m.Errno != 0 {
		err = &errnoError{msg: m.Err, errno: syscall.Errno(m.Errno)}
	}
	return &SetupError{Step: m.Step, Path: m.Path, Err: err}
}

type errnoError struct {
	msg   string
	errno syscall.Errno
}

func (e *errnoError) Error() string { return e.msg }
func (e *errnoError) Unwrap() error { return e.errno }

func errorMessage(step, path string, err error) message {
	m := message{Event: "error", Step: step, Path: path, Err: err.Error()}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		m.Errno = int(errno)
	}
	return m
}
