//go:build linux

package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/internal/netfwd"
	"github.com/auditguard/auditguard/procguard/internal/seccomp"
	"github.com/auditguard/auditguard/procguard/landlock"
)

// The trampoline is the host binary re-executed twice inside the
// namespaces the host's clone made (user, mount, pid, ipc, uts, net):
//
//   - as init (argv[0] initArg0, pid 1 of the pid namespace): it builds
//     the filesystem view, brings up loopback, starts the target stage,
//     judges the target's file calls (seccomp user notification), forwards
//     allowed loopback ports, reaps every process and reports how the
//     target ended. When it dies, by the host's death (parent-death
//     signal) or a kill, the kernel kills every process in the namespace.
//   - as the target stage (argv[0] targetArg0, pid 2): it drops what the
//     target must not have and execs it (target_linux.go).
//
// init() dispatches on argv[0] before the host's main runs, so any binary
// that imports procguard can sandbox, go test binaries included; the host
// needs no hook.
func init() {
	if len(os.Args) == 0 {
		return
	}
	switch os.Args[0] {
	case initArg0:
		os.Exit(runInit(len(os.Args) > 1 && os.Args[1] == hostNetArg))
	case targetArg0:
		os.Exit(runTarget())
	case spawnerArg0:
		os.Exit(runSpawner())
	}
}

// initState is what init's steps share.
type initState struct {
	held    []fileID // what the mounts hold, for the first "started"
	spec    Spec
	hostNet bool       // the sandbox shares the host's network namespace
	stdio   []*os.File // the target's 0, 1, 2, from the host
	extra   []*os.File // the target's 3, 4, ... (nil: closed), from the host
	fwd     *os.File   // the forwarding socket, with forwards
	// treeProcs are the tree cgroups' cgroup.procs (Spec.TreeCgroups).
	treeProcs []*os.File
	// cmd is what the serving thread needs of the command that runs now
	// (a session runs several, one after another); set before each target
	// starts.
	cmd atomic.Pointer[command]
	// next is the socket a session's later commands come on (Spec.Session);
	// nil for a sandbox of one command.
	next *os.File
	// sessionAsked: the host asked for a session (Spec.Session was sent),
	// whether or not this sandbox can keep one.
	sessionAsked bool
	// confined: the command thread has taken on the targets' confinement
	// (forkTarget), which a session's later targets inherit.
	confined bool
	// rlimitErr is why setting the rlimits failed while the supervisor
	// held the target's first exec (command.rlimitsAtExec).
	rlimitErr atomic.Pointer[error]
	stage     bool // start the target through a target stage (tests)
	// collectAtFirst: allocate enough to start collections while
	// judging the target's first exec (tests).
	collectAtFirst bool
	trapFloor      bool // answer every trapped call at once (Spec.trapFloor)
	status         *os.File
	sendMu         sync.Mutex // one status line at a time
	ctl            *os.File   // the control socket, kept to read judgements (Spec.AskHost)
	ctlBuf         []byte     // what was read from ctl past the last judgement
	judged         uint64     // the last FileCall.ID sent
	pols           []*policy.Policy
	report         Report
	stop           chan struct{}

	toMask, toProtect []string // existing paths found by scanRoots
	secrets           secrets  // read-denied files by inode (supervisor_linux.go)
	readRules         []string // what Landlock lets the target read; nil: everything

	targetPid int
	forwardTo atomic.Int32     // the target's pid once it runs, for forwardSignals
	early     *unix.WaitStatus // the target's status, when it ended before reap ran
	stageErr  *os.File         // the target stage's error pipe (EOF once it exec'd)
	stageFD   *os.File         // init's end of the socket the stage sends its report on
	listener  int              // seccomp listener, -1 without
	serving   *seccomp.Thread  // the supervisor's thread, made while init waits
	specCame  atomic.Bool      // the first spec is here: growHeap stops
	gcMu      sync.Mutex       // held by growHeap while it collects
	execs     *execs           // exec calls, with Spec.ExecJudged (exec_linux.go)
}

// step is one named piece of set-up; its name reaches the host in a
// *SetupError when it fails.
type step struct {
	name string
	run  func(*initState) error
}

// warmSteps need no spec: init runs them as soon as it starts, usually
// while it waits in the pool for a command, then says "ready".
//   - mounts become slaves before any mount, so nothing propagates back
//     to the host (the host's later mounts still come in);
//   - /proc is remounted before the supervisor needs it: seccomp names
//     tasks by their pid in this namespace;
//   - the reflection caches of the wire types are built, so decoding the
//     spec and encoding the report cost what the data costs.
var warmSteps = []step{
	{"slave mounts", slaveMounts},
	{"mount proc", mountProc},
	{"memfd noexec", memfdNoExec},
	{"no user namespaces", noUserNamespaces},
	{"loopback", loopback},
	{"prime", primeCodecs},
	{"prime policy", primePolicy},
	{"serving thread", prepareServing},
}

// initSteps run once the spec is there, in this order:
//   - the spec is read first: the host sends it only after placing this
//     process in its cgroups, so nothing below runs outside them;
//   - the policies are rebuilt before any mask, while resolution still
//     sees the real tree;
//   - masks and read-only binds come before the target exists, and the
//     root turns read-only after them (the write roots are carried over
//     writable, with the binds inside them);
//   - the target starts last, its file calls judged by the supervisor
//     from its first one.
var initSteps = []step{
	{"read spec", readSpec},
	{"load policy", loadPolicies},
	{"scan roots", scanRoots},
	{"mask read-deny", maskReadDeny},
	{"protect names", protectNames},
	{"read-only root", readOnlyRoot},
	{"forward", forward},
	{"start target", startTarget},
}

// spareHeap is how much heap init touches, then frees, while it waits
// for a spec: more than the set-up allocates. A Go program's heap grows
// into pages it never touched until a collection frees some, and the
// first touch of each is a page fault. Init's set-up runs no collection:
// it took about 110 faults (median of 28 starts), about 50 with the
// spare heap, and a start was 0.5 to 0.7 ms shorter on the
// paravirtualized development VM, where a fault costs about 12 µs
// (docs/bench.md).
const spareHeap = 1 << 20

// growHeap touches spareHeap of heap and collects it, so the set-up's
// allocations land on pages init already has, then says "settled". It
// runs while init waits in the pool; when the spec comes first (a cold
// start, the spec sent as soon as init is ready) it stops, so it never
// delays a start by more than a page's touch, or a collection of a heap
// of a few hundred kilobytes that had begun.
func (st *initState) growHeap() {
	defer st.send(message{Event: "settled"})
	const page = 4096
	b := make([]byte, spareHeap)
	for i := 0; i < len(b); i += page {
		if st.specCame.Load() {
			return
		}
		b[i] = 1
	}
	runtime.KeepAlive(b)
	b = nil
	// The collection is forced, so SetGCPercent(-1) does not hold it
	// off: it must never run while the target's vfork holds a P (see
	// forkTarget), which waits for it under gcMu.
	st.gcMu.Lock()
	if !st.specCame.Load() {
		runtime.GC()
	}
	st.gcMu.Unlock()
}

// hostNetArg is init's argv[1] when it shares the host's network.
const hostNetArg = "hostnet"

func runInit(hostNet bool) int {
	st := &initState{status: os.NewFile(fdStatus, "status"), stop: make(chan struct{}), listener: -1, hostNet: hostNet}
	// Init's stderr is the null device; a fatal error of its runtime goes
	// to the host on the status stream too, as lines that are not
	// messages (see ErrInitDied).
	_ = debug.SetCrashOutput(st.status, debug.CrashOptions{})
	// The inherited fds must not reach the target.
	_ = unix.CloseRange(fdCtl, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if !st.run(warmSteps) {
		return 125
	}
	forwardSignals(st)
	st.send(message{Event: "ready"})
	go st.growHeap()
	// The command runs on a thread of its own, which takes on the target's
	// confinement (see startTarget) and is never unlocked; the main thread
	// stays clean, so the target, which shares the command thread's
	// Landlock domain, cannot signal init (pid 1 is the main thread).
	code := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		code <- st.runCommand()
	}()
	return <-code
}

// forwardedSignals are the signals a host sends a command to ask it to
// stop or to tell it something (exec.Cmd.Cancel, Process.Signal): sent to
// the sandbox's init, they reach the target, as an init such as tini
// does. Without this, Go's default would end init, and the kernel every
// process of the sandbox, with no chance to clean up. SIGKILL and SIGSTOP
// cannot be caught: they end or stop the whole sandbox.
var forwardedSignals = []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT,
	unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGCONT}

// forwardSignals passes forwardedSignals on to the target once it runs;
// before that they are dropped. The forwarding goroutine runs on a thread
// outside the target's Landlock domain, which may signal into it.
func forwardSignals(st *initState) {
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, forwardedSignals...)
	go func() {
		for sig := range ch {
			if pid := st.forwardTo.Load(); pid > 0 {
				_ = unix.Kill(int(pid), sig.(unix.Signal))
			}
		}
	}()
}

// runCommand reads the spec, sets up, starts the target, waits for it and
// returns init's exit code. In a session (Spec.Session) it then kills
// what the command left, says how the target ended and waits for the
// next command on the session's socket, until the host ends the session.
func (st *initState) runCommand() int {
	if !st.run(initSteps) {
		return 125
	}
	for {
		st.forwardTo.Store(int32(st.targetPid))
		m := message{Event: "started", Report: &st.report}
		if st.next != nil { // the sandbox outlives the command
			m.Held, st.held = st.held, nil
		}
		st.send(m)
		exit := st.reap()
		st.forwardTo.Store(0)
		if st.next != nil {
			st.killRest()
			st.dropCommandFiles() // the host's copiers see EOF now
		}
		st.flushRepeats()
		if st.next == nil {
			close(st.stop)
			st.send(message{Event: "exit", Exit: &exit, Last: st.sessionAsked})
			if exit.Signal != 0 {
				return 128 + int(exit.Signal)
			}
			return exit.Code
		}
		st.send(message{Event: "exit", Exit: &exit})
		// The command is over (nothing of it runs); what it left in the
		// IPC namespace goes before the next command's spec is read. On
		// another thread: this one's file calls are trapped.
		done := make(chan struct{})
		go func() { clearIPC(); clearKeys(); close(done) }()
		<-done
		// The host kills a session whose command failed to start.
		if !st.run(nextSteps) {
			return 125
		}
	}
}

// nextSteps start a session's next command in the sandbox set up for the
// first: nothing of the set-up is done again.
var nextSteps = []step{
	{"read spec", readNext},
	{"start target", startTarget},
}

// killRest kills every process the command left in the sandbox
// (background jobs, daemons, a traced process stopped at its exec) and
// reaps them, so a session's next command finds the sandbox as a new one
// would be: init alone. kill(-1) from pid 1 reaches every other process of
// the pid namespace, and init's command thread may signal them all: they
// descend from it, in its Landlock domain. Each round kills again what a
// fork racing the last kill made.
func (st *initState) killRest() {
	for {
		_ = unix.Kill(-1, unix.SIGKILL)
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return // ECHILD: none left
		}
		if st.execs != nil {
			st.execs.stopped(pid, ws)
		}
	}
}

// run runs steps until one fails, which it reports to the host.
func (st *initState) run(steps []step) bool {
	for _, s := range steps {
		if err := s.run(st); err != nil {
			name, path := s.name, ""
			var pe *fs.PathError
			var se *SetupError
			switch {
			case errors.As(err, &se): // the target stage's own step
				name, path, err = se.Step, se.Path, se.Err
			case errors.As(err, &pe):
				path, err = pe.Path, pe.Err
			}
			st.send(errorMessage(name, path, err))
			if st.targetPid > 0 {
				_ = unix.Kill(st.targetPid, unix.SIGKILL)
			}
			return false
		}
	}
	return true
}

func (st *initState) send(m message) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	st.sendMu.Lock()
	_, _ = st.status.Write(append(b, '\n'))
	st.sendMu.Unlock()
}

// readSpec takes the target's descriptors and the spec from the control
// socket (see sendSpec).
func readSpec(st *initState) error {
	f := os.NewFile(fdCtl, "ctl")
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	ws, files, err := recvSpec(fdCtl, &st.specCame)
	if err != nil {
		return err
	}
	st.spec, st.stage, st.collectAtFirst, st.trapFloor = ws.Spec, ws.ForceStage, ws.CollectAtFirst, ws.TrapFloor
	if ws.CollectAtFork {
		held := make(chan struct{})
		go func() {
			st.gcMu.Lock()
			close(held)
			for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
				runtime.GC()
			}
			st.gcMu.Unlock()
		}()
		<-held
	}
	if st.stdio, files, err = st.takeFiles(&ws, files); err != nil {
		return err
	}
	if ws.Forwarder {
		if len(files) == 0 {
			return errors.New("the forwarding socket is missing")
		}
		st.fwd, files = files[0], files[1:]
	}
	if ws.Session {
		if len(files) == 0 {
			return errors.New("the session's socket is missing")
		}
		st.next, files = files[0], files[1:]
		st.sessionAsked = true
	}
	if st.extra, err = extraFiles(&ws, files); err != nil {
		return err
	}
	if st.spec.Net.Host != st.hostNet {
		return errors.New("the spec's network does not match the trampoline's")
	}
	if st.spec.AskHost {
		// The host answers refused file calls on it (judge).
		keep = true
		st.ctl = f
	}
	return nil
}

// readNext takes a session's next command from the session's socket: its
// program, argv, environment, directory, rlimits, descriptors and tree
// cgroups. The rest of its spec (files, Landlock, network, supervisor)
// is the session's: the host sends a command only to a session whose
// spec matches it (Session.Start).
func readNext(st *initState) error {
	ws, files, err := recvSpec(int(st.next.Fd()), nil)
	if err != nil {
		return err
	}
	if st.stdio, files, err = st.takeFiles(&ws, files); err != nil {
		return err
	}
	if st.extra, err = extraFiles(&ws, files); err != nil {
		return err
	}
	st.spec.Path, st.spec.Args, st.spec.Env, st.spec.Dir, st.spec.Rlimits = ws.Path, ws.Args, ws.Env, ws.Dir, ws.Rlimits
	st.targetPid, st.early = 0, nil
	st.report.Pid, st.report.Rlimits = 0, nil
	return nil
}

// clearIPC removes the System V IPC objects (shared memory, message
// queues, semaphore sets) a command left in the sandbox's IPC namespace,
// which lasts as long as the sandbox: a session's next command finds none,
// as a sandbox of its own would. Their creator was the target, whose uid
// init has. POSIX message queues are not listed anywhere init can read
// without mounting their filesystem; they stay (docs/exec.md).
func clearIPC() {
	for _, k := range []struct {
		file string
		rmid func(id int)
	}{
		{"shm", func(id int) { unix.Syscall(unix.SYS_SHMCTL, uintptr(id), unix.IPC_RMID, 0) }},
		{"msg", func(id int) { unix.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0) }},
		{"sem", func(id int) { unix.Syscall(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID) }},
	} {
		b, err := os.ReadFile("/proc/sysvipc/" + k.file)
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		for _, line := range lines[min(1, len(lines)):] { // a header first
			if f := strings.Fields(line); len(f) > 1 {
				if id, err := strconv.Atoi(f[1]); err == nil {
					k.rmid(id)
				}
			}
		}
	}
}

// clearKeys empties the keyrings a command's keys outlive it in: the
// user keyring and the user session keyring of the sandbox's user (they
// belong to its user namespace, which lasts as long as the sandbox), and
// the session keyring every process of the sandbox inherits from init. A
// session's next command finds none of the last one's keys, as a sandbox
// of its own would.
func clearKeys() {
	for _, ring := range []int{unix.KEY_SPEC_USER_KEYRING, unix.KEY_SPEC_USER_SESSION_KEYRING, unix.KEY_SPEC_SESSION_KEYRING} {
		_, _ = unix.KeyctlInt(unix.KEYCTL_CLEAR, ring, 0, 0, 0)
	}
}

// dropCommandFiles closes init's copies of the ended command's stdio,
// extra files and tree cgroup files.
func (st *initState) dropCommandFiles() {
	for _, f := range slices.Concat(st.stdio, st.extra, st.treeProcs) {
		if f != nil {
			f.Close()
		}
	}
	st.stdio, st.extra, st.treeProcs = nil, nil, nil
}

// recvSpec reads one spec from the stream socket fd: an 8-byte length
// with the descriptors (sendSpec), then the spec as JSON of that length.
func recvSpec(fd int, came *atomic.Bool) (wireSpec, []*os.File, error) {
	var ws wireSpec
	var hdr [8]byte
	oob := make([]byte, unix.CmsgSpace(4*maxSpecFiles))
	n, oobn, _, _, err := unix.Recvmsg(fd, hdr[:], oob, unix.MSG_CMSG_CLOEXEC)
	if came != nil {
		came.Store(true)
	}
	if err != nil {
		return ws, nil, os.NewSyscallError("recvmsg", err)
	}
	if n == 0 {
		return ws, nil, errors.New("no spec: the host went away")
	}
	files := rightsFiles(oob[:oobn], "from-host")
	if n != len(hdr) || len(files) < 3 {
		return ws, nil, fmt.Errorf("bad spec header (%d bytes, %d descriptors)", n, len(files))
	}
	size := binary.LittleEndian.Uint64(hdr[:])
	if size > 64<<20 {
		return ws, nil, fmt.Errorf("spec of %d bytes", size)
	}
	b := make([]byte, size)
	for got := 0; got < len(b); {
		r, err := unix.Read(fd, b[got:])
		if err == unix.EINTR {
			continue
		}
		if err == nil && r == 0 {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return ws, nil, fmt.Errorf("reading the spec: %w", err)
		}
		got += r
	}
	if err := json.Unmarshal(b, &ws); err != nil {
		return ws, nil, err
	}
	return ws, files, nil
}

// rightsFiles returns the descriptors an SCM_RIGHTS message carried in
// oob as files named name (control data that is not is skipped).
func rightsFiles(oob []byte, name string) []*os.File {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var files []*os.File
	for i := range msgs {
		fds, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), name))
		}
	}
	return files
}

// takeFiles takes the target's stdio and the tree cgroups' files from the
// front of files and returns the stdio and what is left.
func (st *initState) takeFiles(ws *wireSpec, files []*os.File) (stdio, rest []*os.File, err error) {
	stdio, files = files[:3], files[3:]
	if len(files) < ws.TreeJoins {
		return nil, nil, errors.New("the tree's cgroup files are missing")
	}
	st.treeProcs, files = files[:ws.TreeJoins], files[ws.TreeJoins:]
	return stdio, files, nil
}

// extraFiles places the target's extra files (ws.Extra marks the present
// ones); nothing else may be left.
func extraFiles(ws *wireSpec, files []*os.File) ([]*os.File, error) {
	var extra []*os.File
	for _, present := range ws.Extra {
		var f *os.File
		if present {
			if len(files) == 0 {
				return nil, errors.New("an extra file is missing")
			}
			f, files = files[0], files[1:]
		}
		extra = append(extra, f)
	}
	if len(files) > 0 {
		return nil, fmt.Errorf("%d unexpected descriptors", len(files))
	}
	return extra, nil
}

// primeCodecs encodes and decodes one of each wire type with every nested
// type present, so the reflection caches are built before the spec comes.
func primeCodecs(*initState) error {
	b, err := json.Marshal(wireSpec{Spec: Spec{
		Args: []string{""}, Env: []string{""},
		Files:    []policy.Spec{{}},
		Landlock: &landlock.Ruleset{},
		Net:      Net{Forward: []uint16{1}},
		Rlimits:  []Rlimit{{}},
	}})
	if err != nil {
		return err
	}
	var ws wireSpec
	if err := json.Unmarshal(b, &ws); err != nil {
		return err
	}
	_, err = json.Marshal(message{Report: &Report{Masked: []string{""}}, Exit: &Exit{}})
	return err
}

// primePolicy builds a policy once before the spec comes, so that the
// code and tables loadPolicies needs are loaded while the trampoline waits
// in the pool rather than while a command starts.
func primePolicy(*initState) error {
	_, err := policy.New(policy.Spec{Home: "/", WriteRoots: []string{"/"}, ReadDeny: []string{"*.pem", "/nonexistent/x"}})
	return err
}

// prepareServing makes the supervisor's serving thread and the Ps it
// needs while init waits for a spec: made when the filter is installed,
// they were a millisecond or more of a start here, the target's first
// exec waiting for them in its trap. A sandbox with no supervisor leaves
// the thread waiting until init exits.
//
// Init starts with one P. The serving thread and the reaper spend their
// time in system calls, each holding a P; sysmon takes a P from a system
// call whenever none is idle, and then polls every 20 µs for a while. A
// third P stays idle for them (init's CPU in a tar and git commit of
// 5,000 files: 2.4 s with one P, 2.0 s with three, 1.7 s with the
// serving loop's yields as well). Where execs are judged the target's own
// exec is trapped too, while the thread that forks it holds a P in the
// vfork (a raw system call): the serving thread needs another to answer.
func prepareServing(st *initState) error {
	if runtime.GOMAXPROCS(0) < 3 {
		runtime.GOMAXPROCS(3)
	}
	st.serving = seccomp.Prepare()
	return nil
}

func slaveMounts(st *initState) error {
	// Slave, not private: nothing propagates back to the host, while a
	// mount the host adds later still reaches a trampoline that waits in
	// the pool (where the host's mounts are shared at all).
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return &fs.PathError{Op: "mount", Path: "/", Err: err}
	}
	st.report.Namespaces = []string{"user", "mnt", "pid", "ipc", "uts"}
	if !st.hostNet {
		st.report.Namespaces = append(st.report.Namespaces, "net")
	}
	return nil
}

// mountProc gives the sandbox a /proc of its own pid namespace. The kernel
// refuses it where the host's /proc is partly hidden (some containers);
// then the target sees the host's /proc (it still cannot signal or trace
// outside its Landlock domain) and the supervisor, which names tasks by
// their pid here, is off.
func mountProc(st *initState) error {
	err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	if err != nil {
		st.report.Notes = append(st.report.Notes, "the sandbox shares the host's /proc (mounting a new one failed: "+err.Error()+"); file calls are not judged by the supervisor")
		st.spec.NoSeccomp = true
		return nil
	}
	st.report.Proc = true
	return nil
}

// memfdNoExec sets vm.memfd_noexec to 2 in the sandbox's pid namespace
// (Linux 6.3, a per-namespace sysctl): a memfd is created sealed against
// execution, and asking for an executable one (MFD_EXEC) fails, so no
// program of the sandbox runs code from an anonymous file, whether or not
// the supervisor judges execs (which refuses them too). An older kernel
// has no such sysctl: a note says so.
func memfdNoExec(st *initState) error {
	st.report.MemfdNoExec = st.sysctl("vm.memfd_noexec", "2", "memfds may be executable")
	return nil
}

// sysctl writes value to the sysctl name in the sandbox's own namespaces
// (through the sandbox's /proc) and reports whether it took; where it
// did not, a note starting with risk says why. Without a /proc of the
// sandbox's own it writes nothing: the host's would change.
func (st *initState) sysctl(name, value, risk string) bool {
	if !st.report.Proc {
		return false
	}
	if err := os.WriteFile("/proc/sys/"+strings.ReplaceAll(name, ".", "/"), []byte(value), 0); err != nil {
		st.report.Notes = append(st.report.Notes, risk+": "+name+" cannot be set ("+err.Error()+")")
		return false
	}
	return true
}

// noUserNamespaces sets user.max_user_namespaces to 0 in the sandbox's
// user namespace, so no process of the sandbox can make a user namespace
// of its own. The capabilities the target gives up (dropCapabilities)
// would otherwise come back in a namespace it makes: there it could
// chroot (changing what its names mean) and reach the kernel's
// namespace-only code. Without one, every process of the sandbox keeps
// the root init gave the target; the supervisor relies on that
// (seccomp.Handler.FixedRoot). A kernel that refuses the write leaves a
// note, and the supervisor resolves each call's root as the task's own.
func noUserNamespaces(st *initState) error {
	st.report.NoUserNamespaces = st.sysctl("user.max_user_namespaces", "0", "processes of the sandbox may make user namespaces")
	return nil
}

func loadPolicies(st *initState) error {
	for _, fs := range st.spec.Files {
		p, err := policy.New(fs)
		if err != nil {
			return err
		}
		st.pols = append(st.pols, p)
	}
	return nil
}

func loopback(st *initState) error {
	if st.hostNet {
		return nil
	}
	if err := netfwd.LoopbackUp(); err != nil {
		return err
	}
	st.report.Loopback = true
	return nil
}

// forward serves the loopback ports the policy allows.
func forward(st *initState) error {
	if st.hostNet || len(st.spec.Net.Forward) == 0 {
		return nil
	}
	if st.fwd == nil {
		return errors.New("no forwarding socket")
	}
	ports := make([]netfwd.Port, len(st.spec.Net.Forward))
	for i, p := range st.spec.Net.Forward {
		ports[i] = netfwd.Port{Port: p}
	}
	if _, err := netfwd.Start(st.fwd, ports, st.stop); err != nil {
		return err
	}
	st.report.Forwarded = st.spec.Net.Forward
	if st.spec.Net.Proxy != 0 {
		st.report.Proxy = "127.0.0.1:" + strconv.Itoa(int(st.spec.Net.Proxy))
	}
	return nil
}

// startStage starts the target stage: the host binary again, in a new
// session (so it cannot push input into a terminal it shares with the
// host: TIOCSTI, CVE-2017-5226), in the target's directory, with nothing
// of init's environment.
func startStage(st *initState) error {
	specR, specW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer specR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		specW.Close()
		return err
	}
	defer errW.Close()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		specW.Close()
		errR.Close()
		return err
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "stage"), os.NewFile(uintptr(pair[1]), "stage")
	defer theirs.Close()
	c := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{targetArg0},
		Env:         []string{},
		Dir:         st.spec.Dir,
		Stdin:       st.stdio[0],
		Stdout:      st.stdio[1],
		Stderr:      st.stdio[2],
		ExtraFiles:  append([]*os.File{specR, errW, theirs}, st.extra...),
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := c.Start(); err != nil {
		specW.Close()
		errR.Close()
		mine.Close()
		var pe *fs.PathError
		if errors.As(err, &pe) && st.spec.Dir != "" {
			return &fs.PathError{Op: "chdir", Path: st.spec.Dir, Err: pe.Err}
		}
		return err
	}
	st.targetPid, st.stageErr, st.stageFD = c.Process.Pid, errR, mine
	if st.execs == nil {
		// Not held at its exec: the stage joins the tree's cgroup before
		// it is sent its spec, so the target is born there.
		if err := st.joinTree(c.Process.Pid); err != nil {
			_ = c.Process.Kill()
			specW.Close()
			return &SetupError{Step: "join cgroup", Err: err}
		}
	}
	ts := targetSpec{Spec: st.spec, SeccompReads: st.needsReads()}
	for _, f := range st.extra {
		ts.Extra = append(ts.Extra, f != nil)
	}
	b, err := json.Marshal(&ts)
	if err == nil {
		_, err = specW.Write(b)
	}
	specW.Close()
	return err
}

// needsReads: read-only opens are judged only when some policy has a
// read-deny entry; otherwise the kernel lets them through without a round
// trip.
func (st *initState) needsReads() bool {
	for _, f := range st.spec.Files {
		if len(f.ReadDeny) > 0 {
			return true
		}
	}
	return false
}

// awaitStage takes the stage's report (and its seccomp listener), then
// waits until it exec'd the target or failed.
func awaitStage(st *initState) error {
	defer st.stageFD.Close()
	defer st.stageErr.Close()
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(st.stageFD.Fd()), buf, oob, 0)
	if err == nil && n > 0 {
		var r stageReport
		if err := json.Unmarshal(buf[:n], &r); err == nil {
			st.report.Landlock = r.Landlock
			st.report.Rlimits = r.Rlimits
			st.report.NoCapabilities = r.NoCapabilities
			st.report.Notes = append(st.report.Notes, r.Notes...)
		}
		if oobn > 0 {
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) > 0 {
				if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) > 0 {
					st.listener = fds[0]
					unix.CloseOnExec(fds[0])
				}
			}
		}
	}
	if st.listener >= 0 {
		if err := st.startSupervisor(st.listener); err != nil {
			return err
		}
	}
	// EOF: the stage exec'd the target (its end is close-on-exec); a
	// message: a step failed.
	b, _ := io.ReadAll(io.LimitReader(st.stageErr, 64<<10))
	if len(b) > 0 {
		var m message
		if json.Unmarshal(b, &m) == nil && m.Event == "error" {
			return m.setupErr()
		}
		return errors.New("target stage: " + string(b))
	}
	st.report.Pid = st.targetPid
	return nil
}

// reap reaps every process of the namespace (init inherits orphans) until
// the target exits, and returns how it ended. Whatever is left dies when
// init exits right after: the kernel kills every process of a pid
// namespace whose init ends, and init's exit completes (so the host's
// wait returns) only once they are all gone. Background jobs never outlive
// the target.
func (st *initState) reap() Exit {
	if st.early != nil {
		return exitOf(*st.early)
	}
	for {
		var ws unix.WaitStatus
		var ru syscall.Rusage
		// __WALL: every child and every process the supervisor traces
		// (their ptrace stops are reported here, and handed to it).
		pid, err := syscall.Wait4(-1, (*syscall.WaitStatus)(&ws), unix.WALL, &ru)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return Exit{}
		}
		if st.execs != nil {
			st.execs.stopped(pid, ws)
		}
		if pid == st.targetPid && !ws.Stopped() {
			e := exitOf(ws)
			e.Usage = &ru
			return e
		}
	}
}

func exitOf(ws unix.WaitStatus) Exit {
	if ws.Signaled() {
		return Exit{Code: -1, Signal: ws.Signal()}
	}
	return Exit{Code: ws.ExitStatus()}
}

// targetSpec is what init sends the target stage.
type targetSpec struct {
	Spec
	SeccompReads bool `json:"seccomp_reads,omitempty"`
	// Extra says, per extra file the stage holds from fd 6 on, whether it
	// is there (false: a nil entry, its number closed); they become the
	// target's 3, 4, ...
	Extra []bool `json:"extra,omitempty"`
}

// stageReport is what the target stage tells init just before exec.
type stageReport struct {
	Landlock       landlock.Status `json:"landlock"`
	Rlimits        []string        `json:"rlimits,omitempty"`
	NoCapabilities bool            `json:"no_capabilities"`
	Notes          []string        `json:"notes,omitempty"`
}
