package netfwd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sendRaw writes packet p on f, with fds as SCM_RIGHTS.
func sendRaw(t *testing.T, f *os.File, p []byte, fds ...int) {
	t.Helper()
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	rc.Control(func(fd uintptr) { serr = unix.Sendmsg(int(fd), p, oob, nil, 0) })
	if serr != nil {
		t.Fatal(serr)
	}
}

// pipeProbes makes n pipes and returns their write ends, to be sent, and a
// check that every write end was closed by whoever received it: the read
// end sees EOF only when no copy of the write end is left.
func pipeProbes(t *testing.T, n int) (fds []int, allClosed func() error) {
	t.Helper()
	var readers []*os.File
	for range n {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		fd, err := unix.Dup(int(w.Fd()))
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
		readers = append(readers, r)
	}
	return fds, func() error {
		closeFDs(fds) // our copies
		for i, r := range readers {
			r.SetReadDeadline(time.Now().Add(bound))
			if _, err := r.Read(make([]byte, 1)); err != io.EOF {
				return fmt.Errorf("sent descriptor %d is still open somewhere (read: %v)", i, err)
			}
		}
		return nil
	}
}

func raw(version byte, k kind, id uint32, body ...byte) []byte {
	return append([]byte{version, byte(k), byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}, body...)
}

// TestHostMalformed sends Host what an honest namespace side never sends;
// each ends the session with ErrMalformed, and descriptors that came along
// are closed.
func TestHostMalformed(t *testing.T) {
	dial := []byte{0, 80}
	for _, tc := range []struct {
		name    string
		packets [][]byte
		fds     int // sent with the last packet
	}{
		{"short", [][]byte{{wireVersion, byte(kindDial)}}, 0},
		{"version 2", [][]byte{raw(2, kindDial, 1, dial...)}, 0},
		{"unknown kind", [][]byte{raw(wireVersion, 7, 1)}, 0},
		{"id 0", [][]byte{raw(wireVersion, kindDial, 0, dial...)}, 0},
		{"port 0", [][]byte{raw(wireVersion, kindDial, 1, 0, 0)}, 0},
		{"ok to the host", [][]byte{raw(wireVersion, kindOK, 1)}, 0},
		{"refused to the host", [][]byte{raw(wireVersion, kindRefused, 1, 'x')}, 0},
		{"dial with a descriptor", [][]byte{raw(wireVersion, kindDial, 1, dial...)}, 1},
		{"dial with too many descriptors", [][]byte{raw(wireVersion, kindDial, 1, dial...)}, maxFDs + 3},
		{"oversized", [][]byte{raw(wireVersion, kindRefused, 1, []byte(strings.Repeat("x", maxMsg))...)}, 0},
		{"id reused in flight", [][]byte{raw(wireVersion, kindDial, 5, dial...), raw(wireVersion, kindDial, 5, dial...)}, 0},
		{"too many in flight", func() (ps [][]byte) {
			for id := range uint32(maxTunnels + 1) {
				ps = append(ps, raw(wireVersion, kindDial, id+1, dial...))
			}
			return ps
		}(), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeak(t)
			hostEnd, inside, err := Pair()
			if err != nil {
				t.Fatal(err)
			}
			defer hostEnd.Close()
			defer inside.Close()
			block := func(ctx context.Context, network, addr string) (net.Conn, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			hostErr := make(chan error, 1)
			go func() { hostErr <- Host(ctx, hostEnd, block) }()
			fds, allClosed := pipeProbes(t, tc.fds)
			for i, p := range tc.packets {
				if i == len(tc.packets)-1 {
					sendRaw(t, inside, p, fds...)
				} else {
					sendRaw(t, inside, p)
				}
			}
			if err := wait(t, hostErr, "Host"); !errors.Is(err, ErrMalformed) {
				t.Errorf("Host = %v, want ErrMalformed", err)
			}
			if err := allClosed(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestServeMalformed sends serve what an honest host never sends; each ends
// the session with ErrMalformed, closes the listeners, and closes the
// descriptors that came along.
func TestServeMalformed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		packet []byte
		fds    int
	}{
		{"ok for no request", raw(wireVersion, kindOK, 1), 1},
		{"refused for no request", raw(wireVersion, kindRefused, 1, 'n', 'o'), 0},
		{"ok without a descriptor", raw(wireVersion, kindOK, 1), 0},
		{"ok with two descriptors", raw(wireVersion, kindOK, 1), 2},
		{"ok with too many descriptors", raw(wireVersion, kindOK, 1), maxFDs + 3},
		{"refused with a descriptor", raw(wireVersion, kindRefused, 1), 1},
		{"dial to the namespace side", raw(wireVersion, kindDial, 1, 0, 80), 0},
		{"reason not UTF-8", raw(wireVersion, kindRefused, 1, 0xc3), 0},
		{"reason too long", raw(wireVersion, kindRefused, 1, []byte(strings.Repeat("x", maxReason+1))...), 0},
		{"version 0", raw(0, kindOK, 1), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeak(t)
			hostEnd, inside, err := Pair()
			if err != nil {
				t.Fatal(err)
			}
			defer hostEnd.Close()
			defer inside.Close()
			l, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			serveErr := make(chan error, 1)
			go func() { serveErr <- serve(inside, []listener{{l, Port{80}}}, nil, config{}) }()
			fds, allClosed := pipeProbes(t, tc.fds)
			sendRaw(t, hostEnd, tc.packet, fds...)
			if err := wait(t, serveErr, "serve"); !errors.Is(err, ErrMalformed) {
				t.Errorf("serve = %v, want ErrMalformed", err)
			}
			if c, err := net.DialTimeout("tcp", addr, bound); err == nil {
				c.Close()
				t.Errorf("listener %s still accepts after a malformed message", addr)
			}
			if err := allClosed(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestEmptyPacket: a zero-length packet reads as the peer closing, on both
// sides.
func TestEmptyPacket(t *testing.T) {
	noLeak(t)
	hostEnd, inside, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer hostEnd.Close()
	defer inside.Close()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	hostErr := make(chan error, 1)
	go func() { hostErr <- Host(ctx, hostEnd, (&approve{}).dial) }()
	serveErr := make(chan error, 1)
	go func() { serveErr <- serve(inside, nil, nil, config{}) }()
	sendRaw(t, inside, nil)
	sendRaw(t, hostEnd, nil)
	if err := wait(t, hostErr, "Host"); err != nil {
		t.Errorf("Host = %v, want nil", err)
	}
	if err := wait(t, serveErr, "serve"); err != ErrPeerClosed {
		t.Errorf("serve = %v, want ErrPeerClosed", err)
	}
}

// TestServeMarksCloseOnExec: the control socket comes through ExtraFiles
// without close-on-exec; serve sets it.
func TestServeMarksCloseOnExec(t *testing.T) {
	noLeak(t)
	hostEnd, inside, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer hostEnd.Close()
	defer inside.Close()
	fdFlags := func() int {
		flags, err := unix.FcntlInt(inside.Fd(), unix.F_GETFD, 0)
		if err != nil {
			t.Fatal(err)
		}
		return flags
	}
	if _, err := unix.FcntlInt(inside.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	serveErr := make(chan error, 1)
	go func() { serveErr <- serve(inside, nil, stop, config{}) }()
	poll(t, "close-on-exec on the control socket", func() bool { return fdFlags()&unix.FD_CLOEXEC != 0 })
	close(stop)
	if err := wait(t, serveErr, "serve"); err != nil {
		t.Errorf("serve = %v, want nil", err)
	}
}
