package audit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/internal/proctree"
	"github.com/auditguard/auditguard/netguard"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// countFds counts this process's open descriptors.
func countFds(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

// liveDescendants describes the processes below this one that are not
// zombies (a killed child waits, as a zombie, for its Wait; it runs
// nothing): pid and command line.
func liveDescendants(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, pid := range proctree.Descendants(os.Getpid()) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("%d %q", pid, cmd))
	}
	return out
}

// settle polls cond until it holds or 5 s pass.
func settle(cond func() bool) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// Release races 12 goroutines that write files, dial, make HTTP requests
// and start commands through one scope, 40 rounds over. When release
// returns: nothing new appears on disk or at the servers, no operation
// started after it succeeds, files and connections made through the scope
// fail with "closed", and no child runs. At the end, descriptors and
// goroutines are back where they started. Everything is real: temp-dir
// files, loopback servers, child processes.
func TestReleaseEndsEverythingTheScopeMade(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	rounds, workers, maxOps := 40, 12, 8
	if testing.Short() {
		rounds = 8
	}
	t.Setenv("HOME", t.TempDir())
	sandbox.SetPrewarm(false) // no idle trampolines among the children we count
	t.Cleanup(func() { sandbox.SetPrewarm(true) })

	var handled atomic.Int64
	hsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handled.Add(1)
		io.WriteString(w, "ok")
	}))
	defer hsrv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("cannot listen on loopback: %v", err)
	}
	var accepted atomic.Int64
	var srvWG sync.WaitGroup
	srvWG.Add(1)
	go func() {
		defer srvWG.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			srvWG.Add(1)
			go func() { defer srvWG.Done(); io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	defer func() { ln.Close(); srvWG.Wait() }()
	_, tcpPort, _ := net.SplitHostPort(ln.Addr().String())
	_, httpPort, _ := net.SplitHostPort(strings.TrimPrefix(hsrv.URL, "http://"))

	dir, _ := filepath.EvalSymlinks(t.TempDir())
	pol, err := policy.New(policy.Spec{
		WriteRoots: []string{dir},
		Exec:       policy.ExecSpec{Rules: []policy.ExecRule{{Program: sleep}}},
		Net:        policy.NetSpec{Rules: []policy.NetRule{{CIDR: "127.0.0.1/32", Ports: []string{tcpPort, httpPort}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}

	listDir := func() int {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}

	// A warm-up round loads what the process keeps for good (the resolver,
	// http's and the runtime's own goroutines), so the baseline is fair.
	run := func(round int) {
		ctx, release, err := g.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		fsys := fsguard.New(ctx, afero.NewOsFs())
		client := netguard.NewClient(ctx)
		var released atomic.Bool
		var lateOK atomic.Int64 // operations started after release returned that succeeded
		var held struct {
			sync.Mutex
			files []afero.File
			conns []net.Conn
		}
		var wg sync.WaitGroup
		var started sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			started.Add(1)
			go func() {
				defer wg.Done()
				first := true
				for i := 0; ; i++ {
					if i == maxOps {
						// Enough for this round: one more try once release
						// returned, which must be denied.
						for !released.Load() {
							time.Sleep(time.Millisecond)
						}
					}
					after := released.Load()
					var err error
					switch w % 4 {
					case 0:
						var f afero.File
						f, err = fsys.Create(filepath.Join(dir, fmt.Sprintf("r%d-w%d-%d", round, w, i)))
						if err == nil {
							held.Lock()
							held.files = append(held.files, f)
							held.Unlock()
						}
					case 1:
						var c net.Conn
						c, err = (&netguard.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
						if err == nil {
							held.Lock()
							held.conns = append(held.conns, c)
							held.Unlock()
						}
					case 2:
						var resp *http.Response
						resp, err = client.Get(hsrv.URL)
						if err == nil {
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
					case 3:
						cmd := procguard.CommandContext(ctx, sleep, "30")
						cmd.Dir = dir
						if err = cmd.Start(); err == nil {
							wg.Add(1)
							go func() { defer wg.Done(); cmd.Wait() }() // returns once release killed it
						}
					}
					if first {
						first = false
						started.Done()
					}
					if err == nil && after {
						lateOK.Add(1)
					}
					if err != nil {
						if !errors.Is(err, audit.ErrScopeClosed) {
							t.Errorf("worker %d: %v", w, err)
						}
						return
					}
				}
			}()
		}
		started.Wait()
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		release()
		released.Store(true)
		disk, hs, acc := listDir(), handled.Load(), accepted.Load()
		if live := liveDescendants(t); len(live) != 0 {
			t.Errorf("round %d: children alive after release: %v", round, live)
		}
		held.Lock()
		for _, f := range held.files {
			if _, err := f.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
				t.Errorf("round %d: write to a file after release: %v", round, err)
			}
		}
		for _, c := range held.conns {
			if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
				t.Errorf("round %d: write to a connection after release: %v", round, err)
			}
		}
		held.Unlock()
		wg.Wait()
		time.Sleep(10 * time.Millisecond)
		if n := lateOK.Load(); n != 0 {
			t.Errorf("round %d: %d operations started after release succeeded", round, n)
		}
		if d := listDir(); d != disk {
			t.Errorf("round %d: %d entries on disk after release, %d when it returned", round, d, disk)
		}
		if h := handled.Load(); h != hs {
			t.Errorf("round %d: the HTTP server handled %d requests after release returned", round, h-hs)
		}
		// Connections are accepted in the kernel during the dial; the
		// server's Accept loop may count them a moment later.
		if !settle(func() bool { return accepted.Load() >= acc }) || accepted.Load() < acc {
			t.Errorf("round %d: accepted %d < %d", round, accepted.Load(), acc)
		}
	}
	run(-1)
	if !settle(func() bool { return len(liveDescendants(t)) == 0 }) {
		t.Fatal("children left after the warm-up round")
	}
	time.Sleep(50 * time.Millisecond)
	fds0, gr0 := countFds(t), runtime.NumGoroutine()
	for round := range rounds {
		run(round)
		if t.Failed() {
			break
		}
	}
	if !settle(func() bool { return countFds(t) <= fds0 }) {
		t.Errorf("descriptors: %d after %d rounds, %d before", countFds(t), rounds, fds0)
	}
	if !settle(func() bool { return runtime.NumGoroutine() <= gr0 }) {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d after %d rounds, %d before\n%s", runtime.NumGoroutine(), rounds, gr0, buf[:runtime.Stack(buf, true)])
	}
}

// A thousand cycles of Enter, fsguard.New, a write and release, with the
// Fs never closed: the scope's release closes its root handles, so the
// descriptor count stays flat.
func TestReleaseClosesRootHandlesOfUnclosedFs(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	pol, err := policy.New(policy.Spec{WriteRoots: []string{dir, filepath.Join(dir, "sub")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "lnk")); err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	cycle := func(i int) {
		ctx, release, err := g.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		fsys := fsguard.New(ctx, afero.NewOsFs())
		if err := afero.WriteFile(fsys, filepath.Join(dir, "f"), []byte(strconv.Itoa(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		// Through a symbolic link: the slow path, through os.Root.
		if err := afero.WriteFile(fsys, filepath.Join(dir, "lnk", "g"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := fsys.Create(filepath.Join(dir, "sub", "open")) // left open too
		if err != nil {
			t.Fatal(err)
		}
		_ = f
		release()
	}
	cycle(-1)
	fds0 := countFds(t)
	for i := range 1000 {
		cycle(i)
	}
	if n := countFds(t); n != fds0 {
		t.Fatalf("descriptors: %d after 1000 cycles, %d before", n, fds0)
	}
}

// With WithKeepHandles, files and connections outlive the scope (the host
// hands them on); new calls are still denied.
func TestKeepHandles(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	pol, err := policy.New(policy.Spec{WriteRoots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(pol, audit.WithKeepHandles(), audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fsys := fsguard.New(ctx, afero.NewOsFs())
	f, err := fsys.Create(filepath.Join(dir, "kept"))
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := f.Write([]byte("after")); err != nil {
		t.Fatalf("a kept file was closed by release: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Create(filepath.Join(dir, "new")); !errors.Is(err, audit.ErrScopeClosed) {
		t.Fatalf("a new call after release: %v", err)
	}
}

// Release waits for a call in flight, up to the guard's release wait.
func TestReleaseWaitsForCallsInFlight(t *testing.T) {
	pol, err := policy.New(policy.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		wait     time.Duration
		hold     time.Duration
		waitsFor bool
	}{
		{"finishes within the wait", time.Second, 50 * time.Millisecond, true},
		{"outlives the wait", 20 * time.Millisecond, 300 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := audit.New(pol, audit.WithReleaseWait(tc.wait), audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			if err != nil {
				t.Fatal(err)
			}
			ctx, release, err := g.Enter(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			s := audit.From(ctx)
			if err := s.Begin(); err != nil {
				t.Fatal(err)
			}
			var ended atomic.Bool
			go func() {
				time.Sleep(tc.hold)
				ended.Store(true)
				s.End()
			}()
			release()
			if ended.Load() != tc.waitsFor {
				t.Fatalf("call ended before release returned = %v, want %v", ended.Load(), tc.waitsFor)
			}
			if err := s.Begin(); !errors.Is(err, audit.ErrScopeClosed) {
				t.Fatalf("Begin after release: %v", err)
			}
		})
	}
}
