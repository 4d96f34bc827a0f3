//go:build linux

package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/procguard/internal/netfwd"
	"github.com/auditguard/auditguard/procguard/internal/thread"
)

// Launch is one sandboxed start, seen from the host. Make it with Command,
// start it with Start, and after the exec.Cmd's Wait call Finish.
type Launch struct {
	spec *Spec

	specW   *os.File // host end of the spec pipe
	specR   *os.File // the trampoline's end (closed after start)
	statusR *os.File // host end of the status stream
	statusW *os.File
	fwdHost *os.File // host end of the forwarding socket, nil without forwards
	fwdIn   *os.File

	msgs    chan message
	readers sync.WaitGroup
	cancel  context.CancelFunc

	// Report is what the sandbox enforced; set by Start.
	Report *Report
	exit   *Exit
}

// Dialer dials a loopback address on behalf of a sandboxed child; it must
// decide with the policy first. Used only when the spec forwards ports.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// trampoline argv[0]s: the host binary re-executed as the sandbox's init
// (pid 1) or as the target's last stage (see trampoline_linux.go).
const (
	initArg0   = "auditguard-sandbox-init"
	targetArg0 = "auditguard-sandbox-exec"
)

// fds of the trampoline: 0-2 stdio, then these (exec.Cmd.ExtraFiles order).
const (
	fdSpec   = 3
	fdStatus = 4
	fdFwd    = 5
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

// Command turns x, whose stdio, WaitDelay and cgroup attachment the caller
// has set, into a start of the sandbox trampoline for spec. x.Path, Args,
// Env, Dir and ExtraFiles are replaced: the target's own are in spec.
func Command(x *exec.Cmd, spec *Spec) (*Launch, error) {
	l := &Launch{spec: spec, msgs: make(chan message, 4)}
	var err error
	if l.specR, l.specW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if l.statusR, l.statusW, err = os.Pipe(); err != nil {
		l.closeAll()
		return nil, err
	}
	files := []*os.File{l.specR, l.statusW}
	if len(spec.Net.Forward) > 0 && !spec.Net.Host {
		if l.fwdHost, l.fwdIn, err = netfwd.Pair(); err != nil {
			l.closeAll()
			return nil, err
		}
		files = append(files, l.fwdIn)
	}
	x.Path = "/proc/self/exe"
	x.Args = []string{initArg0}
	x.Env = []string{} // not nil: nil would hand the trampoline the host's environment
	x.Dir = "/"
	x.ExtraFiles = files
	a := x.SysProcAttr
	if a == nil {
		a = &syscall.SysProcAttr{}
		x.SysProcAttr = a
	}
	uid, gid := os.Getuid(), os.Getgid()
	a.Cloneflags |= unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS
	if !spec.Net.Host {
		a.Cloneflags |= unix.CLONE_NEWNET
	}
	// The child keeps the host's uid and gid, seen from inside too.
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	a.Pdeathsig = syscall.SIGKILL
	a.Setpgid = true
	return l, nil
}

// Start starts x (made by Command) and returns once the target runs, or
// with a *SetupError when the sandbox could not be built (nothing of the
// target ran then, and nothing is left to Wait for). join, when set, runs with the trampoline's pid before
// the trampoline may go on (cgroup v1 placement): the trampoline waits for
// its spec, which is sent only after join. dial serves forwarded ports.
func (l *Launch) Start(ctx context.Context, x *exec.Cmd, join func(pid int) error, dial Dialer) error {
	var startErr error
	spawn(func() { startErr = x.Start() })
	l.specR.Close()
	l.statusW.Close()
	if l.fwdIn != nil {
		l.fwdIn.Close()
	}
	if startErr != nil {
		l.closeAll()
		if errors.Is(startErr, unix.EPERM) || errors.Is(startErr, unix.ENOSPC) || errors.Is(startErr, unix.EINVAL) || errors.Is(startErr, unix.EUSERS) {
			return fmt.Errorf("%w: cannot create user namespaces: %v", ErrUnavailable, startErr)
		}
		return &SetupError{Step: "clone", Path: "/proc/self/exe", Err: startErr}
	}
	l.readers.Add(1)
	go l.readStatus()
	// A failure after the clone kills and reaps the trampoline (and with
	// it anything it started) before returning: the caller must not Wait.
	fail := func(err error) error {
		_ = x.Process.Kill()
		l.specW.Close()
		_ = x.Wait()
		l.Finish()
		return err
	}
	if join != nil {
		if err := join(x.Process.Pid); err != nil {
			return fail(&SetupError{Step: "join cgroup", Err: err})
		}
	}
	b, err := json.Marshal(l.spec)
	if err == nil {
		_, err = l.specW.Write(b)
	}
	l.specW.Close()
	if err != nil {
		return fail(&SetupError{Step: "send spec", Err: err})
	}
	if l.fwdHost != nil {
		fctx, cancel := context.WithCancel(context.Background())
		l.cancel = cancel
		l.readers.Add(1)
		go func() {
			defer l.readers.Done()
			_ = netfwd.Host(fctx, l.fwdHost, dial)
		}()
	}
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case m, ok := <-l.msgs:
		switch {
		case !ok:
			return fail(&SetupError{Step: "trampoline", Err: errors.New("exited before the target started")})
		case m.Event == "error":
			return fail(m.setupErr())
		case m.Event != "started" || m.Report == nil:
			return fail(&SetupError{Step: "trampoline", Err: fmt.Errorf("unexpected message %q", m.Event)})
		}
		l.Report = m.Report
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", x.Process.Pid)); err == nil {
			l.Report.PidNamespace = ns
		}
		return nil
	case <-ctx.Done():
		return fail(ctx.Err())
	case <-timer.C:
		return fail(&SetupError{Step: "trampoline", Err: fmt.Errorf("no answer within %v", startTimeout)})
	}
}

// startTimeout bounds the sandbox's set-up; it is far above the few
// milliseconds a start takes, and only a wedged kernel call reaches it.
const startTimeout = 30 * time.Second

// readStatus turns the status stream into messages; the exit message is
// kept for Finish.
func (l *Launch) readStatus() {
	defer l.readers.Done()
	defer close(l.msgs)
	sc := bufio.NewScanner(l.statusR)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var m message
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if m.Event == "exit" {
			l.exit = m.Exit
			continue
		}
		select {
		case l.msgs <- m:
		default: // nobody waits any more (Start returned)
		}
	}
}

// Finish is called after the exec.Cmd's Wait returned (the trampoline and,
// with it, every process of the sandbox are gone). It waits for the status
// and forwarding goroutines and says how the target ended: nil when the
// trampoline died before it could tell (killed by a timeout or cancel).
func (l *Launch) Finish() *Exit {
	if l.cancel != nil {
		l.cancel()
	}
	l.readers.Wait()
	l.closeAll()
	return l.exit
}

func (l *Launch) closeAll() {
	for _, f := range []*os.File{l.specW, l.specR, l.statusR, l.statusW, l.fwdHost, l.fwdIn} {
		if f != nil {
			f.Close()
		}
	}
}
