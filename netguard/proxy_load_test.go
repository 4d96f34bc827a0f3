package netguard

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/auditguard/auditguard/policy"
)

// TestProxyLoad opens 1,000 concurrent tunnels (half HTTP CONNECT, half
// SOCKS5) through one proxy to a loopback echo server, checks every byte
// comes back, closes the proxy, and checks no goroutine and no file
// descriptor is left. The whole run is bounded by a 60 s context.
func TestProxyLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test skipped in -short mode")
	}
	const tunnels = 1000
	const payload = 16 << 10
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)

	// The echo server joins all of its goroutines when stopped.
	eln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var ewg sync.WaitGroup
	var emu sync.Mutex
	var econns []net.Conn
	ewg.Add(1)
	go func() {
		defer ewg.Done()
		for {
			c, err := eln.Accept()
			if err != nil {
				return
			}
			emu.Lock()
			econns = append(econns, c)
			emu.Unlock()
			ewg.Add(1)
			go func() {
				defer ewg.Done()
				// A user-space copy: io.Copy between TCP sockets would
				// splice through pipes the runtime caches, which the
				// descriptor count would see.
				io.Copy(struct{ io.Writer }{c}, struct{ io.Reader }{c})
				c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	echo := eln.Addr().String()

	ctx, _ := enter(t, []policy.NetRule{{CIDR: "127.0.0.1"}})
	p := NewProxy(ctx)
	p.MaxConns = 2 * tunnels
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(pln) }()

	runCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	deadline, _ := runCtx.Deadline()
	data := bytes.Repeat([]byte("0123456789abcdef"), payload/16)
	var wg sync.WaitGroup
	errs := make(chan error, tunnels)
	start := make(chan struct{})
	conns := make([]net.Conn, tunnels)
	for i := range tunnels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c, err := openTunnel(pln.Addr().String(), echo, i%2 == 0, deadline)
			if err != nil {
				errs <- fmt.Errorf("tunnel %d: %w", i, err)
				return
			}
			conns[i] = c
			go c.Write(data) // written while the echo is read back
			got := make([]byte, len(data))
			if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, data) {
				errs <- fmt.Errorf("tunnel %d: echo mismatch (%v)", i, err)
			}
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d tunnels, %d KiB each way, in %v", tunnels, payload>>10, time.Since(began))

	// Close with the tunnels still open: Close must end them all.
	p.Close()
	if err := <-served; err != ErrProxyClosed {
		t.Errorf("Serve: %v", err)
	}
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	eln.Close()
	emu.Lock()
	for _, c := range econns {
		c.Close()
	}
	emu.Unlock()
	ewg.Wait()
	waitGoroutines(t, goroutines)
	for end := time.Now().Add(5 * time.Second); openFDs(t) > fds && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := openFDs(t); n > fds {
		t.Errorf("%d file descriptors left over", n-fds)
	}
}

// openTunnel opens a tunnel to target through the proxy at addr, with HTTP
// CONNECT or SOCKS5.
func openTunnel(addr, target string, socks bool, deadline time.Time) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(deadline)
	if socks {
		ap, _ := netipParseAddrPort(target)
		a := ap.Addr().As4()
		msg := []byte{5, 1, 0, 5, 1, 0, 1, a[0], a[1], a[2], a[3], byte(ap.Port() >> 8), byte(ap.Port())}
		if _, err := c.Write(msg); err != nil {
			c.Close()
			return nil, err
		}
		var r [12]byte
		if _, err := io.ReadFull(c, r[:]); err != nil || r[3] != 0 {
			c.Close()
			return nil, fmt.Errorf("socks reply %v %v", r, err)
		}
		return c, nil
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	// The targets of these tests never speak first, so no tunnel byte can
	// follow the head before the client writes: a buffered read of the
	// head (as clients do) leaves nothing behind, and the check says so.
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		c.Close()
		return nil, fmt.Errorf("CONNECT: %v %v", resp, err)
	}
	if n := br.Buffered(); n > 0 {
		c.Close()
		return nil, fmt.Errorf("CONNECT: %d bytes after the response head before the client spoke", n)
	}
	return c, nil
}

func openFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents)
}

func netipParseAddrPort(s string) (netip.AddrPort, error) { return netip.ParseAddrPort(s) }

// TestProxyIdleTunnelsHoldNoBuffers: tunnels that moved bytes and then
// went quiet hold no copy buffer while they wait (each direction used to
// hold 32 KiB, 64 KiB a tunnel). It opens 256 tunnels, echoes 40 KiB
// through each (enough to switch a direction to its large buffer and
// back), and compares the live heap before and after, with the buffer
// pools emptied by two collections.
func TestProxyIdleTunnelsHoldNoBuffers(t *testing.T) {
	const tunnels = 256
	// An echo server of its own: newEcho's io.Copy holds 32 KiB per
	// connection while it waits, in this process's heap too.
	eln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var ewg sync.WaitGroup
	defer ewg.Wait()
	defer eln.Close()
	ewg.Add(1)
	go func() {
		defer ewg.Done()
		for {
			c, err := eln.Accept()
			if err != nil {
				return
			}
			ewg.Add(1)
			go func() {
				defer ewg.Done()
				defer c.Close()
				io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{c}, make([]byte, 1<<10))
			}()
		}
	}()
	echo := eln.Addr().String()
	ctx, _ := enter(t, []policy.NetRule{{CIDR: "127.0.0.1"}})
	p := NewProxy(ctx)
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(pln)
	defer p.Close()
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC() // a sync.Pool's items survive one collection
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	data := bytes.Repeat([]byte("x"), 40<<10)
	got := make([]byte, len(data))
	deadline := time.Now().Add(30 * time.Second)
	defer p.Close() // before the echo server is waited for
	// Warm up what every tunnel shares (the guard's caches, the pools of
	// the net package) before the baseline.
	warm, err := openTunnel(pln.Addr().String(), echo, true, deadline)
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close()
	before := heap()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range tunnels {
		c, err := openTunnel(pln.Addr().String(), echo, i%2 == 0, deadline)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		go c.Write(data)
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("tunnel %d: echo mismatch (%v)", i, err)
		}
	}
	per := int64(heap()-before) / tunnels
	t.Logf("%d idle tunnels: %d bytes of heap each", tunnels, per)
	if per > 32<<10 {
		t.Errorf("an idle tunnel holds %d bytes of heap; its directions hold copy buffers while they wait", per)
	}
}
