package netfwd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// maxTunnels bounds the tunnels one Serve holds, requests still waiting for
// the host's answer included.
const maxTunnels = 256

// Serve runs inside the namespace: it listens on 127.0.0.1:PORT for each of
// ports, and on [::1]:PORT when that can be bound (a namespace without IPv6
// loopback simply gets no IPv6 listener), and forwards each accepted
// connection through ctl, the namespace end from Pair, to Host.
//
// It fails before forwarding anything if a port is 0 or repeated, ctl is
// not a SOCK_SEQPACKET socket, or a 127.0.0.1 listener cannot be made.
// Otherwise it returns nil once stop is closed (a nil stop never is),
// ErrPeerClosed when the host closed ctl, or the error that broke ctl
// (wrapping ErrMalformed for a bad message). Before returning it closes
// every listener and every tunnel and waits for all its goroutines. It
// does not close ctl, but marks it close-on-exec (exec.Cmd.ExtraFiles
// hands it over without), so commands started after Serve do not inherit
// it; ones started before do.
//
// A connection accepted while maxTunnels (256) tunnels are open is closed
// at once; one the host refuses is closed once the answer arrives.
func Serve(ctl *os.File, ports []Port, stop <-chan struct{}) error {
	ls, err := listen(ports)
	if err != nil {
		return err
	}
	return serve(ctl, ls, stop, config{})
}

// Start binds the listeners, so a connection made after it returns waits
// for its tunnel, then serves them as Serve does on a new goroutine; the
// channel gets Serve's result. A listener that cannot be made is returned
// as the error, with nothing started.
func Start(ctl *os.File, ports []Port, stop <-chan struct{}) (<-chan error, error) {
	ls, err := listen(ports)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- serve(ctl, ls, stop, config{}) }()
	return done, nil
}

// config holds what tests change.
type config struct {
	// refused, when set, is called with each refusal's reason, from the
	// tunnel's goroutine.
	refused func(p Port, reason string)
}

// listener is one listening socket and the port it forwards to. Tests
// give serve listeners on other addresses, so forwarding can be tested in
// the host's own namespace.
type listener struct {
	net.Listener
	port Port
}

func listen(ports []Port) ([]listener, error) {
	seen := make(map[Port]bool, len(ports))
	for _, p := range ports {
		if p.Port == 0 {
			return nil, errors.New("netfwd: port 0 cannot be forwarded")
		}
		if seen[p] {
			return nil, fmt.Errorf("netfwd: port %v listed twice", p)
		}
		seen[p] = true
	}
	var ls []listener
	for _, p := range ports {
		l, err := net.Listen("tcp4", "127.0.0.1:"+p.String())
		if err != nil {
			closeListeners(ls)
			return nil, fmt.Errorf("netfwd: %w", err)
		}
		ls = append(ls, listener{l, p})
		if l6, err := net.Listen("tcp6", "[::1]:"+p.String()); err == nil {
			ls = append(ls, listener{l6, p})
		}
	}
	return ls, nil
}

func closeListeners(ls []listener) {
	for _, l := range ls {
		l.Close()
	}
}

// serve forwards the connections ls accept; it owns ls and closes them.
func serve(ctlFile *os.File, ls []listener, stop <-chan struct{}, cfg config) error {
	c, err := openCtl(ctlFile)
	if err != nil {
		closeListeners(ls)
		return err
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	s := &session{
		c:       c,
		ctx:     ctx,
		fail:    cancel,
		cfg:     cfg,
		slots:   make(chan struct{}, maxTunnels),
		pending: make(map[uint32]chan answer),
	}

	// The watcher ends the session on stop, and on any end closes what
	// blocks the other goroutines: the listeners and the control socket.
	// Tunnels watch ctx themselves.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-stop:
			cancel(errStopped)
		case <-ctx.Done():
		}
		closeListeners(ls)
		c.abort()
	}()
	s.wg.Add(1)
	go s.readLoop()
	for _, l := range ls {
		s.wg.Add(1)
		go s.acceptLoop(l)
	}
	s.wg.Wait()
	c.close()
	if err := context.Cause(ctx); err != errStopped {
		return err
	}
	return nil
}

// errStopped is the session's cause when stop was closed; serve returns nil
// for it.
var errStopped = errors.New("netfwd: stopped")

type session struct {
	c     *ctl
	ctx   context.Context
	fail  context.CancelCauseFunc // the first cause wins
	cfg   config
	slots chan struct{} // one token per open tunnel
	wg    sync.WaitGroup

	mu      sync.Mutex
	nextID  uint32
	pending map[uint32]chan answer // requests sent and not answered
}

// answer is the host's answer to one request: conn, or a refusal reason.
type answer struct {
	conn   net.Conn
	reason string
}

// halfCloser is what a tunnel needs of both its ends.
type halfCloser interface {
	net.Conn
	CloseWrite() error
}

func (s *session) acceptLoop(l listener) {
	defer s.wg.Done()
	var backoff time.Duration
	for {
		conn, err := l.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			if !transient(err) {
				s.fail(fmt.Errorf("netfwd: accept: %w", err))
				return
			}
			// Out of descriptors or memory: wait, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
			}
			continue
		}
		backoff = 0
		select {
		case s.slots <- struct{}{}:
		default:
			conn.Close()
			continue
		}
		s.wg.Add(1)
		go s.tunnel(l.port, conn.(*net.TCPConn))
	}
}

func transient(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// tunnel asks the host for a connection to p and, when it gets one, copies
// between it and in until both sides are done.
func (s *session) tunnel(p Port, in *net.TCPConn) {
	defer s.wg.Done()
	defer func() { <-s.slots }()
	id, ch := s.register()
	if err := s.c.send(msg{Kind: kindDial, ID: id, Port: p.Port}, -1); err != nil {
		s.forget(id, ch)
		in.Close()
		s.fail(fmt.Errorf("netfwd: send request: %w", err))
		return
	}
	var a answer
	select {
	case a = <-ch:
	case <-s.ctx.Done():
		s.forget(id, ch)
		in.Close()
		return
	}
	if a.conn == nil {
		in.Close()
		if s.cfg.refused != nil {
			s.cfg.refused(p, a.reason)
		}
		return
	}
	s.pipe(in, a.conn.(halfCloser))
}

func (s *session) register() (uint32, chan answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		s.nextID++
		if _, used := s.pending[s.nextID]; s.nextID != 0 && !used {
			break
		}
	}
	ch := make(chan answer, 1)
	s.pending[s.nextID] = ch
	return s.nextID, ch
}

// forget drops a request the tunnel no longer waits for, closing a
// connection that was delivered meanwhile. deliver sends under s.mu, so
// after the delete nothing more can arrive on ch.
func (s *session) forget(id uint32, ch chan answer) {
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
	select {
	case a := <-ch:
		if a.conn != nil {
			a.conn.Close()
		}
	default:
	}
}

// deliver hands a to the tunnel waiting for id.
func (s *session) deliver(id uint32, a answer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.pending[id]
	if !ok {
		return malformed("answer to request id %d, which is not waiting", id)
	}
	delete(s.pending, id)
	ch <- a // buffered, and only ever one answer
	return nil
}

func (s *session) readLoop() {
	defer s.wg.Done()
	for {
		m, fds, err := s.c.recv()
		if errors.Is(err, io.EOF) {
			err = ErrPeerClosed
		}
		if err == nil {
			err = s.handle(m, fds)
		}
		if err != nil {
			s.fail(err)
			return
		}
	}
}

// handle turns one message from the host into an answer. It owns fds.
func (s *session) handle(m msg, fds []int) error {
	var a answer
	switch {
	case m.Kind == kindOK && len(fds) == 1:
		a = connAnswer(fds[0])
	case m.Kind == kindRefused && len(fds) == 0:
		a.reason = m.Reason
	default:
		closeFDs(fds)
		return malformed("%v message with %d descriptors sent to the namespace side", m.Kind, len(fds))
	}
	err := s.deliver(m.ID, a)
	if err != nil && a.conn != nil {
		a.conn.Close()
	}
	return err
}

// connAnswer makes a connection of a received descriptor. One that is not
// a stream socket refuses the request here; the session goes on.
func connAnswer(fd int) answer {
	f := os.NewFile(uintptr(fd), "netfwd-tunnel")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return answer{reason: "host passed an unusable descriptor: " + err.Error()}
	}
	if _, ok := conn.(halfCloser); !ok {
		conn.Close()
		return answer{reason: fmt.Sprintf("host passed a %T, not a stream socket", conn)}
	}
	return answer{conn: conn}
}

// pipe copies both ways between a and b. An EOF from one side becomes a
// CloseWrite on the other; any error, or the end of the session, closes
// both at once. It returns when both copies have.
func (s *session) pipe(a, b halfCloser) {
	errc := make(chan error, 2)
	s.wg.Add(2)
	go s.copyHalf(b, a, errc)
	go s.copyHalf(a, b, errc)
	closeBoth := func() {
		a.Close()
		b.Close()
	}
	done := s.ctx.Done()
	for n := 0; n < 2; {
		select {
		case err := <-errc:
			n++
			if err != nil {
				closeBoth()
			}
		case <-done:
			closeBoth()
			done = nil
		}
	}
	closeBoth()
}

func (s *session) copyHalf(dst, src halfCloser, errc chan<- error) {
	defer s.wg.Done()
	_, err := io.Copy(dst, src)
	if err == nil {
		err = dst.CloseWrite()
	}
	errc <- err
}
