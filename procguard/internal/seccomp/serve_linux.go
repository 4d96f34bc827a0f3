//go:build amd64 || arm64

package seccomp

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Serve answers notifications on listener until every filtered task is
// gone (the listener reports POLLHUP) or stop is closed, then closes
// listener. decide returns 0 to let the call go on, or the errno to fail it
// with; it runs on Serve's goroutine, one call at a time.
//
// A call whose names cannot be read or resolved is failed without asking
// decide. A notification whose task vanished (it was killed, or a signal
// withdrew the call, which the kernel then restarts as a new notification)
// is dropped; a reply the kernel no longer wants is ignored. A stop takes
// effect between notifications: when Serve returns, calls still waiting
// fail with ENOSYS, as every later one does.
//
// Serve returns nil after POLLHUP or stop, or the error that made it give
// up (the listener is closed then too).
func Serve(listener int, stop <-chan struct{}, decide func(*Call) unix.Errno) error {
	return ServeConfined(listener, stop, decide, nil)
}

// ServeConfined is Serve, with confine run on every thread that performs
// a call which may wait (a connect, the open of a FIFO) before it does:
// the sandbox applies the target's Landlock ruleset there, so a connect
// made for the target is held to the target's network rules. Such a
// thread serves one call and ends.
func ServeConfined(listener int, stop <-chan struct{}, decide func(*Call) unix.Errno, confine func() error) error {
	return ServeHandler(listener, stop, Handler{Decide: decide, Confine: confine})
}

// Handler is what ServeHandler asks and runs. Every func runs on the
// serving thread (Confine on the threads that perform a call which may
// wait), one at a time.
type Handler struct {
	// Decide returns 0 to let a call go on, or the errno to fail it with.
	Decide func(*Call) unix.Errno
	// Confine, when set, runs first on a thread that performs a call
	// which may wait (see ServeConfined).
	Confine func() error
	// BeforeExec runs for an exec (Call.Exec set) Decide allowed, just
	// before it goes on in the kernel; a non-zero errno fails it
	// instead. The kernel reads the program's name, argv and envp from
	// the task's memory again as it runs the exec, so what it runs may
	// differ from what was judged if another thread or process writes
	// that memory in between: a caller that must be sure arranges here
	// to look at what really ran (the sandbox seizes the task with
	// ptrace(2) and compares at its exec stop, on Events). Without it, an
	// allowed exec goes on unchecked.
	BeforeExec func(*Call) unix.Errno
	// Events, when set, is polled with the listener: Handle runs on the
	// serving thread whenever Fd is readable (it must make it not
	// readable, as reading an eventfd does).
	Events *Events
	// FixedRoot says no task the filter covers can change its root
	// directory (none holds CAP_SYS_CHROOT or can make a user namespace
	// to gain it): the root of the first task that traps is opened once
	// and stands for every task's, rather than each call opening
	// /proc/<tid>/root.
	FixedRoot bool
	// Floor answers every call at once with "go on", reading and judging
	// nothing: the cost of the trap's round trip alone, for measurement
	// (the benchmark table's floor sides). It protects nothing.
	Floor bool
}

// Events is a descriptor the serving loop polls for its caller.
type Events struct {
	Fd     int
	Handle func()
}

// ServeHandler is Serve with every hook of h.
func ServeHandler(listener int, stop <-chan struct{}, h Handler) error {
	return Prepare().Serve(listener, stop, h)
}

// A Thread is a serving thread made before its listener exists. Making
// one (a thread locked to a goroutine, set apart, its buffers sized) costs
// about a millisecond on a loaded machine, most of it the runtime starting
// a thread; a caller that installs a filter and starts a task at once
// prepares the thread ahead, so the task's first trapped call is answered
// without waiting for it. A Thread serves one listener.
type Thread struct {
	// kick is an eventfd the thread waits on in a blocking read: the
	// kernel wakes the thread itself, where a channel would wait for the
	// Go scheduler to find it a thread to run on.
	kick  int
	mu    sync.Mutex
	work  *serveWork    // what to serve; nil after Close
	taken bool          // Serve or Close was called
	ready chan struct{} // closed once the thread is set apart or failed (tests)
	tid   int           // the thread's id, read after ready (tests)
	err   error         // why Prepare could not make the thread
}

type serveWork struct {
	listener int
	stop     <-chan struct{}
	h        Handler
	done     chan error
}

// Prepare starts a serving thread that waits for Serve. Close ends one
// that will not serve.
func Prepare() *Thread {
	t := &Thread{kick: -1, ready: make(chan struct{})}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.err = fmt.Errorf("seccomp: %w", os.NewSyscallError("eventfd", err))
		close(t.ready)
		return t
	}
	t.kick = fd
	// The serving thread is set apart (see dedicate): a goroutine locked
	// to a thread that is not the main one, ended with it.
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// On the main thread: hold it until another goroutine has
			// locked a thread of its own to serve from.
			locked := make(chan struct{})
			go func() {
				runtime.LockOSThread()
				close(locked)
				t.run()
			}()
			<-locked
			runtime.UnlockOSThread()
			return
		}
		t.run()
	}()
	return t
}

// run sets the thread apart and serves the work it is given, if any.
func (t *Thread) run() {
	s, err := newServer()
	if err == nil {
		if err = dedicate(); err != nil {
			err = fmt.Errorf("seccomp: setting the serving thread apart: %w", err)
		}
	}
	t.tid = unix.Gettid()
	close(t.ready)
	var buf [8]byte
	for {
		_, rerr := unix.Read(t.kick, buf[:])
		if rerr != unix.EINTR {
			break
		}
	}
	unix.Close(t.kick)
	t.mu.Lock()
	w := t.work
	t.mu.Unlock()
	switch {
	case w == nil: // closed unused; the runtime ends the locked thread
	case err != nil:
		unix.Close(w.listener)
		w.done <- err
	default:
		w.done <- s.serve(w.listener, w.stop, w.h)
	}
}

// Serve is ServeHandler on the prepared thread: it answers notifications
// on listener until every filtered task is gone or stop is closed, then
// closes listener, and returns what ServeHandler would. A Thread serves
// once; a second Serve (or one after Close) closes listener and fails.
func (t *Thread) Serve(listener int, stop <-chan struct{}, h Handler) error {
	return <-t.Start(listener, stop, h)
}

// Start is Serve without waiting: the thread starts serving, and what
// Serve would return comes on the channel. The calling goroutine goes on
// at once, so the thread serves while it starts the tasks the filter
// covers.
func (t *Thread) Start(listener int, stop <-chan struct{}, h Handler) <-chan error {
	w := &serveWork{listener: listener, stop: stop, h: h, done: make(chan error, 1)}
	if !t.take(w) {
		unix.Close(listener)
		err := t.err
		if t.kick >= 0 {
			err = errors.New("seccomp: the serving thread was used or closed")
		}
		w.done <- err
	}
	return w.done
}

// Close ends a thread that has not served; after Serve it does nothing.
func (t *Thread) Close() {
	t.take(nil)
}

// take hands the thread its work (nil: none, end), once.
func (t *Thread) take(w *serveWork) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.taken || t.kick < 0 {
		return false
	}
	t.taken, t.work = true, w
	one := [8]byte{1}
	_, _ = unix.Write(t.kick, one[:])
	return true
}

// serve is Serve's loop on the dedicated thread.
func (s *server) serve(listener int, stop <-chan struct{}, h Handler) error {
	defer unix.Close(listener)
	s.fd = listener
	// Probe the ID_VALID number with an id no notification has: a kernel
	// that knows the number says ENOENT, one before 5.17 says EINVAL.
	var id uint64
	if e := s.ioctl(s.idValid, unsafe.Pointer(&id)); e == unix.EINVAL {
		s.idValid = ioctlNotifIDValidOld
	}
	s.confine = h.Confine
	s.floor = h.Floor
	s.beforeExec = h.BeforeExec
	s.caps.init()
	s.syncWakeUp()
	s.t.caps = &s.caps
	s.t.fixedRoot = h.FixedRoot
	defer s.t.close()

	// wake becomes readable when stop is closed, so one poll waits for
	// both.
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("seccomp: %w", os.NewSyscallError("eventfd", err))
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		select {
		case <-stop:
			unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		case <-done:
		}
	})
	defer func() {
		close(done)
		wg.Wait() // before wake is closed and its number reused
		unix.Close(wake)
	}()

	var yielded time.Time
	fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
	if h.Events != nil {
		fds = append(fds, unix.PollFd{Fd: int32(h.Events.Fd), Events: unix.POLLIN})
	}
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		for i := range fds {
			fds[i].Revents = 0
		}
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return fmt.Errorf("seccomp: %w", os.NewSyscallError("poll", err))
		}
		if len(fds) > 2 && fds[2].Revents != 0 {
			h.Events.Handle()
		}
		ev := fds[0].Revents
		switch {
		case fds[1].Revents != 0:
			return nil
		case ev&unix.POLLIN != 0:
			if err := s.answer(h.Decide); err != nil {
				return err
			}
		case ev&unix.POLLHUP != 0:
			return nil
		case ev&(unix.POLLERR|unix.POLLNVAL) != 0:
			return fmt.Errorf("seccomp: listener fd %d: poll events %#x", listener, ev)
		}
		// After the answer, not before it: no task waits on the yield.
		yielded = Yield(yielded)
	}
}

// The serving goroutine loops between poll(2) and the calls it performs,
// and never blocks in Go: to Go's scheduler it is one goroutine that runs
// on and on. sysmon takes the P of a goroutine that has run 10 ms without
// rescheduling (even from inside a system call), and every take sets
// sysmon polling again every 20 µs; with a trapped call every hundred
// microseconds that never ended, and sysmon cost the sandbox's init as
// much CPU as the answers (a tar of 5,000 files and a git commit: init's
// CPU 2.4 s with it, 1.7 s without, with GOMAXPROCS 3, tmpfs, six runs).
// So it yields its P every yieldEvery, well under sysmon's 10 ms. The
// sandbox's reaper, which loops in wait4 the same way, does too.
const yieldEvery = 2 * time.Millisecond

// Yield reschedules the calling goroutine when last is yieldEvery ago or
// more, and returns when it last did. A yield of a goroutine locked to
// its thread costs two thread switches, some 10 µs.
func Yield(last time.Time) time.Time {
	now := time.Now()
	if now.Sub(last) < yieldEvery {
		return last
	}
	runtime.Gosched()
	return time.Now()
}

// server holds the buffers of one Serve, sized as the kernel says.
type server struct {
	fd      int
	recv    []uint64 // struct seccomp_notif, as large as the kernel's
	resp    []uint64 // struct seccomp_notif_resp, likewise
	idValid uintptr  // the SECCOMP_IOCTL_NOTIF_ID_VALID number this kernel takes
	t       task
	req     request
	confine func() error // run on a thread that performs a call which may wait
	// beforeExec runs for an allowed exec before it goes on (Handler).
	beforeExec func(*Call) unix.Errno
	caps       threadCaps // the serving thread's CAP_SYS_PTRACE
	floor      bool       // Handler.Floor
	// umask is the serving thread's umask (its file-system context is
	// its own): the last task umask a create needed, set again only when
	// the next differs.
	umask int
}

// kernelSizes asks the kernel once for its structure sizes.
var kernelSizes = sync.OnceValues(func() (notifSizes, error) {
	var sz notifSizes
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&sz)))
	if e != 0 {
		return sz, fmt.Errorf("seccomp: %w", os.NewSyscallError("seccomp(SECCOMP_GET_NOTIF_SIZES)", e))
	}
	return sz, nil
})

func newServer() (*server, error) {
	sz, err := kernelSizes()
	if err != nil {
		return nil, err
	}
	words := func(kernel uint16, ours uintptr) []uint64 {
		n := max(uintptr(kernel), ours)
		return make([]uint64, (n+7)/8)
	}
	s := &server{
		req:     request{sockFd: -1, w: walker{root: -1}},
		fd:      -1,
		recv:    words(sz.notif, unsafe.Sizeof(notif{})),
		resp:    words(sz.resp, unsafe.Sizeof(notifResp{})),
		idValid: unix.SECCOMP_IOCTL_NOTIF_ID_VALID,
		umask:   -1,
	}
	s.t.root = -1
	return s, nil
}

// ioctl makes one ioctl on the listener. The ones that take the filter's
// notify lock (ID_VALID, SEND, SET_FLAGS) wait for it interruptibly: a
// signal to the serving thread then fails them with EINTR having done
// nothing, and they are made again (a lost SEND would leave the task
// waiting and end Serve). RECV's EINTR is the caller's: it goes back to
// poll rather than block.
func (s *server) ioctl(req uintptr, arg unsafe.Pointer) unix.Errno {
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.fd), req, uintptr(arg))
		if e != unix.EINTR || req == unix.SECCOMP_IOCTL_NOTIF_RECV {
			return e
		}
	}
}

// syncWakeUp asks the kernel (Linux 6.6, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
// to hand the CPU over directly between a task stopped in a trapped call
// and this thread, rather than wake each other on whatever CPU is free: a
// trapped call is a round trip, and on a busy machine each wake-up
// otherwise waits for a CPU. Older kernels refuse the flag; nothing else
// changes then.
func (s *server) syncWakeUp() {
	flags := uint64(unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	_ = s.ioctl(unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unsafe.Pointer(&flags))
}

// answer receives one notification, reads and resolves the call, checks
// the notification is still valid, asks decide, performs the call and
// replies.
func (s *server) answer(decide func(*Call) unix.Errno) error {
	clear(s.recv) // the kernel wants a zeroed buffer
	switch e := s.ioctl(unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&s.recv[0])); e {
	case 0:
	case unix.EINTR, unix.ENOENT:
		// Interrupted, or the task was killed after poll saw its call.
		return nil
	default:
		return fmt.Errorf("seccomp: %w", os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_RECV)", e))
	}
	n := (*notif)(unsafe.Pointer(&s.recv[0]))
	id := n.id
	if s.floor {
		return s.send(id, n.pid, result{fd: -1, cont: true})
	}

	s.t.reset(n.pid)
	r := &s.req
	errno := s.t.decode(n, r)
	r.id = id
	defer r.close()
	// After the reads and the opens of the task's directories: if the
	// notification is still pending, the task is the one that made the
	// call and was stopped in it throughout, so what was read and opened
	// is its own. ENOENT: nobody waits for an answer. Any other error
	// ends Serve rather than leave the task waiting.
	switch e := s.ioctl(s.idValid, unsafe.Pointer(&id)); e {
	case 0:
	case unix.ENOENT:
		return nil
	default:
		return fmt.Errorf("seccomp: %w", os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_ID_VALID)", e))
	}
	if errno == 0 && len(r.call.Paths) > 0 {
		errno = decide(r.call)
	}
	if errno == 0 && r.call.Exec != nil && s.beforeExec != nil {
		errno = s.beforeExec(r.call)
	}
	if errno != 0 {
		return s.send(id, n.pid, fail(errno))
	}
	res := s.act(r)
	if res.async {
		return nil
	}
	if testHookAfterAct != nil {
		testHookAfterAct(r.call)
	}
	return s.send(id, n.pid, res)
}

// testHookAfterAct, set by tests only, runs between a call's act and its
// answer.
var testHookAfterAct func(*Call)

// send answers call id of task pid: installs res.fd in the task and
// completes the call with the new descriptor's number (addFd), or
// completes it with res.val or res.errno. res.fd is closed.
func (s *server) send(id uint64, pid uint32, res result) error {
	if res.fd >= 0 {
		var answered bool
		if answered, res = s.addFd(id, pid, res); answered {
			return nil
		}
	}
	clear(s.resp)
	r := (*notifResp)(unsafe.Pointer(&s.resp[0]))
	r.id = id
	r.val = res.val
	r.error = -int32(res.errno)
	if res.cont {
		r.flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	}
	switch e := s.ioctl(unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(r)); e {
	case 0, unix.ENOENT:
		// ENOENT: the task was killed.
		return nil
	default:
		return fmt.Errorf("seccomp: %w", os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_SEND)", e))
	}
}

// addFdTwoSteps is set once the kernel has refused SECCOMP_ADDFD_FLAG_SEND
// (before Linux 5.14): descriptors are then added, and calls completed,
// in two steps.
var addFdTwoSteps atomic.Bool

// addFd installs res.fd (closed on return) in the task, close-on-exec if
// res.cloexec. Where the kernel can (SECCOMP_ADDFD_FLAG_SEND, Linux 5.14)
// the same ioctl completes the call with the new descriptor's number and
// answered is true: the task wakes once, where adding and then sending
// wakes it twice and makes the serving thread wait for it in between (a
// round trip, a quarter of a trapped open's cost here). Otherwise next is
// what send must still answer: the descriptor's number, or the error
// that kept it from being installed (EMFILE and the like), which the
// call then fails with. answered is also true when the task is gone. A
// descriptor that is never installed (the task is out of room, was
// killed in the call, or is killed after an interrupted add, below)
// leaves nothing behind: the entry an exclusive create made
// for it (res.made) is removed again, as the kernel would never have made
// it.
//
// With the flag the kernel marks the call answered before it waits for
// the task to take the descriptor. A signal that interrupted that wait
// would withdraw the descriptor and leave the call answered with 0 and
// nothing installed; the ioctl, made again, then says EINPROGRESS. The
// threads that answer block every signal another thread or process
// could send them (dedicate), so only a stop of the whole supervisor
// (SIGSTOP, a freezer, a debugger) can still do that; the task is then
// killed, so that no open returns a descriptor it does not have.
func (s *server) addFd(id uint64, pid uint32, res result) (answered bool, next result) {
	installed := false
	defer func() {
		if !installed && res.made != nil {
			unmake(res.made, res.fd)
		}
		unix.Close(res.fd)
	}()
	add := notifAddfd{id: id, srcfd: uint32(res.fd)}
	if res.cloexec {
		add.newfdFlags = unix.O_CLOEXEC
	}
	send := !addFdTwoSteps.Load()
	for {
		add.flags = 0
		if send {
			add.flags = unix.SECCOMP_ADDFD_FLAG_SEND
		}
		nfd, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.fd), unix.SECCOMP_IOCTL_NOTIF_ADDFD, uintptr(unsafe.Pointer(&add)))
		switch {
		case e == unix.EINTR:
			// Without the flag an interrupted add is either done (its
			// number is returned) or undone, and is made again.
		case e == unix.EINVAL && send:
			addFdTwoSteps.Store(true)
			send = false
		case e == 0:
			installed = true
			if send {
				return true, result{}
			}
			return false, done(int64(nfd))
		case e == unix.ENOENT:
			// The task was killed in the call, which never returns.
			return true, result{}
		case e == unix.EINPROGRESS && send:
			_ = unix.Kill(int(pid), unix.SIGKILL)
			return true, result{}
		default:
			return false, fail(e)
		}
	}
}
