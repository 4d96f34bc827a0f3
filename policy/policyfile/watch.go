package policyfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/auditguard/auditguard/policy"

	"github.com/fsnotify/fsnotify"
)

// Swapper takes a new policy atomically. *audit.Guard implements it; the
// watcher calls it from its own goroutine with context.Background(), never
// from inside a guard scope.
type Swapper interface {
	SetPolicy(ctx context.Context, p *policy.Policy) error
}

// ModeSwapper is implemented by targets that also take the modes a policy
// file sets. The watcher calls SetModes after SetPolicy on every load, with
// ModeUnset for a protocol the file does not mention: the target then goes
// back to the mode the host configured in code, so deleting a line such as
// net = "off" really ends it. When a file sets [modes] and the target does
// not implement ModeSwapper, the file is rejected rather than loaded with
// its modes ignored.
type ModeSwapper interface {
	SetModes(ctx context.Context, m policy.Modes) error
}

// PolicyModesSwapper is implemented by targets that can take a policy and
// its modes in one atomic step (*audit.Guard does). The watcher prefers it
// over SetPolicy followed by SetModes.
type PolicyModesSwapper interface {
	SetPolicyAndModes(ctx context.Context, p *policy.Policy, m policy.Modes) error
}

// WatchEventKind says what happened to a watched policy file.
type WatchEventKind uint8

const (
	// WatchLoaded: the initial load, applied by Watch before it returns.
	WatchLoaded WatchEventKind = iota + 1
	// WatchReloaded: the file changed, loaded cleanly and was swapped in.
	WatchReloaded
	// WatchRejected: the file changed but did not load (or the target
	// refused it); the last good policy stays in force.
	WatchRejected
	// WatchRemoved: the file is gone; the last good policy stays in force.
	WatchRemoved
	// WatchFailed: the file watcher itself reported an error, or the
	// watched directory was removed or replaced and could not be watched
	// again (reported once; the watch is re-armed when it comes back).
	WatchFailed
)

var watchKindNames = [...]string{WatchLoaded: "loaded", WatchReloaded: "reloaded",
	WatchRejected: "rejected", WatchRemoved: "removed", WatchFailed: "failed"}

func (k WatchEventKind) String() string {
	if int(k) < len(watchKindNames) && watchKindNames[k] != "" {
		return watchKindNames[k]
	}
	return fmt.Sprintf("watch(%d)", uint8(k))
}

// WatchEvent reports one outcome of the watcher.
type WatchEvent struct {
	Kind WatchEventKind
	// File is the policy in force after the event: the new one for
	// WatchLoaded and WatchReloaded, the last good one otherwise.
	File *File
	Err  error // why, for WatchRejected, WatchRemoved and WatchFailed
}

// WatchOption configures Watch.
type WatchOption func(*watchConfig)

type watchConfig struct {
	debounce  time.Duration
	onError   func(error)
	onEvent   func(WatchEvent)
	logger    *slog.Logger
	load      []LoadOption
	workspace string
}

// DefaultDebounce is how long a watched file must stay quiet before it is
// reloaded: editors and tools write a file in several steps.
const DefaultDebounce = 100 * time.Millisecond

// maxDebounceWait bounds, in debounce periods, how long a stream of
// changes can postpone a reload.
const maxDebounceWait = 10

// WithDebounce sets how long the file must stay quiet before a reload.
func WithDebounce(d time.Duration) WatchOption {
	return func(c *watchConfig) { c.debounce = max(d, 0) }
}

// WithOnError is called, from the watcher's goroutine, with every error: a
// rejected edit, a removed file, a watcher failure. It must not block for
// long and must not call Close.
func WithOnError(fn func(error)) WatchOption {
	return func(c *watchConfig) { c.onError = fn }
}

// WithOnEvent is called with every event: from the watcher's goroutine, but
// for the first (WatchLoaded) from the goroutine calling Watch. It must not
// block for long and must not call Close.
func WithOnEvent(fn func(WatchEvent)) WatchOption {
	return func(c *watchConfig) { c.onEvent = fn }
}

// WithWatchLogger sets where reloads and rejections are logged
// (slog.Default() otherwise).
func WithWatchLogger(l *slog.Logger) WatchOption {
	return func(c *watchConfig) { c.logger = l }
}

// WithLoadOptions passes options to every load.
func WithLoadOptions(opts ...LoadOption) WatchOption {
	return func(c *watchConfig) { c.load = append(c.load, opts...) }
}

// WithWorkspace watches a workspace layer too: the watched path is the
// operator layer and path the workspace layer (see LoadLayers). A change to
// either reloads both.
func WithWorkspace(path string) WatchOption {
	return func(c *watchConfig) { c.workspace = path }
}

// Watcher keeps a target's policy in step with a policy file.
type Watcher struct {
	cfg    watchConfig
	target Swapper
	paths  []string // as given, for sources and messages; operator first
	abs    []string // the same, absolute, for reading: a later Chdir does not move them
	fsw    *fsnotify.Watcher
	names  map[string]bool // absolute paths of the watched files
	dirs   map[string]bool // their directories; true while the watch on one is lost (rearm)

	current atomic.Pointer[File]
	last    [][]byte // contents last read, to skip reloads that change nothing

	done     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
	closeErr error
}

// Watch loads the policy file at path, swaps it into target and keeps
// reloading it when it changes. It watches the file's directory, so an
// editor that saves by writing a new file and renaming it over the old one
// is followed. Changes are debounced; each reload is validated in full
// before it is swapped in. An invalid edit keeps the last good policy and is
// reported (WithOnError, WithOnEvent and the logger); so does removing the
// file. The directory itself may be removed and recreated or replaced by a
// rename: the watch is re-armed on the new one (its parent is watched too,
// to see it come back); while it is missing, one WatchFailed is reported and
// logged, and the last good policy stays in force. Watch fails if the first
// load fails. Close stops the watcher.
func Watch(path string, target Swapper, opts ...WatchOption) (*Watcher, error) {
	if target == nil {
		return nil, errors.New("policy: Watch needs a target")
	}
	w := &Watcher{target: target, done: make(chan struct{}), names: map[string]bool{}, dirs: map[string]bool{}}
	w.cfg.debounce = DefaultDebounce
	for _, o := range opts {
		o(&w.cfg)
	}
	if w.cfg.logger == nil {
		w.cfg.logger = slog.Default()
	}
	w.paths = []string{path}
	if w.cfg.workspace != "" {
		w.paths = append(w.paths, w.cfg.workspace)
	}

	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("policy: watch %s: %w", path, err)
	}
	w.fsw = fsw
	dirs := map[string]bool{}
	for _, p := range w.paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			fsw.Close()
			return nil, err
		}
		w.names[abs] = true
		w.abs = append(w.abs, abs)
		dir := filepath.Dir(abs)
		if dirs[dir] {
			continue
		}
		dirs[dir] = true
		// Watch before the first read, so no change between the two is lost.
		if err := fsw.Add(dir); err != nil {
			fsw.Close()
			return nil, fmt.Errorf("policy: watch %s: %w", dir, err)
		}
		w.dirs[dir] = false
		// The directory's parent too, best effort: it reports the directory
		// being removed, renamed away or put back, so the watch can be
		// re-armed on the new directory (rearm).
		if up := filepath.Dir(dir); up != dir {
			_ = fsw.Add(up)
		}
	}

	data, err := w.read()
	if err == nil {
		var f *File
		if f, err = w.parse(data); err == nil {
			if err = w.apply(f); err == nil {
				w.last = data
				w.current.Store(f)
				w.warnWritable(f)
				w.cfg.logger.Info("auditguard: policy loaded", "files", w.paths)
				w.emit(WatchEvent{Kind: WatchLoaded, File: f})
			}
		}
	}
	if err != nil {
		fsw.Close()
		return nil, err
	}
	w.wg.Add(1)
	go w.run()
	return w, nil
}

// Current returns the policy file in force: the last one that loaded and was
// swapped in.
func (w *Watcher) Current() *File { return w.current.Load() }

// Close stops watching and waits for the watcher's goroutine to end. The
// target keeps the last good policy. Close is safe to call more than once,
// but not from a WithOnEvent or WithOnError callback.
func (w *Watcher) Close() error {
	w.once.Do(func() {
		close(w.done)
		w.closeErr = w.fsw.Close()
		w.wg.Wait()
	})
	return w.closeErr
}

func (w *Watcher) run() {
	defer w.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	// A file written without pause still reloads: the quiet period is not
	// waited for longer than maxDebounceWait after the first change.
	var pendingSince time.Time
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if _, ok := w.dirs[ev.Name]; ok {
				// The directory itself was removed, renamed or (re)created:
				// the watch on it follows the old inode, so re-arm it.
				w.rearm(ev.Name)
			} else if !w.relevant(ev) {
				continue
			}
			now := time.Now()
			switch {
			case pendingSince.IsZero():
				pendingSince = now
				timer.Reset(w.cfg.debounce)
			case now.Sub(pendingSince) < maxDebounceWait*w.cfg.debounce:
				timer.Reset(w.cfg.debounce)
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			w.fail(WatchFailed, fmt.Errorf("policy: watching %s: %w", strings.Join(w.paths, ", "), err))
		case <-timer.C:
			pendingSince = time.Time{}
			w.reload()
		}
	}
}

// relevant reports whether ev may have changed a watched file: an event on
// the file's name, or on a "..name" entry (Kubernetes mounts swap a
// "..data" symbolic link to update every file of a volume at once).
func (w *Watcher) relevant(ev fsnotify.Event) bool {
	if w.names[ev.Name] {
		return true
	}
	return strings.HasPrefix(filepath.Base(ev.Name), "..")
}

// rearm replaces the watch on dir with one on whatever directory now has
// its name. When there is none (it was removed and not put back yet), the
// watcher reports WatchFailed once and logs once; the last good policy
// stays in force, and the directory's parent watch re-arms it when it
// comes back. A successful re-arm after a failure is logged, and the
// reload that follows reads the files anew.
func (w *Watcher) rearm(dir string) {
	_ = w.fsw.Remove(dir) // the old watch may already be gone
	lost := w.dirs[dir]
	if err := w.fsw.Add(dir); err != nil {
		if !lost {
			w.dirs[dir] = true
			w.last = nil
			w.fail(WatchFailed, fmt.Errorf("policy: watch %s: the directory was removed or replaced and cannot be watched again (%w); edits are not seen until it is back", dir, err))
		}
		return
	}
	if lost {
		w.dirs[dir] = false
		w.cfg.logger.Info("auditguard: policy directory is back; watching it again", "dir", dir)
	}
}

func (w *Watcher) read() ([][]byte, error) {
	out := make([][]byte, len(w.abs))
	for i, p := range w.abs {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (w *Watcher) parse(data [][]byte) (*File, error) {
	if len(data) == 2 {
		return parseLayers(w.paths[0], data[0], w.paths[1], data[1], w.cfg.load...)
	}
	return Parse(w.paths[0], data[0], w.cfg.load...)
}

// ErrEmptyFile rejects a reload that finds a watched file empty: that is far
// more often a write caught half way than a policy meant to allow every
// read. Write a comment to mean an empty policy.
var ErrEmptyFile = errors.New("policy file is empty (half-written?); write a comment if an empty policy is meant")

func (w *Watcher) reload() {
	data, err := w.read()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			w.last = nil // a file put back with the same content is a change
			w.fail(WatchRemoved, fmt.Errorf("policy: %w; keeping the last good policy", err))
			return
		}
		w.fail(WatchRejected, fmt.Errorf("policy: %w; keeping the last good policy", err))
		return
	}
	if sameContents(data, w.last) {
		return
	}
	w.last = data
	for i, b := range data {
		if len(bytes.TrimSpace(b)) == 0 {
			w.fail(WatchRejected, fmt.Errorf("policy: %s: %w; keeping the last good policy", w.paths[i], ErrEmptyFile))
			return
		}
	}
	f, err := w.parse(data)
	if err == nil {
		err = w.apply(f)
	}
	if err != nil {
		w.fail(WatchRejected, fmt.Errorf("%w\n(keeping the last good policy)", err))
		return
	}
	w.current.Store(f)
	w.warnWritable(f)
	w.cfg.logger.Info("auditguard: policy reloaded", "files", w.paths)
	w.emit(WatchEvent{Kind: WatchReloaded, File: f})
}

// apply swaps f into the target. Modes are checked before anything is
// swapped, so a target that cannot take them rejects the whole file.
func (w *Watcher) apply(f *File) error {
	ctx := context.Background()
	ms, ok := w.target.(ModeSwapper)
	if !f.Modes.IsZero() {
		if !ok {
			return fmt.Errorf("policy: %s sets [modes] but the watch target (%T) cannot take modes (it does not implement policy.ModeSwapper); set the modes in code and remove [modes]", strings.Join(w.paths, ", "), w.target)
		}
	}
	if both, ok := w.target.(PolicyModesSwapper); ok {
		if err := both.SetPolicyAndModes(ctx, f.Policy, f.Modes); err != nil {
			return fmt.Errorf("policy: swapping in %s: %w", strings.Join(w.paths, ", "), err)
		}
		return nil
	}
	if err := w.target.SetPolicy(ctx, f.Policy); err != nil {
		return fmt.Errorf("policy: swapping in %s: %w", strings.Join(w.paths, ", "), err)
	}
	if ok {
		if err := ms.SetModes(ctx, f.Modes); err != nil {
			return fmt.Errorf("policy: setting the modes of %s: %w", strings.Join(w.paths, ", "), err)
		}
	}
	return nil
}

// warnWritable logs a warning for each watched file the loaded policy lets
// guarded code write: an agent could then rewrite its own policy (a
// workspace layer can only narrow, so only the operator file matters most,
// but both are checked). The "." root is not counted: it depends on each
// handle's working directory.
func (w *Watcher) warnWritable(f *File) {
	for name := range w.names {
		real, err := policy.Resolve(policy.OSFS{}, name, "/", true)
		if err != nil {
			continue
		}
		if d := f.Policy.CheckPath(policy.OpWrite, real, ""); d.Allowed {
			w.cfg.logger.Warn("auditguard: the policy lets guarded code write its own policy file; protect it or move it out of the write roots",
				"file", name, "rule", d.Rule.String())
		}
	}
}

func (w *Watcher) fail(kind WatchEventKind, err error) {
	level := slog.LevelError
	if kind == WatchRemoved {
		level = slog.LevelWarn
	}
	w.cfg.logger.Log(context.Background(), level, "auditguard: policy "+kind.String()+"; the last good policy stays in force",
		"files", w.paths, "err", err)
	if w.cfg.onError != nil {
		w.cfg.onError(err)
	}
	w.emit(WatchEvent{Kind: kind, File: w.current.Load(), Err: err})
}

func (w *Watcher) emit(ev WatchEvent) {
	if w.cfg.onEvent != nil {
		w.cfg.onEvent(ev)
	}
}

func sameContents(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
