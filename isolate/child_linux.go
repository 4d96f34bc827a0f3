package isolate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/audit"
)

// childArg0 is argv[0] of the host binary re-executed as an isolated
// call's child; argv[1] names the function.
const childArg0 = "auditguard-isolate-call"

// child is this process's role when it is a child.
var child struct {
	active bool
	name   string
	in     *os.File // the protocol from the host (was stdin)
	out    *os.File // the protocol to the host (was stdout)
	stdout *os.File // read end of the pipe that now is fd 1
	// serving is set once, by the Register that serves the call or by the
	// give-up timer.
	serving atomic.Bool
}

// init recognises the child before any other package's init can print:
// it moves the protocol off fds 0 and 1, so the function's reads of
// stdin see nothing and its writes to stdout are captured and framed.
// The call itself is served by Register, once the function exists.
func init() {
	if len(os.Args) != 2 || os.Args[0] != childArg0 {
		return
	}
	child.active, child.name = true, os.Args[1]
	in, err1 := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 3)
	out, err2 := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	null, err3 := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	var p [2]int
	err4 := unix.Pipe2(p[:], unix.O_CLOEXEC)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		fmt.Fprintln(os.Stderr, "isolate child: cannot set up its descriptors:", err)
		os.Exit(3)
	}
	_ = unix.Dup3(null, 0, 0)
	_ = unix.Dup3(p[1], 1, 0)
	unix.Close(null)
	unix.Close(p[1])
	child.in = os.NewFile(uintptr(in), "isolate-in")
	child.out = os.NewFile(uintptr(out), "isolate-out")
	child.stdout = os.NewFile(uintptr(p[0]), "isolate-stdout")
	// A function registered late (or not at all in this run) would leave
	// the child running the host's main; give up instead.
	time.AfterFunc(lateRegister, func() {
		if child.serving.CompareAndSwap(false, true) {
			c := &conn{enc: json.NewEncoder(child.out)}
			c.send(&message{T: msgFail, Fail: Setup, Msg: fmt.Sprintf("%q was not registered within %v of the child's start (register in an init function)", child.name, lateRegister)})
			os.Exit(3)
		}
	})
}

// lateRegister is how long the child waits for Register of its function.
const lateRegister = 10 * time.Second

// conn is the child's side of the protocol.
type conn struct {
	mu  sync.Mutex
	enc *json.Encoder

	next    atomic.Uint64
	pmu     sync.Mutex
	pending map[uint64]chan answer
	gone    bool // the host's side closed
}

func (c *conn) send(m *message) {
	c.mu.Lock()
	_ = c.enc.Encode(m)
	c.mu.Unlock()
}

// ask sends an ask and waits for the host's answer; ok is false when the
// host is gone (the call is being killed).
func (c *conn) ask(kind string, ev *audit.Event) (answer, bool) {
	id := c.next.Add(1)
	ch := make(chan answer, 1)
	c.pmu.Lock()
	if c.gone {
		c.pmu.Unlock()
		return answer{}, false
	}
	c.pending[id] = ch
	c.pmu.Unlock()
	c.send(&message{T: msgAsk, ID: id, Kind: kind, Event: eventToWire(ev), Frames: framesToWire(ev.Frames())})
	a, ok := <-ch
	return a, ok
}

// readAnswers hands each answer to its waiting ask until the host closes
// its side.
func (c *conn) readAnswers(dec *json.Decoder) {
	for {
		var a answer
		if err := dec.Decode(&a); err != nil {
			break
		}
		c.pmu.Lock()
		ch := c.pending[a.ID]
		delete(c.pending, a.ID)
		c.pmu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
	c.pmu.Lock()
	c.gone = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.pmu.Unlock()
}

// serve runs the call in this child and returns the exit code.
func serve(e *entry) int {
	if !child.serving.CompareAndSwap(false, true) {
		select {} // the give-up timer is exiting
	}
	c := &conn{enc: json.NewEncoder(child.out), pending: map[uint64]chan answer{}}
	fail := func(kind Kind, msg string) int {
		c.send(&message{T: msgFail, Fail: kind, Msg: msg})
		return 0
	}
	// Ready: the host marks a pooled child usable only once it got here
	// (its runtime and package initialisation done).
	c.send(&message{T: msgReady})
	dec := json.NewDecoder(bufio.NewReader(child.in))
	var req request
	if err := dec.Decode(&req); err != nil {
		return fail(Setup, "reading the request: "+err.Error())
	}
	go c.readAnswers(dec)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 32<<10)
		for {
			n, err := child.stdout.Read(buf)
			if n > 0 {
				c.send(&message{T: msgStdout, Data: append([]byte(nil), buf[:n]...)})
			}
			if err != nil {
				return
			}
		}
	}()

	ctx, err := guardContext(c, &req)
	if err != nil {
		return fail(Setup, "rebuilding the guard: "+err.Error())
	}
	final := run(ctx, e, req.Input)

	// The function is done: close this process's stdout so the copier
	// sees EOF, unless something the function started still holds it.
	if null, err := unix.Open(os.DevNull, unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Dup3(null, 1, 0)
		unix.Close(null)
	}
	select {
	case <-copied:
	case <-time.After(200 * time.Millisecond):
	}
	c.send(final)
	return 0
}

// run calls the function, turning a panic into a message.
func run(ctx context.Context, e *entry, input []byte) (final *message) {
	defer func() {
		if v := recover(); v != nil {
			final = &message{T: msgPanic, Msg: fmt.Sprint(v), Stack: string(debug.Stack())}
		}
	}()
	out, err, bad := e.invoke(ctx, input)
	switch {
	case bad != nil:
		return &message{T: msgFail, Fail: bad.Kind, Msg: bad.Msg}
	case err != nil:
		return &message{T: msgError, Msg: err.Error(), Denied: errors.Is(err, audit.ErrDenied)}
	}
	return &message{T: msgResult, Out: out}
}

// guardContext enters a guard rebuilt from the host's scope: the same
// policies (the first decides, the others restrict), modes, options and
// data; callbacks that ask the host; records sent to the host.
func guardContext(c *conn, req *request) (context.Context, error) {
	if len(req.Policies) == 0 || req.Policies[0] == nil {
		return nil, errors.New("no policy in the request")
	}
	var data any
	if len(req.Data) > 0 {
		if err := json.Unmarshal(req.Data, &data); err != nil {
			return nil, err
		}
	}
	opts := append(req.Settings.Options(),
		audit.WithLogger(slog.New(slog.DiscardHandler)),
		audit.WithData(data),
		audit.WithRecordHook(func(_ context.Context, r audit.Record) {
			c.send(&message{T: msgRecord, Record: &r})
		}))
	if req.Settings.OnCall {
		opts = append(opts, audit.WithOnCall(func(_ context.Context, ev *audit.Event) audit.Verdict {
			a, ok := c.ask(askOnCall, ev)
			if ok && a.Fault != "" {
				panic("host " + a.Fault) // the pipeline denies, as in the host
			}
			return a.Verdict // Continue when the host is gone
		}))
	}
	if req.Settings.BeforeDeny {
		opts = append(opts, audit.WithBeforeDeny(func(_ context.Context, ev *audit.Event) bool {
			a, ok := c.ask(askBeforeDeny, ev)
			if ok && a.Fault != "" {
				panic("host " + a.Fault)
			}
			return a.Allow
		}))
	}
	g, err := audit.New(req.Policies[0], opts...)
	if err != nil {
		return nil, err
	}
	// The scope lives as long as the process: the call is all it does.
	ctx, _, err := g.Enter(context.Background())
	if err != nil {
		return nil, err
	}
	for _, p := range req.Policies[1:] {
		if ctx, _, err = audit.Restrict(ctx, p); err != nil {
			return nil, err
		}
	}
	var args any = req.CallArgs
	ctx, _ = audit.WithCall(ctx, req.CallName, args)
	return ctx, nil
}
