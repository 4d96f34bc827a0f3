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
)

// Host serves the dial requests that arrive on ctl, the host end from Pair,
// until the peer closes it (Host returns nil), ctx ends (ctx.Err()) or the
// peer breaks the wire format (an error wrapping ErrMalformed).
//
// Each request runs in its own goroutine and calls dial once, with "tcp"
// and "127.0.0.1:PORT" and a context that ends when Host is ending; dial is
// the host's policy and may be called concurrently. A connection it returns
// must implement syscall.Conn (a *net.TCPConn does); its descriptor is sent
// to the namespace side and the host's copy closed. An error from dial goes
// back as the refusal's reason (at most 200 bytes) and nothing is
// connected. Host returns only after every dial it started has returned.
// It does not close ctl.
func Host(ctx context.Context, ctl *os.File, dial func(ctx context.Context, network, addr string) (net.Conn, error)) error {
	if dial == nil {
		return errors.New("netfwd: Host needs a dial function")
	}
	c, err := openCtl(ctl)
	if err != nil {
		return err
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	h := &host{c: c, dial: dial, inFlight: make(map[uint32]bool)}

	// The watcher turns the end of ctx into a failed read; it is in h.wg
	// like every goroutine Host starts.
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		<-ctx.Done()
		c.abort()
	}()

	err = h.loop(ctx)
	// Stop the dials, fail the replies still to be sent, wait for all.
	cancel()
	h.wg.Wait()
	c.close()
	if perr := parent.Err(); perr != nil {
		return perr
	}
	return err
}

type host struct {
	c    *ctl
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	wg   sync.WaitGroup

	mu       sync.Mutex
	inFlight map[uint32]bool // request ids without an answer sent
}

func (h *host) loop(ctx context.Context) error {
	for {
		m, fds, err := h.c.recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(fds) > 0 {
			closeFDs(fds)
			return malformed("%v request carries %d descriptors", m.Kind, len(fds))
		}
		if m.Kind != kindDial {
			return malformed("%v message sent to the host", m.Kind)
		}
		if err := h.admit(m.ID); err != nil {
			return err
		}
		h.wg.Add(1)
		go h.serve(ctx, m)
	}
}

// admit records id as in flight. An honest namespace side never has more
// than maxTunnels requests open (each holds a tunnel slot until it has its
// answer, and Host forgets an id before answering it), nor reuses an open id.
func (h *host) admit(id uint32) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inFlight[id] {
		return malformed("request id %d is already in flight", id)
	}
	if len(h.inFlight) >= maxTunnels {
		return malformed("more than %d requests in flight", maxTunnels)
	}
	h.inFlight[id] = true
	return nil
}

// serve dials for one request and answers it. Send errors are dropped:
// they mean the session is ending, which the read loop reports.
func (h *host) serve(ctx context.Context, m msg) {
	defer h.wg.Done()
	port := Port{m.Port}
	conn, err := h.dial(ctx, "tcp", port.hostAddr())
	if err == nil && conn == nil {
		err = errors.New("dial returned no connection")
	}
	if err != nil {
		h.answer(msg{Kind: kindRefused, ID: m.ID, Reason: err.Error()}, nil)
		return
	}
	defer conn.Close()
	sc, ok := conn.(syscall.Conn)
	if !ok {
		h.answer(msg{Kind: kindRefused, ID: m.ID, Reason: fmt.Sprintf("dial returned a %T, not a socket", conn)}, nil)
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		h.answer(msg{Kind: kindRefused, ID: m.ID, Reason: err.Error()}, nil)
		return
	}
	h.answer(msg{Kind: kindOK, ID: m.ID}, rc)
}

// answer forgets m.ID, then sends m, with rc's descriptor when rc is not
// nil. Forgetting first keeps the in-flight set a subset of the namespace
// side's: it may reuse the id or the slot as soon as the answer arrives.
func (h *host) answer(m msg, rc syscall.RawConn) {
	h.mu.Lock()
	delete(h.inFlight, m.ID)
	h.mu.Unlock()
	if rc == nil {
		h.c.send(m, -1)
		return
	}
	rc.Control(func(fd uintptr) { h.c.send(m, int(fd)) })
}
