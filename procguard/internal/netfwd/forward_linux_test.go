package netfwd

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestForward sends real HTTP through a forwarder in the test's own
// namespace: approved, the server answers; refused, the client sees its
// connection closed and the server never sees a connection.
func TestForward(t *testing.T) {
	for _, tc := range []struct {
		name    string
		approve bool
	}{
		{"approved", true},
		{"refused", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeak(t)
			srv := httpServer(t, "hello from the host")
			p := srv.port()
			a := &approve{allowed: map[Port]bool{p: tc.approve}}
			var mu sync.Mutex
			var reasons []string
			r := newRig(t, []Port{p}, a.dial, config{refused: func(got Port, reason string) {
				mu.Lock()
				defer mu.Unlock()
				if got != p {
					t.Errorf("refusal for port %v, want %v", got, p)
				}
				reasons = append(reasons, reason)
			}})
			url := "http://" + r.addr[p] + "/"

			body, err := get(url)
			wantCalls := []string{"tcp " + p.hostAddr()}
			if tc.approve {
				if err != nil || body != "hello from the host" {
					t.Fatalf("GET through the forwarder = %q, %v", body, err)
				}
			} else if err == nil {
				t.Fatalf("GET through a refused port answered %q", body)
			}

			if curl, err := exec.LookPath("curl"); err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), bound)
				out, err := exec.CommandContext(ctx, curl, "-sS", "--noproxy", "*", "--max-time", "5", url).CombinedOutput()
				cancel()
				if tc.approve && (err != nil || string(out) != "hello from the host") {
					t.Errorf("curl through the forwarder = %q, %v", out, err)
				}
				if !tc.approve && err == nil {
					t.Errorf("curl through a refused port succeeded: %q", out)
				}
				wantCalls = append(wantCalls, wantCalls[0])
			} else {
				t.Logf("curl not installed (%v); net/http only", err)
			}

			// The connection of a refused request is closed: the client
			// reads EOF, with nothing sent.
			if !tc.approve {
				c := r.dialTunnel(p)
				if err := readEOF(c, bound); err != nil {
					t.Errorf("refused connection: %v", err)
				}
				wantCalls = append(wantCalls, wantCalls[0])
			}

			serveErr, hostErr := r.shutdown()
			if serveErr != nil || hostErr != nil {
				t.Errorf("serve = %v, Host = %v; want nil, nil", serveErr, hostErr)
			}
			if got := a.Calls(); !slices.Equal(got, wantCalls) {
				t.Errorf("dial calls %q, want %q", got, wantCalls)
			}
			wantAccepts := int32(0)
			if tc.approve {
				wantAccepts = int32(len(wantCalls))
			}
			if n := srv.n.Load(); n != wantAccepts {
				t.Errorf("server accepted %d connections, want %d", n, wantAccepts)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.approve && len(reasons) > 0 {
				t.Errorf("refusals %q for an approved port", reasons)
			}
			if !tc.approve && (len(reasons) != len(wantCalls) || !strings.Contains(reasons[0], "not allowed by the policy")) {
				t.Errorf("refusals %q, want %d naming the policy", reasons, len(wantCalls))
			}
		})
	}
}

// TestHalfClose checks that an EOF travels as a half-close: the server
// answers only after reading to EOF, and the answer still comes back.
func TestHalfClose(t *testing.T) {
	noLeak(t)
	srv := replyServer(t)
	p := srv.port()
	a := &approve{allowed: map[Port]bool{p: true}}
	r := newRig(t, []Port{p}, a.dial, config{})

	c := r.dialTunnel(p)
	const size = 1 << 20
	if _, err := c.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "got 1048576" {
		t.Fatalf("answer after half-close = %q, %v", got, err)
	}
	if serveErr, hostErr := r.shutdown(); serveErr != nil || hostErr != nil {
		t.Errorf("serve = %v, Host = %v; want nil, nil", serveErr, hostErr)
	}
}

// TestTunnelLimit holds maxTunnels requests unanswered; the next connection
// is closed at once, without a request.
func TestTunnelLimit(t *testing.T) {
	noLeak(t)
	release := make(chan struct{})
	var calls atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		calls.Add(1)
		select {
		case <-release:
			return nil, errors.New("released")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p := Port{9}
	r := newRig(t, []Port{p}, dial, config{})
	held := make([]*net.TCPConn, maxTunnels)
	for i := range held {
		held[i] = r.dialTunnel(p)
	}
	poll(t, "every held connection to reach dial", func() bool { return calls.Load() == maxTunnels })

	extra := r.dialTunnel(p)
	if err := readEOF(extra, bound); err != nil {
		t.Errorf("connection beyond the limit: %v", err)
	}
	// The held ones are still open.
	held[0].SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := held[0].Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("held connection read = %v, want a timeout", err)
	}
	if n := calls.Load(); n != maxTunnels {
		t.Errorf("%d dial calls, want %d", n, maxTunnels)
	}

	// Released, they are refused and closed, and their slots come back.
	close(release)
	for i, c := range held {
		if err := readEOF(c, bound); err != nil {
			t.Fatalf("held connection %d after refusal: %v", i, err)
		}
	}
	after := r.dialTunnel(p)
	if err := readEOF(after, bound); err != nil {
		t.Errorf("connection after the release: %v", err)
	}
	poll(t, "the new connection to reach dial", func() bool { return calls.Load() == maxTunnels+1 })
	if serveErr, hostErr := r.shutdown(); serveErr != nil || hostErr != nil {
		t.Errorf("serve = %v, Host = %v; want nil, nil", serveErr, hostErr)
	}
}

// TestEnd ends a session with an open tunnel in each way it can end, and
// checks that the tunnel, the listener and every goroutine go with it.
func TestEnd(t *testing.T) {
	for _, tc := range []struct {
		name      string
		end       func(r *rig)
		wantServe error
	}{
		{"stop closed", (*rig).closeStop, nil},
		{"host gone", func(r *rig) {
			r.cancel()
			if err := r.hostResult(); !errors.Is(err, context.Canceled) {
				r.t.Errorf("Host after cancel = %v, want context.Canceled", err)
			}
			r.hostEnd.Close()
		}, ErrPeerClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeak(t)
			srv := replyServer(t)
			p := srv.port()
			a := &approve{allowed: map[Port]bool{p: true}}
			r := newRig(t, []Port{p}, a.dial, config{})
			c := r.dialTunnel(p)
			if _, err := c.Write([]byte("half a request")); err != nil {
				t.Fatal(err)
			}
			poll(t, "the server to accept", func() bool { return srv.n.Load() == 1 })

			tc.end(r)
			if err := r.serveResult(); err != tc.wantServe {
				t.Errorf("serve = %v, want %v", err, tc.wantServe)
			}
			if err := readEOF(c, bound); err != nil {
				t.Errorf("open tunnel after the end: %v", err)
			}
			if c, err := net.DialTimeout("tcp", r.addr[p], bound); err == nil {
				c.Close()
				t.Errorf("listener %s still accepts after the end", r.addr[p])
			}
		})
	}
}

// TestHostContext: when ctx ends, Host cancels the dials in flight, waits
// for them and returns ctx.Err().
func TestHostContext(t *testing.T) {
	noLeak(t)
	hostEnd, inside, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer hostEnd.Close()
	defer inside.Close()
	entered := make(chan struct{})
	var ended atomic.Bool
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		close(entered)
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // Host must wait for this
		ended.Store(true)
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	hostErr := make(chan error, 1)
	go func() { hostErr <- Host(ctx, hostEnd, dial) }()
	sendRaw(t, inside, msg{Kind: kindDial, ID: 1, Port: 80}.encode(nil))
	<-entered
	cancel()
	if err := wait(t, hostErr, "Host"); !errors.Is(err, context.Canceled) {
		t.Errorf("Host = %v, want context.Canceled", err)
	}
	if !ended.Load() {
		t.Error("Host returned before its dial did")
	}
}

// TestServeRefusesBadSetup: Serve and Host fail before doing anything when
// given what they cannot use.
func TestServeRefusesBadSetup(t *testing.T) {
	noLeak(t)
	busy := listenCounting(t)
	notSocket, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer notSocket.Close()
	stream, err := net.Listen("unix", t.TempDir()+"/s")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	streamFile, err := stream.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer streamFile.Close()
	_, inside, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer inside.Close()

	stop := make(chan struct{})
	close(stop)
	for _, tc := range []struct {
		name  string
		ctl   *os.File
		ports []Port
		want  string
	}{
		{"port 0", inside, []Port{{0}}, "port 0"},
		{"port twice", inside, []Port{{80}, {80}}, "listed twice"},
		{"port in use", inside, []Port{busy.port()}, "address already in use"},
		{"not a socket", notSocket, nil, "control socket"},
		{"stream socket", streamFile, nil, "want SOCK_SEQPACKET"},
		{"no socket", nil, nil, "no control socket"},
	} {
		err := Serve(tc.ctl, tc.ports, stop)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Serve = %v, want an error containing %q", tc.name, err, tc.want)
		}
		if tc.ports == nil {
			err := Host(context.Background(), tc.ctl, (&approve{}).dial)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: Host = %v, want an error containing %q", tc.name, err, tc.want)
			}
		}
	}
	if err := Host(context.Background(), inside, nil); err == nil {
		t.Error("Host with a nil dial returned nil")
	}
}
