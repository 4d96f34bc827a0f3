package audit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
)

// A Guard is what policyfile.Watch swaps policies and modes into.
var (
	_ policyfile.Swapper            = (*audit.Guard)(nil)
	_ policyfile.ModeSwapper        = (*audit.Guard)(nil)
	_ policyfile.PolicyModesSwapper = (*audit.Guard)(nil)
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func writePolicy(t *testing.T, path, root string) {
	t.Helper()
	writeDoc(t, path, "# policy for the watch test\n[fs]\nwrite_roots = [\""+root+"\"]\n")
}

// writeDoc saves like an editor: a new file renamed over the old one.
func writeDoc(t *testing.T, path, doc string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func checkWrite(ctx context.Context, path string) error {
	ev := &audit.Event{Protocol: audit.FS, Op: policy.OpWrite, Target: path, Resolved: path}
	return audit.Check(ctx, ev, &policy.PathRequest{Op: policy.OpWrite, Path: path})
}

// TestWatchGuard reloads a policy file into a real Guard while a scope is
// open: the watcher swaps from outside any scope, decisions follow the file,
// denials name the file and line that decided, and a broken edit leaves the
// old decisions in force.
func TestWatchGuard(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	path := filepath.Join(dir, "policy.toml")
	writePolicy(t, path, a)

	pol, err := policyfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(pol, audit.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan policyfile.WatchEvent, 64)
	w, err := policyfile.Watch(path, g, policyfile.WithDebounce(10*time.Millisecond), policyfile.WithWatchLogger(quiet()),
		policyfile.WithOnEvent(func(ev policyfile.WatchEvent) { events <- ev }))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wait := func(kind policyfile.WatchEventKind) policyfile.WatchEvent {
		t.Helper()
		for {
			select {
			case ev := <-events:
				if ev.Kind == kind {
					return ev
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no %v event", kind)
			}
		}
	}
	wait(policyfile.WatchLoaded)

	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := checkWrite(ctx, a+"/x"); err != nil {
		t.Fatal(err)
	}

	writePolicy(t, path, b)
	wait(policyfile.WatchReloaded)
	if err := checkWrite(ctx, b+"/x"); err != nil {
		t.Fatalf("after reload: %v", err)
	}
	err = checkWrite(ctx, a+"/x")
	if !errors.Is(err, os.ErrPermission) {
		t.Fatalf("old root still allowed: %v", err)
	}
	// The allow that now applies names its file and line.
	if src := g.Policy().CheckPath(policy.OpWrite, b+"/x", "").Rule.Source; src != path+":3" {
		t.Errorf("source %q, want %s:3", src, path)
	}

	// A broken edit: reported, the old decisions stay.
	writeDoc(t, path, "[fs]\nwrite_root = [\""+a+"\"]\n")
	ev := wait(policyfile.WatchRejected)
	if !strings.Contains(ev.Err.Error(), `did you mean "write_roots"`) {
		t.Errorf("rejection: %v", ev.Err)
	}
	if err := checkWrite(ctx, b+"/x"); err != nil {
		t.Fatalf("broken edit changed decisions: %v", err)
	}

	// Protected entries from the file deny with their provenance in the
	// message the caller sees.
	doc := "[fs]\nwrite_roots = [\"" + b + "\"]\nprotected = [\"secrets\"]\n"
	writeDoc(t, path, doc)
	wait(policyfile.WatchReloaded)
	err = checkWrite(ctx, b+"/secrets/k")
	if err == nil || !strings.Contains(err.Error(), `protected "secrets" (`+path+`:3)`) {
		t.Fatalf("denial does not name the file and line: %v", err)
	}
}

// TestWatchGuardStress decides in many goroutines inside a scope while the
// file is reloaded: every decision has a policy, and Close leaves no
// goroutine behind.
func TestWatchGuardStress(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.toml")
	writePolicy(t, path, filepath.Join(dir, "r0"))
	pol, err := policyfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(pol, audit.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	reloaded := make(chan *policyfile.File, 256)
	w, err := policyfile.Watch(path, g, policyfile.WithDebounce(5*time.Millisecond), policyfile.WithWatchLogger(quiet()),
		policyfile.WithOnEvent(func(ev policyfile.WatchEvent) {
			if ev.Kind == policyfile.WatchReloaded {
				reloaded <- ev.File
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if g.Policy() == nil {
					t.Error("no policy")
					return
				}
				// Any answer is fine; a panic or a race is not.
				_ = checkWrite(ctx, filepath.Join(dir, "r1", "f"))
				runtime.Gosched()
			}
		}()
	}
	for i := 1; i <= 30; i++ {
		root := filepath.Join(dir, fmt.Sprintf("r%02d", i))
		writePolicy(t, path, root)
		for {
			select {
			case f := <-reloaded:
				if !f.Policy.CheckPath(policy.OpWrite, root+"/f", "").Allowed {
					continue // an earlier write's reload
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("reload %d not seen", i)
			}
			break
		}
		if err := checkWrite(ctx, root+"/f"); err != nil {
			t.Fatalf("reload %d not in force: %v", i, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	release()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWatchGuardModes: a file's [modes] reach the guard together with its
// policy, and a mode removed from the file returns to the one given to New.
func TestWatchGuardModes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.toml")
	writeDoc(t, path, "[fs]\nwrite_roots = [\""+dir+"/w\"]\n[modes]\nfs = \"warn\"\nnet = \"off\"\n")
	pol, err := policyfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(pol, audit.WithLogger(quiet()), audit.WithMode(audit.Net, audit.Warn))
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan policyfile.WatchEvent, 64)
	w, err := policyfile.Watch(path, g, policyfile.WithDebounce(10*time.Millisecond), policyfile.WithWatchLogger(quiet()),
		policyfile.WithOnEvent(func(ev policyfile.WatchEvent) { events <- ev }))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wait := func(kind policyfile.WatchEventKind) {
		t.Helper()
		for {
			select {
			case ev := <-events:
				if ev.Kind == kind {
					return
				}
				if ev.Kind == policyfile.WatchRejected || ev.Kind == policyfile.WatchFailed {
					t.Fatalf("watch: %v", ev.Err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no %v event", kind)
			}
		}
	}
	wait(policyfile.WatchLoaded)
	if g.Mode(audit.FS) != audit.Warn || g.Mode(audit.Net) != audit.Off || g.Mode(audit.Exec) != audit.Enforce {
		t.Fatalf("modes after load: fs=%v net=%v exec=%v", g.Mode(audit.FS), g.Mode(audit.Net), g.Mode(audit.Exec))
	}
	writeDoc(t, path, "[fs]\nwrite_roots = [\""+dir+"/w\"]\n")
	wait(policyfile.WatchReloaded)
	if g.Mode(audit.FS) != audit.Enforce || g.Mode(audit.Net) != audit.Warn {
		t.Fatalf("modes after removing [modes]: fs=%v net=%v, want enforce and the Warn given to New", g.Mode(audit.FS), g.Mode(audit.Net))
	}
	ctx, release, _ := g.Enter(context.Background())
	defer release()
	if err := g.SetModes(ctx, policy.Modes{FS: policy.ModeOff}); !errors.Is(err, audit.ErrSelfProtection) {
		t.Fatalf("SetModes inside a scope: %v", err)
	}
}
