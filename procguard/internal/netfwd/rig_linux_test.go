package netfwd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bound is the limit on every wait in these tests.
const bound = 10 * time.Second

type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// noLeak fails the test if, after every later cleanup has run, more
// goroutines are left than when it was called. Call it first.
func noLeak(t *testing.T) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(bound)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines left, %d before the test:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// countingListener counts the connections the real server accepts.
type countingListener struct {
	net.Listener
	n atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func (l *countingListener) port() Port {
	return Port{uint16(l.Addr().(*net.TCPAddr).Port)}
}

func listenCounting(t *testing.T) *countingListener {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: l}
	t.Cleanup(func() { l.Close() })
	return cl
}

// httpServer is a real net/http server on 127.0.0.1 answering body.
func httpServer(t *testing.T, body string) *countingListener {
	t.Helper()
	l := listenCounting(t)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return l
}

// replyServer reads each connection to EOF, then answers "got N" and
// closes: it only answers if the half-close reached it.
func replyServer(t *testing.T) *countingListener {
	t.Helper()
	l := listenCounting(t)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(bound))
				n, _ := io.Copy(io.Discard, c)
				io.WriteString(c, "got "+strconv.FormatInt(n, 10))
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return l
}

// get fetches url with a fresh client that keeps no connection.
func get(url string) (string, error) {
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: bound}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// approve dials 127.0.0.1 ports in allowed and refuses the rest, recording
// every call.
type approve struct {
	allowed map[Port]bool
	mu      sync.Mutex
	calls   []string // "network addr"
}

func (a *approve) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	a.mu.Lock()
	a.calls = append(a.calls, network+" "+addr)
	a.mu.Unlock()
	_, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p, _ := strconv.Atoi(ps)
	if !a.allowed[Port{uint16(p)}] {
		return nil, errors.New("port " + ps + " is not allowed by the policy")
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func (a *approve) Calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

// rig runs Host and serve over a real Pair in the test's own namespace;
// serve listens on 127.0.0.1:0 for each port, and addr says where.
type rig struct {
	t       *testing.T
	addr    map[Port]string
	stop    chan struct{}
	hostEnd *os.File
	inside  *os.File
	cancel  context.CancelFunc // Host's context

	stopOnce            sync.Once
	serveErr, hostErr   chan error
	serveOnce, hostOnce sync.Once
	gotServe, gotHost   error
}

func newRig(t *testing.T, ports []Port, dial dialFunc, cfg config) *rig {
	t.Helper()
	hostEnd, inside, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{
		t: t, addr: map[Port]string{}, stop: make(chan struct{}),
		hostEnd: hostEnd, inside: inside,
		serveErr: make(chan error, 1), hostErr: make(chan error, 1),
	}
	var ls []listener
	for _, p := range ports {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, listener{l, p})
		r.addr[p] = l.Addr().String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	r.cancel = cancel
	go func() { r.hostErr <- Host(ctx, hostEnd, dial) }()
	go func() { r.serveErr <- serve(inside, ls, r.stop, cfg) }()
	t.Cleanup(func() { r.shutdown() })
	return r
}

func (r *rig) closeStop() { r.stopOnce.Do(func() { close(r.stop) }) }

// serveResult waits for serve and returns what it returned.
func (r *rig) serveResult() error {
	r.serveOnce.Do(func() { r.gotServe = wait(r.t, r.serveErr, "serve") })
	return r.gotServe
}

// hostResult waits for Host and returns what it returned.
func (r *rig) hostResult() error {
	r.hostOnce.Do(func() { r.gotHost = wait(r.t, r.hostErr, "Host") })
	return r.gotHost
}

// shutdown closes stop, waits for serve, closes the namespace end (as the
// child exiting would) and waits for Host. It returns what they returned.
func (r *rig) shutdown() (serveErr, hostErr error) {
	r.closeStop()
	serveErr = r.serveResult()
	r.inside.Close()
	hostErr = r.hostResult()
	r.hostEnd.Close()
	r.cancel()
	return serveErr, hostErr
}

func wait(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(bound):
		t.Fatalf("%s did not return within %v", what, bound)
		return nil
	}
}

// dialTunnel connects to the forwarding listener for p.
func (r *rig) dialTunnel(p Port) *net.TCPConn {
	r.t.Helper()
	c, err := net.DialTimeout("tcp", r.addr[p], bound)
	if err != nil {
		r.t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(bound))
	r.t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// readEOF checks that c's peer closed it: reading ends in EOF or another
// non-timeout error (a reset), with no data, before within.
func readEOF(c net.Conn, within time.Duration) error {
	c.SetReadDeadline(time.Now().Add(within))
	var buf bytes.Buffer
	_, err := io.Copy(&buf, c)
	if buf.Len() > 0 {
		return errors.New("got data: " + buf.String())
	}
	if err != nil && !errors.Is(err, net.ErrClosed) && !closedByPeer(err) {
		return err
	}
	return nil
}

func closedByPeer(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// poll waits until cond holds, failing after bound.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
