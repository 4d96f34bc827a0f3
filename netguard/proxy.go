package netguard

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/auditguard/auditguard/audit"
)

// Proxy is a policy-deciding egress proxy: HTTP (absolute-URI forwarding
// and CONNECT) and SOCKS5 (CONNECT, with domain, IPv4 and IPv6 address
// types) on one listener, told apart by the first byte a client sends.
// Every request is one decision through the same pipeline as
// Dialer.DialContext (events, OnCall, BeforeDeny, modes, records): the
// host:port is canonicalised, the name judged, resolved once with the
// Dialer's Resolver, every address judged, and only the approved literals
// dialed, so a second DNS answer cannot steer a tunnel. A denial answers
// 403 Forbidden (HTTP) or "connection not allowed by ruleset" (SOCKS5) and
// dials nothing.
//
// Serve it on any net.Listener (loopback TCP, a unix socket), or hand it
// connections one at a time with ServeConn (a forwarder that accepts
// elsewhere). Close stops every listener and closes every connection and
// tunnel, and returns once every goroutine the proxy started has ended.
//
// Set the fields before the first Serve or ServeConn; they are read
// concurrently afterwards and must not change.
type Proxy struct {
	// Context supplies the scope requests are judged in (and the host tool
	// call, if the host marked one with audit.WithCall). A request with no
	// usable scope is denied (audit.ErrNoScope, audit.ErrScopeClosed).
	Context context.Context
	// ConnContext, when set, returns the context to judge the requests of
	// one accepted connection in, starting from Context: the hook that
	// attributes a connection to a caller (audit.WithCall, WithClient) or
	// to another scope. It runs on the connection's goroutine before any
	// byte is read; returning nil closes the connection unserved.
	ConnContext func(ctx context.Context, c net.Conn) context.Context
	// Dialer dials approved requests; nil means a zero Dialer (pure-Go
	// resolver). Its Base configures the upstream sockets.
	Dialer *Dialer

	// MaxHeaderBytes bounds an HTTP request's head (request line and
	// headers); a larger one is answered 431. Zero means 32 KiB. SOCKS5
	// messages are bounded by their format (at most 262 bytes).
	MaxHeaderBytes int
	// HeaderTimeout bounds the time from a connection's first byte (or
	// the end of the previous request) to the end of a request's head or
	// of the SOCKS5 handshake; a slower client is cut off. Zero means 10 s.
	HeaderTimeout time.Duration
	// IdleTimeout closes a connection or tunnel on which no byte moved in
	// either direction for that long, and bounds the wait for a keep-alive
	// connection's next request. Zero means 5 minutes.
	IdleTimeout time.Duration
	// DialTimeout bounds each upstream dial (lookup included). Zero means
	// 30 s.
	DialTimeout time.Duration
	// MaxConns bounds the connections served at once. Serve waits for one
	// to end before it accepts another (the kernel's backlog holds the
	// rest); ServeConn waits likewise. Zero means 1024.
	MaxConns int
	// Logger receives one line per request served ("proxy request": the
	// client, protocol, target, status, bytes each way, duration) and the
	// protocol faults of clients. Decisions themselves are recorded by the
	// guard (audit.WithLogger, audit.WithRecorder). nil means none.
	Logger *slog.Logger

	once      sync.Once
	sem       chan struct{}
	stop      context.Context // cancelled by Close
	stopFn    context.CancelFunc
	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[io.Closer]struct{}
	wg        sync.WaitGroup
}

// ErrProxyClosed is returned by Serve and ServeConn once Close was called.
var ErrProxyClosed = errors.New("netguard: proxy closed")

// NewProxy returns a Proxy that judges requests in ctx's scope.
func NewProxy(ctx context.Context) *Proxy { return &Proxy{Context: ctx} }

// Defaults of the Proxy's limits.
const (
	DefaultProxyMaxHeaderBytes = 32 << 10
	DefaultProxyHeaderTimeout  = 10 * time.Second
	DefaultProxyIdleTimeout    = 5 * time.Minute
	DefaultProxyDialTimeout    = 30 * time.Second
	DefaultProxyMaxConns       = 1024
)

func (p *Proxy) init() {
	p.once.Do(func() {
		n := p.MaxConns
		if n <= 0 {
			n = DefaultProxyMaxConns
		}
		p.sem = make(chan struct{}, n)
		p.stop, p.stopFn = context.WithCancel(context.Background())
		p.listeners = map[net.Listener]struct{}{}
		p.conns = map[io.Closer]struct{}{}
	})
}

func (p *Proxy) maxHeader() int               { return or64(p.MaxHeaderBytes, DefaultProxyMaxHeaderBytes) }
func (p *Proxy) headerTimeout() time.Duration { return or(p.HeaderTimeout, DefaultProxyHeaderTimeout) }
func (p *Proxy) idleTimeout() time.Duration   { return or(p.IdleTimeout, DefaultProxyIdleTimeout) }
func (p *Proxy) dialTimeout() time.Duration   { return or(p.DialTimeout, DefaultProxyDialTimeout) }

func or64(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}

// Serve accepts connections on ln and serves each on its own goroutine
// until Close is called (then it returns ErrProxyClosed) or Accept fails
// (then it returns that error). Serve closes ln when it returns.
func (p *Proxy) Serve(ln net.Listener) error {
	p.init()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return ErrProxyClosed
	}
	p.listeners[ln] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.listeners, ln)
		p.mu.Unlock()
		ln.Close()
		p.wg.Done()
	}()
	var backoff time.Duration
	for {
		select {
		case p.sem <- struct{}{}:
		case <-p.stop.Done():
			return ErrProxyClosed
		}
		c, err := ln.Accept()
		if err != nil {
			<-p.sem
			if p.stop.Err() != nil {
				return ErrProxyClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// A transient failure (EMFILE surfaces as a temporary
				// error too): back off as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		if !p.track(c) {
			<-p.sem
			c.Close()
			return ErrProxyClosed
		}
		go func() {
			defer p.wg.Done()
			defer func() { <-p.sem }()
			p.serve(p.connContext(c), c)
		}()
	}
}

// ServeConn serves one connection until it ends, on the calling goroutine,
// judging its requests in ctx (Context and ConnContext are not consulted).
// Cancelling ctx closes the connection and its tunnel.
// It is the entry point for a forwarder that accepts connections itself:
// procguard's sandbox, say, hands over each connection its child opened,
// with a context naming the child's command. ServeConn closes c. It waits
// for a free slot under MaxConns first; it returns ErrProxyClosed (and
// closes c) if Close was called, and ctx.Err() if ctx ends while it waits.
func (p *Proxy) ServeConn(ctx context.Context, c net.Conn) error {
	p.init()
	select {
	case p.sem <- struct{}{}:
	case <-p.stop.Done():
		c.Close()
		return ErrProxyClosed
	case <-ctx.Done():
		c.Close()
		return ctx.Err()
	}
	defer func() { <-p.sem }()
	if !p.track(c) {
		c.Close()
		return ErrProxyClosed
	}
	defer p.wg.Done()
	p.serve(ctx, c)
	return nil
}

// Close stops every Serve, closes every connection and tunnel, cancels the
// dials in progress, and returns once every goroutine of the proxy has
// ended. It is idempotent.
func (p *Proxy) Close() error {
	p.init()
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.stopFn()
		for ln := range p.listeners {
			ln.Close()
		}
		for c := range p.conns {
			c.Close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// track registers a connection (client or upstream) so that Close closes
// it, and counts a goroutine in the wait group; false when closed.
func (p *Proxy) track(c io.Closer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return true
}

// trackUpstream registers an upstream connection without counting a
// goroutine.
func (p *Proxy) trackUpstream(c io.Closer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c io.Closer) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) connContext(c net.Conn) context.Context {
	ctx := p.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if p.ConnContext != nil {
		ctx = p.ConnContext(ctx, c)
	}
	return ctx
}

// serve runs one client connection: it tells SOCKS5 from HTTP by the
// first byte and hands over. The connection is closed when it returns, and
// so is every upstream connection it opened.
func (p *Proxy) serve(ctx context.Context, c net.Conn) {
	defer p.untrack(c)
	defer c.Close()
	if ctx == nil {
		return
	}
	// Cancel the connection's dials when the proxy closes, and close the
	// connection when its scope is released: a released scope revokes
	// what was made from it, tunnels included.
	// The connection also ends when the context it is judged in ends
	// (ServeConn's caller cancels it when the client is gone).
	closeOnDone := context.AfterFunc(ctx, func() { c.Close() })
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer closeOnDone() // runs before cancel: a normal return closes c itself
	stop := context.AfterFunc(p.stop, cancel)
	defer stop()
	if done := audit.From(ctx).Done(); done != nil {
		p.wg.Add(1) // serve's own count is held, so this Add cannot race Close's Wait
		go func() {
			defer p.wg.Done()
			select {
			case <-done:
				c.Close()
			case <-ctx.Done():
			}
		}()
	}

	cc := &clientConn{Conn: c, p: p}
	cc.lr = io.LimitedReader{R: cc.dc(), N: int64(p.maxHeader())}
	cc.br = bufio.NewReaderSize(&cc.lr, 4096)
	cc.headMode(time.Now().Add(p.headerTimeout()))
	first, err := cc.br.Peek(1)
	if err != nil {
		return
	}
	switch first[0] {
	case socksVersion5:
		p.serveSOCKS(ctx, cc)
	case 4: // SOCKS4 and 4a carry no address type for IPv6 and no reply for a reason
		p.logFault(ctx, c, "socks4", errors.New("SOCKS4 is not supported; use SOCKS5"))
	default:
		p.serveHTTP(ctx, cc)
	}
}

// clientConn is a client connection with its buffered reader. Below the
// buffer, reads go through a LimitedReader (the head limit, lifted while a
// body or a tunnel flows) and a deadline reader.
type clientConn struct {
	net.Conn
	p  *Proxy
	lr io.LimitedReader
	br *bufio.Reader
}

// dc reads c, extending the read deadline by the idle timeout before each
// read unless a head deadline is in force (noIdle).
func (cc *clientConn) dc() io.Reader { return &idleReader{c: cc.Conn, idle: cc.p.idleTimeout()} }

// headMode puts the reader in "reading a head" mode: a fixed deadline and
// the size limit.
func (cc *clientConn) headMode(deadline time.Time) {
	cc.lr.N = int64(cc.p.maxHeader())
	ir := cc.lr.R.(*idleReader)
	ir.fixed = true
	cc.Conn.SetReadDeadline(deadline)
}

// bodyMode lifts the size limit and goes back to idle deadlines.
func (cc *clientConn) bodyMode() {
	cc.lr.N = 1<<63 - 1
	ir := cc.lr.R.(*idleReader)
	ir.fixed = false
}

// headTooLarge reports whether a failed head read ran into the limit.
func (cc *clientConn) headTooLarge() bool { return cc.lr.N <= 0 }

// idleReader extends c's read deadline by idle before each read, unless
// fixed (a head deadline is in force).
type idleReader struct {
	c     net.Conn
	idle  time.Duration
	fixed bool
}

func (r *idleReader) Read(b []byte) (int, error) {
	if !r.fixed {
		r.c.SetReadDeadline(time.Now().Add(r.idle))
	}
	return r.c.Read(b)
}

// idleWriter extends c's write deadline by idle before each write.
type idleWriter struct {
	c    net.Conn
	idle time.Duration
}

func (w idleWriter) Write(b []byte) (int, error) {
	w.c.SetWriteDeadline(time.Now().Add(w.idle))
	return w.c.Write(b)
}

// ClientName returns the name WithClient put in ctx, or "".
func ClientName(ctx context.Context) string {
	s, _ := ctx.Value(clientKey{}).(string)
	return s
}

type clientKey struct{}

// WithClient names the client a proxied connection is made for ("sandbox
// of git clone ...", "tool web_fetch"): the proxy adds it to the Detail of
// every event it judges in ctx, so records attribute the connection. Use
// it in Proxy.ConnContext or on the context given to ServeConn, together
// with audit.WithCall when the client is a host tool call.
func WithClient(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, clientKey{}, name)
}

// proxyDetail renders an event's Detail for a proxied request.
func proxyDetail(ctx context.Context, what string) string {
	d := "tcp via proxy: " + what
	if n := ClientName(ctx); n != "" {
		d += " for " + n
	}
	return d
}

// connect is the one decision and dial of a proxied request: authorize
// (canonicalise, judge the name, resolve once, judge every address) and
// then dial only the approved literals. The upstream connection is tracked
// so Close closes it; the caller untracks and closes it when done.
func (p *Proxy) connect(ctx context.Context, address, what string) (net.Conn, error) {
	d := p.Dialer
	if d == nil {
		d = &Dialer{}
	}
	g, err := authorizeProxied(ctx, address, d.Resolver, proxyDetail(ctx, what))
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, p.dialTimeout())
	defer cancel()
	up, err := d.dial(dctx, "tcp", address, g)
	if err != nil {
		return nil, err
	}
	if !p.trackUpstream(up) {
		up.Close()
		return nil, ErrProxyClosed
	}
	return up, nil
}

func (p *Proxy) closeUpstream(up net.Conn) {
	if up != nil {
		p.untrack(up)
		up.Close()
	}
}

func (p *Proxy) logFault(ctx context.Context, c net.Conn, proto string, err error) {
	if p.Logger == nil {
		return
	}
	p.Logger.LogAttrs(ctx, slog.LevelInfo, "proxy client fault",
		slog.String("client", c.RemoteAddr().String()), slog.String("protocol", proto), slog.String("err", err.Error()))
}

// requestLog is what the proxy logs of one request.
type requestLog struct {
	proto, method, target string
	status                int
	up, down              int64
	start                 time.Time
	err                   error
}

func (p *Proxy) logRequest(ctx context.Context, c net.Conn, r *requestLog) {
	if p.Logger == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String("client", c.RemoteAddr().String()),
		slog.String("protocol", r.proto),
		slog.String("method", r.method),
		slog.String("target", r.target),
		slog.Int("status", r.status),
		slog.Int64("bytes_up", r.up),
		slog.Int64("bytes_down", r.down),
		slog.Duration("duration", time.Since(r.start)),
	}
	if n := ClientName(ctx); n != "" {
		attrs = append(attrs, slog.String("for", n))
	}
	if call := audit.CallFrom(ctx); call != nil {
		attrs = append(attrs, slog.String("tool", call.Name))
	}
	if r.err != nil {
		attrs = append(attrs, slog.String("err", oneLine(r.err)))
	}
	p.Logger.LogAttrs(ctx, slog.LevelInfo, "proxy request", attrs...)
}

// tunnel copies bytes both ways between the client and up until both sides
// have sent EOF (a half-close is passed on with CloseWrite), either side
// fails, or no byte moved either way for IdleTimeout. It returns the bytes
// sent up and down.
func (p *Proxy) tunnel(cc *clientConn, up net.Conn) (upN, downN int64, err error) {
	cc.bodyMode()
	// Bytes the client sent after its request head are in the buffer.
	if n := cc.br.Buffered(); n > 0 {
		b, _ := cc.br.Peek(n)
		up.SetWriteDeadline(time.Now().Add(p.idleTimeout()))
		if _, err := up.Write(b); err != nil {
			return 0, 0, err
		}
		cc.br.Discard(n)
		upN = int64(n)
	}
	t := newIdleClock(p.idleTimeout())
	errc := make(chan error, 1)
	var down int64
	go func() {
		var err error
		down, err = t.pipe(cc.Conn, up)
		if err != nil {
			// Unblock the other direction.
			cc.Conn.Close()
			up.Close()
		}
		errc <- err
	}()
	n, err1 := t.pipe(up, cc.Conn)
	if err1 != nil {
		cc.Conn.Close()
		up.Close()
	}
	err2 := <-errc
	return upN + n, down, errors.Join(err1, err2)
}

// idleClock is the last time a tunnel moved a byte either way, as the
// monotonic time since the clock was made, kept in an atomic: both
// directions touch it on every read, and a mutex there was one more
// contended lock per chunk.
type idleClock struct {
	idle  time.Duration
	start time.Time
	last  atomic.Int64 // time.Duration since start
}

func newIdleClock(idle time.Duration) *idleClock {
	return &idleClock{idle: idle, start: time.Now()}
}

func (t *idleClock) touch(now time.Time) { t.last.Store(int64(now.Sub(t.start))) }

// since returns how long ago the tunnel last moved a byte.
func (t *idleClock) since() time.Duration {
	return time.Since(t.start) - time.Duration(t.last.Load())
}

// A tunnel direction copies through a small buffer while it moves little
// and through a large one while a read fills the small one (a bulk
// transfer: fewer, larger system calls). Both come from pools, and a
// direction holds one only from the moment its source has bytes to the
// end of the write that passes them on: it waits for the next bytes
// without a buffer (waitReadable), so an idle tunnel holds no copy memory
// (1,024 idle tunnels held 64 MiB of buffers before). During a bulk
// transfer a read that filled the buffer is followed by the next read
// directly, keeping the buffer, since more bytes are likely queued.
//
// The copy stays in user space on purpose: splice(2) between the two
// sockets (io.Copy's fast path for two *net.TCPConn) measured slower on
// loopback, in time and CPU, than these reads and writes; see docs/net.md,
// "Proxy benchmarks".
const (
	smallCopyBuf = 32 << 10
	largeCopyBuf = 1 << 20
)

var (
	smallBufs = sync.Pool{New: func() any { b := make([]byte, smallCopyBuf); return &b }}
	largeBufs = sync.Pool{New: func() any { b := make([]byte, largeCopyBuf); return &b }}
)

func getCopyBuf(large bool) *[]byte {
	if large {
		return largeBufs.Get().(*[]byte)
	}
	return smallBufs.Get().(*[]byte)
}

func putCopyBuf(bp *[]byte) {
	if len(*bp) == largeCopyBuf {
		largeBufs.Put(bp)
	} else {
		smallBufs.Put(bp)
	}
}

// pipe copies src to dst until src's EOF (then it half-closes dst) or an
// error. A read (or a wait for one) that times out while the other
// direction moved bytes within the idle time is retried: the tunnel, not
// one direction, is idle.
func (t *idleClock) pipe(dst, src net.Conn) (int64, error) {
	wait := waitReadable(src) // nil: src cannot be polled without a read
	var (
		total  int64
		bp     *[]byte // held only while bytes are in flight
		large  bool
		pushed time.Time
	)
	defer func() {
		if bp != nil {
			putCopyBuf(bp)
		}
	}()
	for {
		// Deadlines are pushed forward only when a quarter of the idle
		// time has passed since the last push: resetting a timer on every
		// read costs more than the copy of a small chunk. A connection may
		// so be closed after between three quarters and all of IdleTimeout
		// without a byte.
		if now := time.Now(); now.Sub(pushed) > t.idle/4 {
			pushed = now
			src.SetReadDeadline(now.Add(t.idle))
			dst.SetWriteDeadline(now.Add(t.idle))
		}
		if bp == nil {
			if wait != nil {
				if err := wait(); err != nil {
					if isTimeout(err) && t.since() < t.idle {
						continue
					}
					return total, err
				}
			}
			bp = getCopyBuf(large)
		}
		buf := *bp
		n, err := src.Read(buf)
		if n > 0 {
			t.touch(time.Now())
			w, werr := dst.Write(buf[:n])
			total += int64(w)
			if werr != nil {
				return total, werr
			}
		}
		switch {
		case n == len(buf) && !large:
			// A bulk transfer: go on with the large buffer.
			putCopyBuf(bp)
			bp, large = getCopyBuf(true), true
		case n == len(buf):
			// More is likely queued: read again, keeping the buffer.
		default:
			// The queue is drained: wait without a buffer, and go back
			// to the small one once a bulk transfer has slowed down.
			putCopyBuf(bp)
			bp = nil
			if large && n < smallCopyBuf {
				large = false
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if cw, ok := dst.(interface{ CloseWrite() error }); ok {
					cw.CloseWrite()
				}
				return total, nil
			}
			if isTimeout(err) && t.since() < t.idle {
				continue
			}
			return total, err
		}
	}
}
