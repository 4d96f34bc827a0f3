//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/internal/benchhook"
	"github.com/auditguard/auditguard/procguard/internal/netfwd"
	"github.com/auditguard/auditguard/procguard/internal/thread"
)

// trampoline argv[0]s: the host binary re-executed as the sandbox's init
// (pid 1) or, where ptrace is refused, as the target's last stage (see
// trampoline_linux.go).
const (
	initArg0   = "auditguard-sandbox-init"
	targetArg0 = "auditguard-sandbox-exec"
)

// fds of the trampoline: 0-2 the null device, then the control socket
// (spec and the target's descriptors) and the status stream.
const (
	fdCtl    = 3
	fdStatus = 4
)

var (
	keeperOnce sync.Once
	keeper     *thread.Keeper
)

// spawn runs fn on a thread that lives as long as the host: the
// trampoline's parent-death signal is tied to the thread that forked it
// (golang/go#27505), so a thread that exits would kill a healthy sandbox.
func spawn(fn func()) {
	keeperOnce.Do(func() { keeper = thread.NewKeeper(4) })
	keeper.Do(fn)
}

// trampoline is a sandbox init that is running, in its namespaces, and
// waits for the spec of the command it will run.
type trampoline struct {
	proc    *os.Process
	ctl     *os.File // host end of the control socket
	statusR *os.File
	hostNet bool
	// viaSpawner: the spawner cloned it (spawner_linux.go), not the host.
	viaSpawner bool

	ready    chan struct{} // closed when init said "ready" (or failed, or died)
	notReady *message      // set before ready closes when init failed or died instead
	// settled is closed when init said "settled": the work it does while
	// it waits (growHeap) is over, or was cut short by a spec. Closed
	// too when the status stream ends.
	settled chan struct{}
	msgs    chan message // the status stream after "ready"
	readers sync.WaitGroup
	exit    *Exit         // from the stream's "exit" message; read after readers.Wait
	session atomic.Bool   // init keeps the sandbox after an "exit" (Session); set before the spec is sent
	exits   chan *Exit    // a session's "exit" messages
	last    atomic.Bool   // a session's sandbox ends with its command (message.Last)
	gone    chan struct{} // closed when the status stream ended
	// The forwarders of the sandbox's loopback ports (a session's outlive
	// each command), and a session's host end of the socket its later
	// commands go on.
	fwdCancel context.CancelFunc
	fwd       sync.WaitGroup
	next      *os.File
	crash     []byte                               // lines of the stream that are not messages: init's runtime dying
	held      []fileID                             // what the sandbox's mounts and rules hold (held_linux.go)
	judge     atomic.Pointer[func(*FileCall) bool] // the command's Spec.Judge
	judgeX    atomic.Pointer[func(*ExecCall) bool] // the command's Spec.JudgeExec
}

// newTrampoline re-executes the host binary as a sandbox init. It returns
// once the init exists; its runtime and the set-up that needs no spec
// (mounts made slaves, /proc, loopback) go on without the host.
func newTrampoline(hostNet bool) (*trampoline, error) {
	f, err := newInitFiles()
	if err != nil {
		return nil, err
	}
	var proc *os.Process
	viaSpawner := false
	if sp := theSpawner(); sp != nil {
		var ce *cloneError
		proc, err = sp.start(hostNet, f.ctlIn, f.statusW)
		if testHookSpawnerReply != nil && err == nil {
			err = testHookSpawnerReply(proc)
		}
		switch {
		case err == nil:
			viaSpawner = true
			spawned()
		case errors.As(err, &ce):
			// It cloned nothing: the host's own clone takes these files.
		default:
			// It may have cloned a trampoline on these files before it
			// failed to answer: that one must not share the control
			// socket with the host's own, which it would take the spec
			// from, leaving the host waiting on an init that waits for a
			// spec. The host's own clone gets files of its own; the
			// other reads EOF once these are closed, and exits.
			proc = nil
			dropSpawner(sp)
			f.close()
			if f, err = newInitFiles(); err != nil {
				return nil, err
			}
		}
	}
	if proc == nil {
		spawn(func() { proc, err = startInit(hostNet, f.ctlIn, f.statusW, false) })
	}
	f.ctlIn.Close()
	f.statusW.Close()
	if err != nil {
		f.ctl.Close()
		f.statusR.Close()
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EUSERS) {
			return nil, fmt.Errorf("%w: cannot create user namespaces: %v", ErrUnavailable, err)
		}
		return nil, &SetupError{Step: "clone", Path: "/proc/self/exe", Err: err}
	}
	t := &trampoline{proc: proc, ctl: f.ctl, statusR: f.statusR, hostNet: hostNet, viaSpawner: viaSpawner,
		ready: make(chan struct{}), settled: make(chan struct{}), msgs: make(chan message, 4), exits: make(chan *Exit, 1), gone: make(chan struct{})}
	// Blocking reads (Fd puts the pipe in blocking mode): the reader's
	// thread wakes as soon as init writes, without a hop through the
	// runtime's poller. A child's exec waits for the host's answer to each
	// "exec" line, so this wake-up is on every program a command starts.
	_ = t.statusR.Fd()
	t.readers.Add(1)
	go t.readStatus()
	return t, nil
}

// initFiles are a trampoline's control socket and status pipe: the
// host's ends and init's.
type initFiles struct {
	ctl, ctlIn, statusR, statusW *os.File
}

func newInitFiles() (initFiles, error) {
	ctl, ctlIn, err := socketPair("sandbox-ctl", unix.SOCK_STREAM)
	if err != nil {
		return initFiles{}, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		ctl.Close()
		ctlIn.Close()
		return initFiles{}, err
	}
	return initFiles{ctl, ctlIn, statusR, statusW}, nil
}

func (f initFiles) close() {
	for _, x := range []*os.File{f.ctl, f.ctlIn, f.statusR, f.statusW} {
		x.Close()
	}
}

// testHookSpawnerReply, when set, sees each trampoline the spawner made
// for newTrampoline; an error it returns stands for the spawner's answer
// lost after the clone.
var testHookSpawnerReply func(*os.Process) error

// startInit re-executes the host binary as a sandbox init in new
// namespaces, with ctl and status as its descriptors 3 and 4. The host
// calls it on a keeper thread (spawn); the spawner calls it with parent
// set, and the init is then the host's child (CLONE_PARENT), its
// parent-death signal tied to the host thread that started the spawner.
func startInit(hostNet bool, ctl, status *os.File, parent bool) (*os.Process, error) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	uid, gid := os.Getuid(), os.Getgid()
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if !hostNet {
		flags |= unix.CLONE_NEWNET
	}
	if parent {
		flags |= unix.CLONE_PARENT
	}
	attr := &os.ProcAttr{
		Dir: "/",
		// Not nil, which would hand the trampoline the host's environment.
		// One P: init mostly waits, and fewer threads start faster.
		Env:   []string{"GOMAXPROCS=1"},
		Files: []*os.File{null, null, null, ctl, status},
		Sys: &syscall.SysProcAttr{
			Cloneflags: flags,
			// The child keeps the host's uid and gid, seen from inside too.
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			Pdeathsig:                  syscall.SIGKILL,
			Setpgid:                    true,
		},
	}
	args := []string{initArg0}
	if hostNet {
		args = append(args, hostNetArg)
	}
	return os.StartProcess("/proc/self/exe", args, attr)
}

// readStatus turns the status stream into messages; "ready" closes
// t.ready, the exit message is kept for Exit.
func (t *trampoline) readStatus() {
	defer t.readers.Done()
	defer close(t.gone)
	defer close(t.msgs)
	saidReady := false
	readyOnce := sync.OnceFunc(func() { close(t.ready) })
	settledOnce := sync.OnceFunc(func() { close(t.settled) })
	defer func() {
		if !saidReady && t.notReady == nil {
			t.notReady = &message{Event: "eof"}
		}
		readyOnce()
		settledOnce()
	}()
	sc := bufio.NewScanner(t.statusR)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var m message
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			if len(t.crash) < maxCrash {
				t.crash = append(append(t.crash, sc.Bytes()...), '\n')
			}
			continue
		}
		switch m.Event {
		case "ready":
			saidReady = true
			readyOnce()
			continue
		case "settled":
			settledOnce()
			continue
		case "exit":
			t.exit = m.Exit
			if t.session.Load() && m.Exit != nil {
				if m.Last {
					t.last.Store(true)
				}
				t.exits <- m.Exit // one command at a time: its Wait takes it
			}
			continue
		case "file":
			t.answer(m.File)
			continue
		case "exec":
			t.answerExec(m.Exec, true)
			continue
		case "exec-changed":
			t.answerExec(m.Exec, false)
			continue
		case "exec-repeats":
			for _, ec := range m.Execs {
				t.answerExec(ec, false)
			}
			continue
		}
		if !saidReady && t.notReady == nil {
			t.notReady = &m
			readyOnce()
		}
		select {
		case t.msgs <- m:
		default: // nobody waits any more (Start returned)
		}
	}
}

// answer asks the command's Judge about a refused file call and writes
// the judgement to init. Without a Judge (or a file call) the refusal
// stands.
func (t *trampoline) answer(fc *FileCall) {
	if fc == nil {
		return
	}
	allow := false
	if j := t.judge.Load(); j != nil {
		allow = (*j)(fc) && fc.Reason == ""
	}
	b, err := json.Marshal(judgement{ID: fc.ID, Allow: allow})
	if err != nil {
		return
	}
	_, _ = t.ctl.Write(append(b, '\n'))
}

// answerExec asks the command's JudgeExec about a program a process of
// the sandbox starts and, when reply is set, writes the judgement to
// init. Without a JudgeExec the exec is refused.
func (t *trampoline) answerExec(ec *ExecCall, reply bool) {
	if ec == nil {
		return
	}
	allow := false
	if j := t.judgeX.Load(); j != nil {
		allow = (*j)(ec) && ec.Reason == "" && !ec.Changed
	}
	if !reply {
		return
	}
	b, err := json.Marshal(judgement{ID: ec.ID, Allow: allow, Cache: allow && ec.Cacheable})
	if err != nil {
		return
	}
	_, _ = t.ctl.Write(append(b, '\n'))
}

// alive reports whether the trampoline still runs (it has not been waited
// for, so it is at worst a zombie).
func (t *trampoline) alive() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, t.proc.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo == 0
}

// discard kills and reaps an unused trampoline.
func (t *trampoline) discard() {
	_ = t.proc.Kill()
	_, _ = t.proc.Wait()
	t.close()
}

// The pool keeps one trampoline of each kind (own network or host
// network) ready once a kind has been used, so a command finds its
// sandbox's namespaces made and its init's runtime up: the re-execution
// of the host binary, most of a start's cost, happens between commands.
// A ready trampoline is an idle process; it dies with the host.
var pool struct {
	sync.Mutex
	ready [2]*trampoline
	// filling is closed when the refill of a kind under way has put its
	// trampoline in the pool (or failed); nil when none is under way.
	filling [2]chan struct{}
	off     bool
}

func kindOf(hostNet bool) int {
	if hostNet {
		return 1
	}
	return 0
}

// take returns a ready trampoline of the kind, or the one a refill under
// way is making (its re-execution has a head start on a new one, and two
// made at once share the CPU), or starts one.
func take(hostNet bool) (*trampoline, error) {
	k := kindOf(hostNet)
	pool.Lock()
	t := pool.ready[k]
	pool.ready[k] = nil
	filling := pool.filling[k]
	pool.Unlock()
	if t == nil && filling != nil {
		<-filling
		pool.Lock()
		t = pool.ready[k]
		pool.ready[k] = nil
		pool.Unlock()
	}
	if t != nil && !t.alive() {
		t.discard()
		t = nil
	}
	if t != nil {
		return t, nil
	}
	return newTrampoline(hostNet)
}

func refill(hostNet bool) {
	k := kindOf(hostNet)
	pool.Lock()
	if pool.ready[k] != nil || pool.filling[k] != nil || pool.off {
		pool.Unlock()
		return
	}
	done := make(chan struct{})
	pool.filling[k] = done
	pool.Unlock()
	t, err := newTrampoline(hostNet)
	pool.Lock()
	defer pool.Unlock()
	defer close(done)
	pool.filling[k] = nil
	if err != nil {
		return // the next take starts one itself and reports the error
	}
	if pool.ready[k] != nil || pool.off {
		go t.discard()
		return
	}
	pool.ready[k] = t
}

// Prewarm makes sure a ready trampoline of the kind (hostNet: sharing the
// host's network) waits in the pool and returns once its init is ready
// and has done what it does while it waits (it grows its heap), or with
// the set-up error that stopped it. Hosts call it at start-up to pay the
// first sandbox's cost early.
func Prewarm(hostNet bool) error {
	k := kindOf(hostNet)
	pool.Lock()
	t := pool.ready[k]
	pool.Unlock()
	if t == nil {
		var err error
		if t, err = newTrampoline(hostNet); err != nil {
			return err
		}
		pool.Lock()
		if pool.ready[k] != nil || pool.off {
			pool.Unlock()
			t.discard()
			pool.Lock()
		} else {
			pool.ready[k] = t
		}
		t = pool.ready[k]
		pool.Unlock()
		if t == nil {
			return nil // the pool is off
		}
	}
	<-t.ready
	m := t.notReady
	if m == nil {
		// Ready; what init does while it waits is part of paying the
		// cost early, and must not run into the host's next work.
		<-t.settled
		return nil
	}
	// It failed (m is its error) or died. Discard it unless a Start took
	// it meanwhile; that Start reports the same failure.
	pool.Lock()
	mine := pool.ready[k] == t
	if mine {
		pool.ready[k] = nil
	}
	pool.Unlock()
	if mine {
		t.discard()
	}
	if m.Event == "error" {
		return m.setupErr()
	}
	return &SetupError{Step: "trampoline", Err: errors.New("exited before it was ready")}
}

// SetPrewarm turns the pool of ready trampolines on (the default) or off;
// off also ends the ready ones. Hosts that start one command and exit, and
// tests that count processes or descriptors, turn it off. It sets
// recycling (SetRecycle) the same way.
func SetPrewarm(on bool) {
	pool.Lock()
	pool.off = !on
	var idle []*trampoline
	if !on {
		for k, t := range pool.ready {
			if t != nil {
				idle = append(idle, t)
				pool.ready[k] = nil
			}
		}
	}
	pool.Unlock()
	SetRecycle(on)
	for _, t := range idle {
		t.discard()
	}
	if !on {
		stopSpawner()
	}
}

// Launch is one sandboxed command, seen from the host: made by Start,
// finished by Wait.
type Launch struct {
	// Process is the sandbox's init (pid 1 inside). It passes the signals
	// a host uses to stop or notify a command (TERM, INT, HUP, QUIT, USR1,
	// USR2, WINCH, CONT) on to the target; SIGKILL ends it, and its end is
	// the end of every process in the sandbox. StartRecycled's is a
	// handle of the command's own, which Wait releases.
	Process *os.Process
	// Report is what the sandbox enforced.
	Report *Report

	t    *trampoline
	s    *Session // the session whose sandbox runs it, if any
	exit *Exit
	// recycled: started by StartRecycled in s (Wait makes its state);
	// took: s's sandbox was taken from the pool for it (a recycled
	// one's Wait refills the pool).
	recycled, took bool

	waitDelay time.Duration
	copiers   sync.WaitGroup
	copyErr   error
	copyMu    sync.Mutex
	hostEnds  []*os.File // pipe ends copied by the host; closed after Wait
}

// Start runs spec's target in a sandbox and returns once it runs, or with
// a *SetupError when the sandbox could not be built (nothing of the
// target ran then, and nothing is left to Wait for), or an error wrapping
// ErrUnavailable when this host cannot make sandboxes. join, when set,
// runs with the init's pid before the target is started (cgroup
// placement). dial serves forwarded ports.
func Start(ctx context.Context, spec *Spec, stdio Stdio, join func(pid int) error, dial Dialer) (*Launch, error) {
	if err := checkFloor(spec); err != nil {
		return nil, err
	}
	t, err := take(spec.Net.Host)
	if err != nil {
		return nil, err
	}
	return start(ctx, t, spec, stdio, join, dial, nil)
}

// start sends spec to the ready trampoline t and waits for its target to
// start. With s, the sandbox becomes s's: init keeps it for the session's
// later commands (Session.Start), forwarded ports are served with the
// dialer of the command that runs at the time.
func start(ctx context.Context, t *trampoline, spec *Spec, stdio Stdio, join func(pid int) error, dial Dialer, s *Session) (*Launch, error) {
	l := &Launch{Process: t.proc, t: t, waitDelay: stdio.WaitDelay, s: s}
	if join != nil {
		if err := join(t.proc.Pid); err != nil {
			return l.fail(&SetupError{Step: "join cgroup", Err: err})
		}
	}
	l.setJudges(spec)
	files, err := l.stdioFiles(stdio)
	ws := wireSpec{Spec: *spec, ForceStage: forceStage, CollectAtFirst: collectAtFirst, CollectAtFork: collectAtFork, TrapFloor: spec.trapFloor}
	ws.AskHost, ws.ExecJudged = hostSwitches(spec)
	if err == nil {
		files, err = treeFiles(spec, &ws, files)
	}
	var fwdHost, fwdIn *os.File
	if err == nil && len(spec.Net.Forward) > 0 && !spec.Net.Host {
		if fwdHost, fwdIn, err = netfwd.Pair(); err == nil {
			files = append(files, fwdIn)
			ws.Forwarder = true
		}
	}
	if err == nil && s != nil {
		t.held = ruleIDs(spec)
		var next *os.File
		if t.next, next, err = socketPair("sandbox-session", unix.SOCK_STREAM); err == nil {
			files = append(files, next)
			ws.Session = true
			t.session.Store(true)
		}
	}
	if err == nil {
		files, err = appendExtra(stdio, &ws, files)
	}
	if err == nil {
		err = sendSpec(t.ctl, &ws, files)
	}
	for _, f := range files {
		f.Close() // the sandbox has its copies
	}
	if err != nil {
		if fwdHost != nil {
			fwdHost.Close()
		}
		return l.fail(&SetupError{Step: "send spec", Err: err})
	}
	if fwdHost != nil {
		fctx, cancel := context.WithCancel(context.Background())
		t.fwdCancel = cancel
		t.fwd.Add(1)
		go func() {
			defer t.fwd.Done()
			defer fwdHost.Close()
			_ = netfwd.Host(fctx, fwdHost, dial)
		}()
	}
	return l.started(ctx)
}

// setJudges makes spec's Judge and JudgeExec the ones the trampoline asks
// from now on.
func (l *Launch) setJudges(spec *Spec) {
	if spec.Judge != nil {
		l.t.judge.Store(&spec.Judge)
	} else {
		l.t.judge.Store(nil)
	}
	if spec.JudgeExec != nil {
		l.t.judgeX.Store(&spec.JudgeExec)
	} else {
		l.t.judgeX.Store(nil)
	}
}

// treeFiles appends copies of spec's tree cgroup files to files.
func treeFiles(spec *Spec, ws *wireSpec, files []*os.File) ([]*os.File, error) {
	for _, f := range spec.TreeCgroups {
		d, err := dupFile(f)
		if err != nil {
			return files, err
		}
		files = append(files, d)
		ws.TreeJoins++
	}
	return files, nil
}

// appendExtra appends copies of stdio's extra files to files, marking in
// ws which are there.
func appendExtra(stdio Stdio, ws *wireSpec, files []*os.File) ([]*os.File, error) {
	for _, f := range stdio.ExtraFiles {
		ws.Extra = append(ws.Extra, f != nil)
		if f != nil {
			d, err := dupFile(f)
			if err != nil {
				return files, err
			}
			files = append(files, d)
		}
	}
	return files, nil
}

// socketPair returns the two ends of a new unix socket pair of type typ
// (SOCK_STREAM, or SOCK_SEQPACKET where each write is one message).
func socketPair(name string, typ int) (*os.File, *os.File, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	return os.NewFile(uintptr(pair[0]), name), os.NewFile(uintptr(pair[1]), name), nil
}

// fail ends a start that went wrong after the trampoline was taken: it
// kills and reaps it (and with it anything it started) and returns err;
// the caller must not Wait.
func (l *Launch) fail(err error) (*Launch, error) {
	_ = l.t.proc.Kill()
	if l.waitDelay <= 0 {
		l.waitDelay = time.Second
	}
	_, _ = l.Wait()
	return nil, err
}

// started waits for init to say the target started (or why it did not).
func (l *Launch) started(ctx context.Context) (*Launch, error) {
	t := l.t
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case m, ok := <-t.msgs:
		switch {
		case !ok:
			return l.fail(&SetupError{Step: "trampoline", Err: errors.New("exited before the target started")})
		case m.Event == "error":
			return l.fail(m.setupErr())
		case m.Event != "started" || m.Report == nil:
			return l.fail(&SetupError{Step: "trampoline", Err: fmt.Errorf("unexpected message %q", m.Event)})
		}
		l.Report = m.Report
		t.held = append(t.held, m.Held...)
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", t.proc.Pid)); err == nil {
			l.Report.PidNamespace = ns
		}
		return l, nil
	case <-ctx.Done():
		return l.fail(ctx.Err())
	case <-timer.C:
		return l.fail(&SetupError{Step: "trampoline", Err: fmt.Errorf("no answer within %v (%s)", startTimeout, taskStates(t.proc.Pid))})
	}
}

// startTimeout bounds the sandbox's set-up; it is far above the few
// milliseconds a start takes, and only a wedged kernel call reaches it.
const startTimeout = 30 * time.Second

// sendSpec hands the trampoline the target's descriptors (stdin, stdout,
// stderr, ws.TreeJoins tree cgroup.procs files, the forwarding socket if
// ws.Forwarder, the session's socket if ws.Session, then the extra files
// ws.Extra marks present) with an 8-byte length, then the spec as JSON of
// that length.
func sendSpec(ctl *os.File, ws *wireSpec, files []*os.File) error {
	b, err := json.Marshal(ws)
	if err != nil {
		return err
	}
	if len(ws.Extra) > maxExtraFiles {
		return fmt.Errorf("%d extra files: at most %d cross into the sandbox", len(ws.Extra), maxExtraFiles)
	}
	if len(files) > maxSpecFiles {
		return fmt.Errorf("%d descriptors: at most %d go with a spec", len(files), maxSpecFiles)
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	var hdr [8]byte
	binary.LittleEndian.PutUint64(hdr[:], uint64(len(b)))
	if err := unix.Sendmsg(int(ctl.Fd()), hdr[:], unix.UnixRights(fds...), nil, 0); err != nil {
		return os.NewSyscallError("sendmsg", err)
	}
	_, err = ctl.Write(b)
	return err
}

// wireSpec is what travels to init: the spec, which descriptors came
// with it, and switches tests use (the slow way through a target stage;
// allocations that start collections while the target's first exec is
// judged).
type wireSpec struct {
	Spec
	TreeJoins      int    `json:"tree_joins,omitempty"` // how many tree cgroup files follow stdio
	Session        bool   `json:"session,omitempty"`    // the session's socket follows the forwarding socket
	Forwarder      bool   `json:"forwarder,omitempty"`  // the forwarding socket follows stdio
	Extra          []bool `json:"extra,omitempty"`      // per extra file: sent (true) or nil
	ForceStage     bool   `json:"force_stage,omitempty"`
	CollectAtFirst bool   `json:"collect_at_first,omitempty"`
	CollectAtFork  bool   `json:"collect_at_fork,omitempty"`
	TrapFloor      bool   `json:"trap_floor,omitempty"` // Spec.trapFloor
}

// maxExtraFiles bounds the descriptors one spec may carry (SCM_RIGHTS
// takes at most 253 per message).
const maxExtraFiles = 200

// maxSpecFiles bounds all the descriptors of one spec: stdio, a cgroup.procs
// per controller (freezer, v2, pids, memory), the forwarding and session
// sockets, and the extra files. recvSpec makes room for as many.
const maxSpecFiles = 3 + 4 + 2 + maxExtraFiles

// forceStage makes init start the target through the target stage, as it
// does where the kernel refuses ptrace; set by tests only.
var forceStage bool

// hostSwitches are the spec's parts Start derives from its callbacks:
// whether init asks the host about refusals (Judge or JudgeExec set) and
// whether it traps execs for JudgeExec.
func hostSwitches(spec *Spec) (askHost, execJudged bool) {
	return spec.Judge != nil || spec.JudgeExec != nil, spec.JudgeExec != nil && !spec.NoSeccomp
}

// checkFloor refuses a trap floor spec (Spec.trapFloor) with rlimits or
// tree cgroups: init applies them while it holds the target's first exec,
// which a floor's supervisor lets go unread.
func checkFloor(spec *Spec) error {
	if spec.trapFloor && (len(spec.Rlimits) > 0 || len(spec.TreeCgroups) > 0) {
		return &SetupError{Step: "spec", Err: errors.New("a trap floor sandbox takes no rlimits or tree cgroups")}
	}
	return nil
}

func init() {
	// The benchmark table's floor sides (see Spec.trapFloor).
	benchhook.TrapFloor = func(spec any) { spec.(*Spec).trapFloor = true }
}

// collectAtFirst makes init's supervisor allocate enough to start garbage
// collections while it judges the target's first exec; set by tests only.
var collectAtFirst bool

// collectAtFork makes init force collections under gcMu, as growHeap
// does, from before the target's fork is due until 50 ms later; set by
// tests only.
var collectAtFork bool

// stdioFiles returns the descriptors the target gets as 0, 1 and 2,
// starting a copier for each stream that is not a file.
func (l *Launch) stdioFiles(s Stdio) ([]*os.File, error) {
	var files []*os.File
	fail := func(err error) ([]*os.File, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	// stdin
	switch r := s.Stdin.(type) {
	case nil:
		f, err := os.Open(os.DevNull)
		if err != nil {
			return fail(err)
		}
		files = append(files, f)
	case *os.File:
		f, err := dupFile(r)
		if err != nil {
			return fail(err)
		}
		files = append(files, f)
	default:
		pr, pw, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		files = append(files, pr)
		l.hostEnds = append(l.hostEnds, pw)
		l.copiers.Add(1)
		go func() {
			defer l.copiers.Done()
			_, err := io.Copy(pw, r)
			if errors.Is(err, unix.EPIPE) || errors.Is(err, os.ErrClosed) {
				err = nil // the target stopped reading, as exec.Cmd treats it
			}
			l.noteCopyErr(err)
			pw.Close()
		}()
	}
	var shared *os.File // stdout's pipe, reused when stderr is the same writer
	for i, w := range []io.Writer{s.Stdout, s.Stderr} {
		switch v := w.(type) {
		case nil:
			f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				return fail(err)
			}
			files = append(files, f)
			continue
		case *os.File:
			f, err := dupFile(v)
			if err != nil {
				return fail(err)
			}
			files = append(files, f)
			continue
		}
		if i == 1 && shared != nil && sameWriter(s.Stdout, s.Stderr) {
			f, err := dupFile(shared)
			if err != nil {
				return fail(err)
			}
			files = append(files, f)
			continue
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		files = append(files, pw)
		shared = pw
		l.hostEnds = append(l.hostEnds, pr)
		l.copiers.Add(1)
		go func() {
			defer l.copiers.Done()
			_, err := io.Copy(w, pr)
			if errors.Is(err, os.ErrClosed) {
				err = nil // closed by Wait after WaitDelay; reported there
			}
			l.noteCopyErr(err)
		}()
	}
	return files, nil
}

// sameWriter reports whether stdout and stderr are one comparable writer,
// which exec.Cmd also feeds through one pipe.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() { _ = recover() }() // incomparable dynamic types
	return a == b
}

// dupFile duplicates f (close-on-exec), so closing the copy after the
// send leaves the caller's file alone.
func dupFile(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

func (l *Launch) noteCopyErr(err error) {
	if err == nil {
		return
	}
	l.copyMu.Lock()
	if l.copyErr == nil {
		l.copyErr = err
	}
	l.copyMu.Unlock()
}

// Wait waits for the sandbox to end (its init, and with it every process
// in it), then for the copying of the target's streams, as exec.Cmd.Wait
// does: at most WaitDelay after the end, then the pipes are closed and
// exec.ErrWaitDelay is returned if nothing else went wrong. A target that
// exited non-zero gives an *exec.ExitError.
//
// A session's command (Session.Start) ends when its target has ended and
// init has killed what it left; init and its sandbox go on. Its Wait
// returns a nil *os.ProcessState (no process of the host's ended) and,
// for a target that failed, an *ExitError. If the sandbox itself ended
// first (killed, or ErrInitDied), Wait returns init's state and error as
// for a command of its own, and the session starts its next command in a
// new sandbox.
//
// A goroutine copying from a Stdin that never returns from Read is left
// behind after WaitDelay, as exec.Cmd leaves it.
func (l *Launch) Wait() (*os.ProcessState, error) {
	var state *os.ProcessState
	var err error
	if l.s != nil {
		// A session's command ends with init's word; init goes on.
		if l.exit = l.awaitExit(); l.exit == nil {
			state, err = l.t.proc.Wait() // the session's sandbox ended
		} else if l.recycled {
			state = exitState(l.t.proc.Pid, l.exit)
		}
	} else {
		state, err = l.Process.Wait()
	}
	copied := make(chan struct{})
	go func() {
		l.copiers.Wait()
		close(copied)
	}()
	late := false
	if l.waitDelay > 0 {
		timer := time.NewTimer(l.waitDelay)
		select {
		case <-copied:
		case <-timer.C:
			late = true
		}
		timer.Stop()
	} else {
		<-copied
	}
	for _, f := range l.hostEnds {
		f.Close()
	}
	if l.s != nil {
		if l.recycled {
			_ = l.Process.Release() // its Kill must not reach the next command
		}
		// A recycled sandbox is kept only where the supervisor holds
		// every name: its masks and binds cover the names that existed
		// when it was built.
		l.s.finished(l.exit == nil || l.t.last.Load() || l.recycled && (l.Report == nil || !l.Report.Seccomp))
		if l.recycled && l.took {
			go refill(l.t.hostNet)
		}
	} else {
		l.t.stopForwarding()
		l.t.close()
		l.exit = l.t.exit
		// The next command's trampoline starts once this one is over, so
		// its start-up competes with neither this command's set-up nor its
		// run.
		go refill(l.t.hostNet)
	}
	l.copyMu.Lock()
	copyErr := l.copyErr
	l.copyMu.Unlock()
	switch {
	case err != nil:
	case state == nil && (l.exit.Code != 0 || l.exit.Signal != 0):
		err = &ExitError{Exit: *l.exit}
	case state != nil && l.exit == nil && state.Exited():
		// Not killed, yet it never said how the target ended.
		err = initDied(state, l.t.crash)
	case state != nil && !state.Success():
		err = &exec.ExitError{ProcessState: state}
	case copyErr != nil:
		err = copyErr
	case late:
		err = exec.ErrWaitDelay
	}
	return state, err
}

// awaitExit waits for init to say how a session's command ended; nil when
// the sandbox ended first (killed, or init died).
func (l *Launch) awaitExit() *Exit {
	select {
	case e := <-l.t.exits:
		return e
	case <-l.t.gone:
		select {
		case e := <-l.t.exits:
			return e
		default:
			return nil
		}
	}
}

// stopForwarding ends the sandbox's port forwarders and waits for them.
func (t *trampoline) stopForwarding() {
	if t.fwdCancel != nil {
		t.fwdCancel()
	}
	t.fwd.Wait()
}

// close closes the host's ends of a trampoline that has been reaped and
// waits for its status reader.
func (t *trampoline) close() {
	t.ctl.Close()
	t.readers.Wait()
	t.statusR.Close()
}

// maxCrash bounds what is kept of init's dying words.
const maxCrash = 8 << 10

// initDied is ErrInitDied with init's status and the first line of what
// its runtime wrote as it died.
func initDied(state *os.ProcessState, crash []byte) error {
	for line := range bytes.Lines(crash) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return fmt.Errorf("%w (%v): %.200s", ErrInitDied, state, line)
		}
	}
	return fmt.Errorf("%w (%v)", ErrInitDied, state)
}

// Exit says how the target ended, after Wait: nil when the sandbox died
// before it could tell (killed by a timeout or cancel, or init died:
// ErrInitDied).
func (l *Launch) Exit() *Exit { return l.exit }

// taskStates says where the threads of process pid and of its children
// wait ("wchan/syscall" and a count), for an error about a sandbox that
// stopped answering: the one clue left once it is killed.
func taskStates(pid int) string {
	var parts []string
	var children []string
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	counts := map[string]int{}
	var order []string
	for _, task := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s/", pid, task.Name())
		k := waitsIn(dir)
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
		if b, err := os.ReadFile(dir + "children"); err == nil {
			children = append(children, strings.Fields(string(b))...)
		}
	}
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%s x%d", k, counts[k]))
	}
	out := fmt.Sprintf("init %d threads: %s", pid, strings.Join(parts, ", "))
	for _, c := range children {
		dir := "/proc/" + c + "/"
		cmd, _ := os.ReadFile(dir + "cmdline")
		name, _, _ := strings.Cut(string(cmd), "\x00")
		out += fmt.Sprintf("; child %s %s %s", c, name, waitsIn(dir))
	}
	if len(out) > 600 {
		out = out[:600] + "..."
	}
	return out
}

// waitsIn says where the task whose /proc directory is dir waits:
// "wchan/syscall number".
func waitsIn(dir string) string {
	wchan, _ := os.ReadFile(dir + "wchan")
	sc, _ := os.ReadFile(dir + "syscall")
	nr, _, _ := strings.Cut(strings.TrimSpace(string(sc)), " ")
	return string(wchan) + "/" + nr
}
