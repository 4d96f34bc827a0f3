package policyfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/auditguard/auditguard/policy"
)

// fakeTarget stands in for *audit.Guard, which this package cannot import
// (audit imports policy). audit/watch_test.go runs Watch against a real
// Guard.
type fakeTarget struct {
	p     atomic.Pointer[policy.Policy]
	swaps atomic.Int64
}

var _ Swapper = (*fakeTarget)(nil)

func (f *fakeTarget) SetPolicy(_ context.Context, p *policy.Policy) error {
	if p == nil {
		return errors.New("nil policy")
	}
	f.p.Store(p)
	f.swaps.Add(1)
	return nil
}

// modeTarget also takes modes.
type modeTarget struct {
	fakeTarget
	mu    sync.Mutex
	modes policy.Modes
}

var _ ModeSwapper = (*modeTarget)(nil)

func (m *modeTarget) SetModes(_ context.Context, ms policy.Modes) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.modes = ms
	return nil
}

func fsPolicy(roots ...string) string {
	return "# test policy\n[fs]\nwrite_roots = [\"" + strings.Join(roots, `", "`) + "\"]\n"
}

// writeAtomic saves like an editor: a temporary file renamed over the old.
func writeAtomic(t testing.TB, path, content string) {
	t.Helper()
	tmp := path + ".tmp~"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func writeInPlace(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// watchHarness collects events and errors on buffered channels. The
// callbacks never block: an overflow fails the test instead.
type watchHarness struct {
	t      testing.TB
	events chan WatchEvent
	errs   chan error
}

func newHarness(t testing.TB) *watchHarness {
	return &watchHarness{t: t, events: make(chan WatchEvent, 4096), errs: make(chan error, 4096)}
}

func (h *watchHarness) opts() []WatchOption {
	return []WatchOption{
		WithDebounce(10 * time.Millisecond),
		WithWatchLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		WithOnEvent(func(ev WatchEvent) {
			select {
			case h.events <- ev:
			default:
				h.t.Error("event channel overflow")
			}
		}),
		WithOnError(func(err error) {
			select {
			case h.errs <- err:
			default:
				h.t.Error("error channel overflow")
			}
		}),
	}
}

// wait returns the first event of kind that satisfies ok (nil: any), failing
// after a generous bound. Events of other kinds are skipped.
func (h *watchHarness) wait(kind WatchEventKind, ok func(WatchEvent) bool) WatchEvent {
	h.t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case ev := <-h.events:
			if ev.Kind == kind && (ok == nil || ok(ev)) {
				return ev
			}
		case <-timeout.C:
			h.t.Fatalf("no %v event", kind)
			return WatchEvent{}
		}
	}
}

// next returns the next event, failing after a generous bound.
func (h *watchHarness) next() WatchEvent {
	h.t.Helper()
	select {
	case ev := <-h.events:
		return ev
	case <-time.After(20 * time.Second):
		h.t.Fatal("no event")
		return WatchEvent{}
	}
}

func allows(dir string) func(WatchEvent) bool {
	return func(ev WatchEvent) bool {
		return ev.File.Policy.CheckPath(policy.OpWrite, dir+"/x", "").Allowed
	}
}

// watch starts a Watcher on path for tg, with the harness's options and then
// opts, and returns it once the initial load, which Watch reports before it
// returns, satisfies loaded (nil: any). The watcher is closed when the test
// ends; Close may still be called, and checked, before then.
func (h *watchHarness) watch(path string, tg Swapper, loaded func(WatchEvent) bool, opts ...WatchOption) *Watcher {
	h.t.Helper()
	w, err := Watch(path, tg, append(h.opts(), opts...)...)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { w.Close() })
	h.wait(WatchLoaded, loaded)
	return w
}

// watchSetup is how most watcher tests start: a policy file in a directory
// of its own, loaded into a fakeTarget by a running Watcher whose events the
// embedded harness collects.
type watchSetup struct {
	*watchHarness
	base string      // a fresh temporary directory
	dir  string      // base/conf, holding path: a test may remove or replace it
	path string      // dir/policy.toml
	a, b string      // base/a and base/b: write roots, named only, never created
	tg   *fakeTarget // the target the watcher swaps policies into
	w    *Watcher
}

// startWatch writes fsPolicy(base/first) to a fresh policy file, watches it
// (harness options, then opts) and waits for the initial load to allow
// base/first. The watcher is closed when the test ends.
func startWatch(t testing.TB, first string, opts ...WatchOption) *watchSetup {
	t.Helper()
	base := t.TempDir()
	s := &watchSetup{watchHarness: newHarness(t), base: base, dir: filepath.Join(base, "conf"),
		a: filepath.Join(base, "a"), b: filepath.Join(base, "b"), tg: new(fakeTarget)}
	s.path = filepath.Join(s.dir, "policy.toml")
	if err := os.Mkdir(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, first)
	writeInPlace(t, s.path, fsPolicy(root))
	s.w = s.watch(s.path, s.tg, allows(root), opts...)
	return s
}

func TestWatchReloadsEdits(t *testing.T) {
	s := startWatch(t, "a")
	if !s.tg.p.Load().CheckPath(policy.OpWrite, s.a+"/x", "").Allowed {
		t.Fatal("initial policy not swapped in")
	}

	// An in-place write.
	writeInPlace(t, s.path, fsPolicy(s.b))
	ev := s.wait(WatchReloaded, allows(s.b))
	if s.tg.p.Load() != ev.File.Policy || s.w.Current() != ev.File {
		t.Fatal("reloaded policy is not the one in force")
	}
	if d := s.tg.p.Load().CheckPath(policy.OpWrite, s.a+"/x", ""); d.Allowed {
		t.Fatal("old root still allowed after reload")
	}
	if d := s.tg.p.Load().CheckPath(policy.OpWrite, s.b+"/x", ""); d.Rule.Source != s.path+":3" {
		t.Fatalf("source = %q, want %s:3", d.Rule.Source, s.path)
	}

	// An editor-style save: write a temporary file, rename it over.
	writeAtomic(t, s.path, fsPolicy(s.a))
	s.wait(WatchReloaded, allows(s.a))
	if !s.tg.p.Load().CheckPath(policy.OpWrite, s.a+"/x", "").Allowed {
		t.Fatal("atomic rename not picked up")
	}
}

func TestWatchBadEditKeepsLastGood(t *testing.T) {
	s := startWatch(t, "a")
	good := s.tg.p.Load()

	steps := []struct {
		name, content, want string
	}{
		{"typo", "[fs]\nwrite_root = [\"" + s.b + "\"]\n", `did you mean "write_roots"`},
		{"relative root", "[fs]\nwrite_roots = [\"b\"]\n", "policy.toml:2:16: fs.write_roots: \"b\": not an absolute path"},
		{"syntax", "[fs\n", "policy.toml:1"},
		{"empty", "", "empty"},
	}
	for _, step := range steps {
		writeAtomic(t, s.path, step.content)
		ev := s.wait(WatchRejected, nil)
		if !strings.Contains(ev.Err.Error(), step.want) {
			t.Errorf("%s: error %q does not contain %q", step.name, ev.Err, step.want)
		}
		if ev.File.Policy != good || s.tg.p.Load() != good || s.w.Current().Policy != good {
			t.Fatalf("%s: the last good policy was not kept", step.name)
		}
		select {
		case err := <-s.errs:
			if err.Error() != ev.Err.Error() {
				t.Errorf("OnError got %v, event has %v", err, ev.Err)
			}
		default:
			t.Errorf("%s: OnError not called", step.name)
		}
	}
	if !good.CheckPath(policy.OpWrite, s.a+"/x", "").Allowed {
		t.Fatal("old decisions not in force")
	}
	writeAtomic(t, s.path, fsPolicy(s.b))
	s.wait(WatchReloaded, allows(s.b))
}

func TestWatchRemovedKeepsLastGood(t *testing.T) {
	s := startWatch(t, "a")
	good := s.tg.p.Load()
	if err := os.Remove(s.path); err != nil {
		t.Fatal(err)
	}
	ev := s.wait(WatchRemoved, nil)
	if !errors.Is(ev.Err, fs.ErrNotExist) || s.tg.p.Load() != good {
		t.Fatalf("removal: err %v, policy kept %v", ev.Err, s.tg.p.Load() == good)
	}
	// Put back with the same content: loaded again.
	writeAtomic(t, s.path, fsPolicy(s.a))
	s.wait(WatchReloaded, allows(s.a))
}

func TestWatchInitialFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.toml")
	var tg fakeTarget
	before := runtime.NumGoroutine()
	if _, err := Watch(path, &tg); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: err = %v", err)
	}
	writeInPlace(t, path, "[fs]\nwrite_root = []\n")
	_, err := Watch(path, &tg)
	var le *LoadError
	if !errors.As(err, &le) || tg.p.Load() != nil {
		t.Fatalf("invalid file: err = %v, swapped = %v", err, tg.p.Load() != nil)
	}
	if _, err := Watch(path, nil); err == nil {
		t.Fatal("nil target accepted")
	}
	waitGoroutines(t, before)
}

func TestWatchModes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.toml")
	writeInPlace(t, path, "[modes]\nnet = \"warn\"\n[fs]\nwrite_roots = [\""+dir+"\"]\n")

	// A target that cannot take modes rejects a file that sets them.
	var plain fakeTarget
	if _, err := Watch(path, &plain); err == nil || !strings.Contains(err.Error(), "ModeSwapper") {
		t.Fatalf("err = %v, want a ModeSwapper error", err)
	}
	if plain.p.Load() != nil {
		t.Fatal("policy swapped in although its modes could not be")
	}

	var mt modeTarget
	h := newHarness(t)
	h.watch(path, &mt, allows(dir))
	if mt.modes != (policy.Modes{Net: policy.ModeWarn}) {
		t.Fatalf("modes = %+v", mt.modes)
	}
	for _, step := range []struct {
		doc  string
		want policy.Modes
	}{
		{"[modes]\nnet = \"off\"\nfs = \"warn\"\n", policy.Modes{Net: policy.ModeOff, FS: policy.ModeWarn}},
		// Dropping [modes] hands every protocol back to the host's mode.
		{"[fs]\n", policy.Modes{}},
	} {
		writeAtomic(t, path, step.doc)
		h.wait(WatchReloaded, nil)
		mt.mu.Lock()
		got := mt.modes
		mt.mu.Unlock()
		if got != step.want {
			t.Fatalf("%q: modes = %+v, want %+v", step.doc, got, step.want)
		}
	}
}

func TestWatchIgnoresOtherFiles(t *testing.T) {
	s := startWatch(t, ".") // Loaded is taken: the next event follows it
	// Noise in the same directory, then a real change: the first event
	// after Loaded must be the change.
	for i := range 20 {
		writeInPlace(t, filepath.Join(s.dir, fmt.Sprintf("other%d.txt", i)), "x")
	}
	writeAtomic(t, s.path, fsPolicy(s.dir+"/sub"))
	ev := s.next()
	if ev.Kind != WatchReloaded || !allows(s.dir+"/sub")(ev) {
		t.Fatalf("first event after load: %v %v", ev.Kind, ev.Err)
	}
	if n := s.tg.swaps.Load(); n != 2 {
		t.Fatalf("%d swaps, want 2 (initial and the change)", n)
	}
}

// waitGoroutines waits, in a bounded loop, until no more goroutines run
// than before.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

func TestWatchCloseLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	s := startWatch(t, ".")
	writeAtomic(t, s.path, fsPolicy(s.dir+"/x"))
	s.wait(WatchReloaded, nil)
	// A change still being debounced when Close comes.
	writeAtomic(t, s.path, fsPolicy(s.dir+"/y"))
	if err := s.w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.w.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	waitGoroutines(t, before)
}

// TestWatchStress makes decisions in many goroutines through 100 reloads:
// no decision is ever made without a policy, every decision is made by a
// whole policy (never a mix of two files), and Close leaves no goroutine.
func TestWatchStress(t *testing.T) {
	before := runtime.NumGoroutine()
	s := startWatch(t, "r000")
	root := func(i int) string { return filepath.Join(s.base, fmt.Sprintf("r%03d", i)) }

	const reloads = 100
	var stop atomic.Bool
	var decisions atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; !stop.Load(); i++ {
				p := s.tg.p.Load()
				if p == nil {
					t.Error("decision without a policy")
					return
				}
				// Each policy allows exactly one root: of the roots asked
				// about, at most one may be allowed by one snapshot.
				n := 0
				for _, r := range []string{root(i % (reloads + 1)), root((i + 1) % (reloads + 1))} {
					if p.CheckPath(policy.OpWrite, r+"/f", "").Allowed {
						n++
					}
				}
				if n > 1 {
					t.Error("a policy allowed two roots")
					return
				}
				decisions.Add(1)
				runtime.Gosched() // let the watcher run on a small machine
			}
		}()
	}
	for i := 1; i <= reloads; i++ {
		if i%2 == 0 {
			writeAtomic(t, s.path, fsPolicy(root(i)))
		} else {
			writeInPlace(t, s.path, fsPolicy(root(i)))
		}
		s.wait(WatchReloaded, allows(root(i)))
		if !s.tg.p.Load().CheckPath(policy.OpWrite, root(i)+"/f", "").Allowed {
			t.Fatalf("reload %d not in force", i)
		}
	}
	if err := s.w.Close(); err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d decisions through %d reloads (%d swaps)", decisions.Load(), reloads, s.tg.swaps.Load())
	waitGoroutines(t, before)
}

// TestWatchKubernetesSwap follows a volume updated the way Kubernetes
// updates ConfigMap mounts: policy.toml is a link through "..data", and an
// update swaps "..data" to a new directory in one rename.
func TestWatchKubernetesSwap(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	version := func(name, root string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		writeInPlace(t, filepath.Join(dir, name, "policy.toml"), fsPolicy(root))
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..v1", a)
	path := filepath.Join(dir, "policy.toml")
	if err := os.Symlink("..data/policy.toml", path); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.watch(path, new(fakeTarget), allows(a))
	version("..v2", b)
	h.wait(WatchReloaded, allows(b))
}

func TestWatchWarnsWritablePolicyFile(t *testing.T) {
	var buf syncBuffer
	// Base is a write root, so the policy file beneath it is writable.
	s := startWatch(t, ".", WithWatchLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	s.w.Close()
	if !strings.Contains(buf.String(), "write its own policy file") {
		t.Fatalf("no warning logged:\n%s", buf.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatchStreamOfWrites: a file rewritten faster than the debounce, without
// pause, is still reloaded (the quiet period is waited for at most
// maxDebounceWait debounce periods).
func TestWatchStreamOfWrites(t *testing.T) {
	s := startWatch(t, "r0", WithDebounce(40*time.Millisecond))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Not writeAtomic: t.Fatal must stay on the test's goroutine.
			tmp := s.path + ".stream~"
			if err := os.WriteFile(tmp, []byte(fsPolicy(fmt.Sprintf("%s/r%d", s.base, i))), 0o600); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, s.path); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(2 * time.Millisecond) // a writer that never pauses for 40ms
		}
	}()
	s.wait(WatchReloaded, nil)
	close(stop)
	<-done
}
