package netguard

import (
	"io"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/auditguard/auditguard/policy"
)

// benchSide is one way of reaching the loopback server: direct, or through
// the proxy by SOCKS5 or HTTP CONNECT. The control side is direct too, on
// connections of its own: its ratio to direct is the benchmark's noise
// floor (two sides doing the same thing), so a tunnel's ratio means
// something only as far as control's is near 1.
type benchSide struct {
	name     string
	open     func() (net.Conn, error)
	ns       []int64
	ratio    []float64 // this side's time over direct's, per iteration
	cpu      []int64   // the process's CPU time during the op
	cpuRatio []float64 // this side's CPU time over direct's, per iteration
	mallocs  uint64
}

// proxyBench starts a sink server (it reads size bytes, then answers one
// byte, for as long as the connection lasts; size 1 makes it an echo of one
// byte) and a proxy allowed to reach it, and returns the three sides.
func proxyBench(b *testing.B, size int) []*benchSide {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, size)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					if _, err := c.Write([]byte{1}); err != nil {
						return
					}
				}
			}()
		}
	}()
	b.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	target := ln.Addr().String()
	ctx := benchScope(b, []policy.NetRule{{CIDR: "127.0.0.1"}})
	p := NewProxy(ctx)
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go p.Serve(pln)
	b.Cleanup(func() { p.Close() })
	far := time.Now().Add(time.Hour)
	return []*benchSide{
		{name: "direct", open: func() (net.Conn, error) { return net.Dial("tcp", target) }},
		{name: "control", open: func() (net.Conn, error) { return net.Dial("tcp", target) }},
		{name: "socks5", open: func() (net.Conn, error) { return openTunnel(pln.Addr().String(), target, true, far) }},
		{name: "connect", open: func() (net.Conn, error) { return openTunnel(pln.Addr().String(), target, false, far) }},
	}
}

// runSides times one op per side per iteration, the first side rotating,
// and reports per side the median time (*-us), the mean allocations of
// this process (*-allocs: the proxy's share included, since it runs here),
// and the median of the per-iteration ratios side/direct (*-ratio). Where
// the platform reports it, it also reports the process's CPU time per op
// (*-cpu-us) and its per-iteration ratio to direct's (*-cpu-ratio): the
// client, the proxy and the server all run in this process, so that is
// the whole cost of the op, and unlike the elapsed time it does not grow
// with other jobs' load on the machine.
func runSides(b *testing.B, sides []*benchSide, op func(i int, s *benchSide) error) {
	var ms runtime.MemStats
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var direct, directCPU int64
		times := make([]int64, len(sides))
		cpus := make([]int64, len(sides))
		for j := range sides {
			k := (i + j) % len(sides)
			s := sides[k]
			runtime.ReadMemStats(&ms)
			before := ms.Mallocs
			c0, _ := processCPU()
			t0 := time.Now()
			if err := op(i, s); err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			d := time.Since(t0).Nanoseconds()
			c1, _ := processCPU()
			cpus[k] = int64(c1 - c0)
			s.cpu = append(s.cpu, cpus[k])
			runtime.ReadMemStats(&ms)
			s.mallocs += ms.Mallocs - before
			s.ns = append(s.ns, d)
			times[k] = d
			if k == 0 {
				direct, directCPU = d, cpus[k]
			}
		}
		for k, s := range sides {
			s.ratio = append(s.ratio, float64(times[k])/float64(direct))
			if directCPU > 0 {
				s.cpuRatio = append(s.cpuRatio, float64(cpus[k])/float64(directCPU))
			}
		}
	}
	b.StopTimer()
	n := len(sides[0].ns)
	if n == 0 {
		return
	}
	for _, s := range sides {
		b.ReportMetric(float64(median(s.ns))/1e3, s.name+"-us")
		b.ReportMetric(float64(s.mallocs)/float64(n), s.name+"-allocs")
		if s.name != "direct" {
			b.ReportMetric(median(s.ratio), s.name+"-ratio")
		}
		if _, ok := processCPU(); ok {
			b.ReportMetric(float64(median(s.cpu))/1e3, s.name+"-cpu-us")
			if s.name != "direct" && len(s.cpuRatio) > 0 {
				b.ReportMetric(median(s.cpuRatio), s.name+"-cpu-ratio")
			}
		}
	}
}

// BenchmarkProxyTunnelSetup: open a connection (direct, or a tunnel
// through the proxy: accept, handshake, one decision, upstream dial), move
// one byte each way, close.
func BenchmarkProxyTunnelSetup(b *testing.B) {
	sides := proxyBench(b, 1)
	runSides(b, sides, func(_ int, s *benchSide) error {
		c, err := s.open()
		if err != nil {
			return err
		}
		defer c.Close()
		c.(*net.TCPConn).SetLinger(0) // no TIME_WAIT pile-up, on every side alike
		if _, err := c.Write([]byte{0}); err != nil {
			return err
		}
		_, err = io.ReadFull(c, make([]byte, 1))
		return err
	})
}

// BenchmarkProxyThroughput1MiB: send 1 MiB over an open connection (direct,
// or an open tunnel) and wait for the server's one-byte acknowledgement.
// Target: the tunnels' ratio within 1.2.
//
// Each side has a pool of connections, opened and warmed by one transfer
// outside the timing, and iteration i uses connection i mod the pool's
// size on every side. One connection per side would not do: on loopback a
// connection keeps its own TCP state (congestion window after a spurious
// retransmission, autotuned buffers), and two direct connections measured
// 0.25x to 1.2x of each other for a whole run, so a run's ratio said more
// about which connection drew the short straw than about the proxy. With a
// pool every side samples many connections; the control side's ratio shows
// what is left of that noise.
func BenchmarkProxyThroughput1MiB(b *testing.B) {
	const size = 1 << 20
	const pool = 8
	sides := proxyBench(b, size)
	data := make([]byte, size)
	ack := make([]byte, 1)
	send := func(c net.Conn) error {
		if _, err := c.Write(data); err != nil {
			return err
		}
		_, err := io.ReadFull(c, ack)
		return err
	}
	conns := map[*benchSide][]net.Conn{}
	for _, s := range sides {
		for range pool {
			c, err := s.open()
			if err != nil {
				b.Fatal(err)
			}
			c.SetDeadline(time.Time{})
			b.Cleanup(func() { c.Close() })
			if err := send(c); err != nil {
				b.Fatal(err)
			}
			conns[s] = append(conns[s], c)
		}
	}
	b.SetBytes(size * int64(len(sides)))
	runSides(b, sides, func(i int, s *benchSide) error { return send(conns[s][i%pool]) })
}

func median[T int64 | float64](s []T) T {
	s = slices.Clone(s)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
