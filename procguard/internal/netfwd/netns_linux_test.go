package netfwd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary the namespace side of TestNamespace
// instead of running tests.
const childEnv = "NETFWD_TEST_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(namespaceChild(spec))
	}
	os.Exit(m.Run())
}

// childSpec is what the parent tells the child, as JSON in childEnv.
type childSpec struct {
	Forward Port // the host's HTTP server, forwarded
	Closed  Port // a host TCP listener, not forwarded
	UDP     Port // a host UDP socket
}

// childReport is what the child prints on stdout, as JSON.
type childReport struct {
	Body       string // GET http://127.0.0.1:Forward/
	Curl       string // the same through curl, when installed
	CurlErr    string
	NoCurl     bool
	V6         bool   // ::1 exists in the namespace
	V6Body     string // GET http://[::1]:Forward/
	UDPSendErr string
	ClosedErr  string // dialling 127.0.0.1:Closed
	ServeErr   string // Serve after stop
}

// namespaceChild runs inside new user and net namespaces with the control
// socket as fd 3; it returns the exit code.
func namespaceChild(specJSON string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "child spec:", err)
		return 2
	}
	if err := LoopbackUp(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	stop := make(chan struct{})
	serveErr := make(chan error, 1)
	go func() { serveErr <- Serve(os.NewFile(3, "ctl"), []Port{spec.Forward}, stop) }()

	var rep childReport
	deadline := time.Now().Add(bound)
	url := "http://127.0.0.1:" + spec.Forward.String() + "/"
	for {
		// Until Serve listens the connection is refused at once.
		body, err := get(url)
		if err == nil {
			rep.Body = body
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "GET through the forwarder:", err)
			return 2
		}
		time.Sleep(5 * time.Millisecond)
	}
	if curl, err := exec.LookPath("curl"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		out, err := exec.CommandContext(ctx, curl, "-sS", "--noproxy", "*", "--max-time", "5", url).CombinedOutput()
		cancel()
		rep.Curl = string(out)
		if err != nil {
			rep.CurlErr = err.Error()
		}
	} else {
		rep.NoCurl = true
	}
	if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		l.Close()
		rep.V6 = true
		rep.V6Body, _ = get("http://[::1]:" + spec.Forward.String() + "/")
	}

	if u, err := net.Dial("udp4", "127.0.0.1:"+spec.UDP.String()); err != nil {
		rep.UDPSendErr = err.Error()
	} else {
		_, err := u.Write([]byte("udp from the namespace"))
		if err != nil {
			rep.UDPSendErr = err.Error()
		}
		u.Close()
	}
	if c, err := net.DialTimeout("tcp4", "127.0.0.1:"+spec.Closed.String(), 2*time.Second); err != nil {
		rep.ClosedErr = err.Error()
	} else {
		c.Close()
	}

	close(stop)
	select {
	case err := <-serveErr:
		if err != nil {
			rep.ServeErr = err.Error()
		}
	case <-time.After(bound):
		rep.ServeErr = "Serve did not return after stop"
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// TestNamespace runs the namespace side in a real user+net namespace: the
// forwarded port reaches the host's server over IPv4 (and IPv6 when the
// namespace has it), and neither UDP to a host socket nor TCP to a host
// port that is not forwarded gets out.
func TestNamespace(t *testing.T) {
	noLeak(t)
	srv := httpServer(t, "hello across namespaces")
	closed := listenCounting(t)
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	spec := childSpec{
		Forward: srv.port(),
		Closed:  closed.port(),
		UDP:     Port{uint16(udp.LocalAddr().(*net.UDPAddr).Port)},
	}
	specJSON, _ := json.Marshal(spec)

	hostEnd, inside, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer hostEnd.Close()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(specJSON))
	cmd.ExtraFiles = []*os.File{inside}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		inside.Close()
		t.Skipf("cannot start a child in new user and net namespaces: %v", err)
	}
	inside.Close() // the child holds the only copy now

	a := &approve{allowed: map[Port]bool{spec.Forward: true}}
	hostErr := make(chan error, 1)
	go func() { hostErr <- Host(ctx, hostEnd, a.dial) }()
	werr := cmd.Wait()
	if err := wait(t, hostErr, "Host"); err != nil {
		t.Errorf("Host after the child exited = %v, want nil", err)
	}
	if werr != nil {
		t.Fatalf("child: %v\nstderr:\n%s", werr, stderr.Bytes())
	}
	var rep childReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("child report %q: %v\nstderr:\n%s", stdout.Bytes(), err, stderr.Bytes())
	}
	t.Logf("child report: %+v", rep)

	if rep.Body != "hello across namespaces" {
		t.Errorf("GET in the namespace = %q", rep.Body)
	}
	if rep.NoCurl {
		t.Log("curl not installed; net/http only")
	} else if rep.Curl != "hello across namespaces" || rep.CurlErr != "" {
		t.Errorf("curl in the namespace = %q, %s", rep.Curl, rep.CurlErr)
	}
	if rep.V6 && rep.V6Body != "hello across namespaces" {
		t.Errorf("GET [::1] in the namespace = %q", rep.V6Body)
	}
	if !rep.V6 {
		t.Log("no ::1 in the namespace; IPv6 listener not tested")
	}
	if rep.ServeErr != "" {
		t.Errorf("Serve after stop: %s", rep.ServeErr)
	}
	if rep.ClosedErr == "" || closed.n.Load() != 0 {
		t.Errorf("TCP to unforwarded host port %v: dial error %q, host accepted %d", spec.Closed, rep.ClosedErr, closed.n.Load())
	}
	udp.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, from, err := udp.ReadFrom(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("host UDP socket got %d bytes from %v (err %v); want nothing", n, from, err)
	}
	for _, c := range a.Calls() {
		if c != "tcp "+spec.Forward.hostAddr() {
			t.Errorf("Host dialled %q; only %v is forwarded", c, spec.Forward)
		}
	}
	if n := srv.n.Load(); n == 0 || int(n) != len(a.Calls()) {
		t.Errorf("server accepted %d connections for %d dials", n, len(a.Calls()))
	}
}
