package isolate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

// Most of a call's cost is starting the child: a sandbox and a run of the
// host binary up to its Register. So after a call, isolate starts the next
// child for the same function, scope, environment and limits: it builds
// its sandbox, runs its package initialisation and waits in Register for
// a request. The next such call only sends the request. A ready child is
// confined like any other (its sandbox is built from the scope's policies
// when it starts) and runs nothing of the function until a call takes it;
// it dies with the scope (release), with the host, or with SetPool(false).

// key says which calls a ready child can serve: its sandbox is built from
// the scope's policies (by identity: a SetPolicy makes new ones), its
// cgroup from the limits, its process from the environment.
type key struct {
	name   string
	scope  *audit.Scope
	pols   string
	env    string
	limits policy.ExecLimits
}

func keyOf(name string, scope *audit.Scope, env []string, limits policy.ExecLimits) key {
	var b strings.Builder
	for _, p := range scope.Policies() {
		fmt.Fprintf(&b, "%p,", p)
	}
	return key{name: name, scope: scope, pols: b.String(), env: strings.Join(env, "\x00"), limits: limits}
}

// proc is one started child, serving at most one call.
type proc struct {
	hp     *procguard.HostProcess
	inW    *os.File // the child's stdin: request, then answers
	outR   *os.File // the child's stdout: messages
	lr     *io.LimitedReader
	dec    *json.Decoder // reads outR through lr
	tail   *tailBuffer
	stderr *switchWriter
	taken  chan struct{} // closed when a call takes it from the pool
	once   sync.Once
	// early is the first message when it was not "ready" (a failure).
	early *message
	// cold: started for the call that uses it, not taken from the pool.
	cold bool
}

// startProc starts a child for k. ctx carries the scope and is never
// canceled: the call that uses the child watches its own context.
func startProc(ctx context.Context, k key, env []string, limits policy.ExecLimits) (*proc, error) {
	exe, err := hostExecutable()
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	p := &proc{inW: inW, outR: outR, tail: &tailBuffer{max: 64 << 10}, taken: make(chan struct{})}
	p.lr = &io.LimitedReader{R: outR, N: 1 << 20}
	p.dec = json.NewDecoder(bufio.NewReaderSize(p.lr, 64<<10))
	p.stderr = &switchWriter{tail: p.tail}
	p.hp, err = procguard.StartHost(ctx, &procguard.HostCommand{
		Path: exe, Args: []string{childArg0, k.name}, Env: env,
		Stdin: inR, Stdout: outW, Stderr: p.stderr,
		Limits: limits, WaitDelay: time.Second,
	})
	inR.Close() // the child has its copies
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	return p, nil
}

// awaitReady reads the child's first message: "ready" once it waits for
// its request. Anything else (a failure message, or EOF: it died) means
// the child cannot serve; the caller then serves it anyway, so the call
// classifies how it ended, or discards it.
func (p *proc) awaitReady() bool {
	var m message
	if err := p.dec.Decode(&m); err != nil || m.T != msgReady {
		p.early = &m
		if err != nil {
			p.early = nil
		}
		return false
	}
	return true
}

// close releases the host's ends; the caller has waited for the child.
func (p *proc) close() {
	p.once.Do(func() {
		p.inW.Close()
		p.outR.Close()
	})
}

// discard kills and reaps a child no call took.
func (p *proc) discard() {
	_ = p.hp.Process.Kill()
	p.inW.Close() // a child blocked reading its request sees EOF
	_ = p.hp.Wait()
	p.close()
}

var errNotReady = errors.New("the child did not become ready")

var pool struct {
	sync.Mutex
	off     bool
	ready   map[key]*proc
	filling map[key]chan struct{} // closed when the start ends
}

// maxReady bounds the ready children (two processes each: the sandbox's
// init and the child).
const maxReady = 8

// SetPool turns the ready children on (the default) or off; off also
// ends those waiting. Hosts that make one call and exit, and tests that
// count processes or descriptors, turn it off.
func SetPool(on bool) {
	pool.Lock()
	pool.off = !on
	var idle []*proc
	var starting []chan struct{}
	if !on {
		for k, p := range pool.ready {
			idle = append(idle, p)
			delete(pool.ready, k)
		}
		for _, c := range pool.filling {
			starting = append(starting, c)
		}
	}
	pool.Unlock()
	for _, p := range idle {
		p.discard()
	}
	// A child being started is discarded by its starter, seeing the pool
	// off; wait for that, so none is left when SetPool returns.
	for _, c := range starting {
		<-c
	}
}

// takeReady returns the ready child for k, or nil. A child being started
// for k is waited for: it is further along than a new one would be.
func takeReady(k key) *proc {
	pool.Lock()
	if wait := pool.filling[k]; wait != nil {
		pool.Unlock()
		<-wait
		pool.Lock()
	}
	p := pool.ready[k]
	delete(pool.ready, k)
	pool.Unlock()
	if p == nil {
		return nil
	}
	close(p.taken)
	if p.hp.Exited() {
		p.discard()
		return nil
	}
	return p
}

// refill starts the next child for k unless one is ready or starting; with
// async it returns once the start is registered (SetPool(false) then waits
// for it), else once it is over.
func refill(ctx context.Context, k key, env []string, limits policy.ExecLimits, async bool) {
	pool.Lock()
	if pool.off || pool.ready[k] != nil || pool.filling[k] != nil || len(pool.ready) >= maxReady || k.scope.Err() != nil {
		pool.Unlock()
		return
	}
	if pool.filling == nil {
		pool.filling, pool.ready = map[key]chan struct{}{}, map[key]*proc{}
	}
	filled := make(chan struct{})
	pool.filling[k] = filled
	pool.Unlock()
	if async {
		go fill(ctx, k, env, limits, filled)
	} else {
		fill(ctx, k, env, limits, filled)
	}
}

// fill starts a child for k and puts it in the pool once it is ready.
func fill(ctx context.Context, k key, env []string, limits policy.ExecLimits, filled chan struct{}) {
	defer close(filled)
	p, err := startProc(ctx, k, env, limits)
	if err == nil && !p.awaitReady() {
		p.discard()
		err = errNotReady
	}
	pool.Lock()
	delete(pool.filling, k)
	if err != nil {
		pool.Unlock()
		return // the next call starts its own child and reports the error
	}
	if pool.off || pool.ready[k] != nil {
		pool.Unlock()
		p.discard()
		return
	}
	pool.ready[k] = p
	pool.Unlock()
	// The scope's release kills the child (procguard's supervisor); reap
	// it then, unless a call took it.
	go func() {
		select {
		case <-k.scope.Done():
		case <-p.taken:
			return
		}
		pool.Lock()
		mine := pool.ready[k] == p
		if mine {
			delete(pool.ready, k)
		}
		pool.Unlock()
		if mine {
			p.discard()
		}
	}()
}

// Prewarm makes sure a child for the function name, in ctx's scope with
// opts' environment and limits, is ready, and returns once it is (or with
// the error that kept it from starting): the first Call then costs what
// later ones do. It does nothing when the pool is off.
func Prewarm(ctx context.Context, name string, opts ...Option) error {
	var o options
	for _, fn := range opts {
		fn(&o)
	}
	if lookup(name) == nil {
		return &Error{Name: name, Kind: Unknown}
	}
	scope := audit.From(ctx)
	if err := scope.Err(); err != nil {
		return &Error{Name: name, Kind: Setup, Err: err}
	}
	env := childEnv(scope, o.env)
	k := keyOf(name, scope, env, o.limits)
	pool.Lock()
	wait := pool.filling[k]
	pool.Unlock()
	if wait != nil {
		<-wait
	}
	refill(context.WithoutCancel(ctx), k, env, o.limits, false)
	pool.Lock()
	ok := pool.off || pool.ready[k] != nil
	pool.Unlock()
	if !ok {
		// Start one here to report why it cannot start.
		p, err := startProc(context.WithoutCancel(ctx), k, env, o.limits)
		if err != nil {
			return &Error{Name: name, Kind: Setup, Err: err}
		}
		p.discard()
	}
	return nil
}

// switchWriter feeds the child's stderr to its tail buffer and to the
// writer of the call that took the child.
type switchWriter struct {
	mu   sync.Mutex
	tail *tailBuffer
	to   io.Writer
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	s.to = w
	s.mu.Unlock()
}

func (s *switchWriter) Write(b []byte) (int, error) {
	s.tail.Write(b)
	s.mu.Lock()
	to := s.to
	s.mu.Unlock()
	if to != nil {
		_, _ = to.Write(b)
	}
	return len(b), nil
}
