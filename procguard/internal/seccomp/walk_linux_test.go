//go:build amd64 || arm64

package seccomp

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFastWalkAgreesWithSlow resolves names through ordinary symbolic
// links (relative, absolute, chained, climbing with ".."), through
// /proc/self and out of it with "..", and through magic links, for this
// very thread as the task: the one-openat2 walk must give up wherever
// the kernel would read a link as the supervisor (a magic link, a
// directory in procfs), and wherever it does not give up it must reach
// what the component-by-component walk reaches.
func TestFastWalkAgreesWithSlow(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d := linkedTree(t, "real/sub/file", map[string]string{
		"rel":      "real",
		"abs":      "$D/real",
		"chain":    "rel",
		"up":       "real/sub/../..",
		"cwd":      "/proc/self/cwd",
		"procself": "/proc/self",
	})
	tk, tid := thisTask()
	start, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(start)
	for _, c := range []struct {
		name string
		fast bool // the one-openat2 walk takes it
	}{
		// Relative to a directory descriptor of d (RESOLVE_IN_ROOT, which
		// keeps an absolute name from following magic links, is not set).
		{"rel/sub/file", true},
		{"abs/sub/file", true},
		{"cwd/file", false},
		{"procself/cwd/file", false},
		{d + "/real/sub/file", true},
		{d + "/rel/sub/file", true},
		{d + "/abs/sub/file", true},
		{d + "/chain/sub/file", true},
		{d + "/up/real/sub/file", true},
		{"/proc/self/../.." + d + "/real/sub/file", true},
		{d + "/rel/sub/missing", true},
		{d + "/cwd/file", false},        // a magic link
		{d + "/procself/status", false}, // /proc/self read as the supervisor would be procfs
		{"/proc/self/cwd/x", false},
		{"/proc/thread-self/status", false},
		// One component: looked up in the start itself, which the target
		// then holds.
		{"real", true},
		{"missing", true},
		{"rel", true}, // a symbolic link, not followed
		{"cwd", true}, // a link to a magic link, not followed
	} {
		w := walker{t: tk, tid: tid, root: -1}
		e, ok := w.fast(start, c.name, false, scope{})
		if ok != c.fast {
			t.Errorf("%s: fast walk took it %v, want %v", c.name, ok, c.fast)
		}
		if ok {
			got, errno := w.withID(w.finish(e))
			want, werrno := w.slow(start, c.name, false, scope{})
			if werrno == 0 {
				want, werrno = w.withID(w.finish(want))
			}
			if errno != werrno || got.path != want.path || got.mode != want.mode || got.dev != want.dev || got.ino != want.ino {
				t.Errorf("%s: fast gives %q %o %d:%d (%v), slow %q %o %d:%d (%v)", c.name,
					got.path, got.mode, got.dev, got.ino, errno, want.path, want.mode, want.dev, want.ino, werrno)
			}
			if held := w.tookStart; held != (got.dir == start) || held != !strings.Contains(c.name, "/") {
				t.Errorf("%s: the target holds the start %v, said %v", c.name, got.dir == start, held)
			}
			if w.tookStart {
				got.dir = -1 // start is closed once, below
				w.tookStart = false
			}
			got.close()
			want.close()
		}
		w.close()
	}

	// A start in procfs is left to slow, and still open.
	proc, err := unix.Open("/proc/self", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(proc)
	w := walker{t: tk, tid: tid, root: -1}
	if _, ok := w.fast(proc, "status", false, scope{}); ok || w.tookStart {
		t.Errorf("fast took a name in procfs (ok %v, took the start %v)", ok, w.tookStart)
	}
	if _, err := unix.FcntlInt(uintptr(proc), unix.F_GETFD, 0); err != nil {
		t.Errorf("fast closed a start it gave up on: %v", err)
	}
	// A start that is not a directory: slow says ENOTDIR.
	f, err := unix.Open(d+"/real/sub/file", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(f)
	if _, ok := w.fast(f, "x", false, scope{}); ok || w.tookStart {
		t.Errorf("fast took a name under a file (ok %v, took the start %v)", ok, w.tookStart)
	}
	if _, errno := w.lookup(f, "x", false, scope{}); errno != unix.ENOTDIR {
		t.Errorf("a name under a file: %v, want ENOTDIR", errno)
	}
	w.close()
}

// BenchmarkWalkLinkedDir resolves a name whose directory is reached
// through a symbolic link (as /bin/true is where /bin links to usr/bin),
// for this thread as the task: "lookup" as the supervisor does (one
// openat2 that follows the link), "slow" one component at a time, as
// every such name was resolved before.
func BenchmarkWalkLinkedDir(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d := linkedTree(b, "usr/bin/true", map[string]string{"bin": "usr/bin"})
	name := filepath.Join(d, "bin", "true")
	tk, tid := thisTask()
	for _, mode := range []string{"lookup", "slow"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				w := walker{t: tk, tid: tid, root: -1}
				var e target
				var errno unix.Errno
				if mode == "lookup" {
					e, errno = w.lookup(-1, name, true, scope{})
				} else if e, errno = w.slow(-1, name, true, scope{}); errno == 0 {
					e, errno = w.finish(e)
				}
				if errno != 0 {
					b.Fatal(errno)
				}
				e.close()
				w.close()
			}
		})
	}
}

// linkedTree makes, in a new temp dir whose own path has no link, the
// file (and its directories) and the symbolic links (name: text, "$D"
// in a text standing for the dir), and returns the dir.
func linkedTree(tb testing.TB, file string, links map[string]string) string {
	tb.Helper()
	d, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(d, filepath.Dir(file)), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, file), nil, 0o755); err != nil {
		tb.Fatal(err)
	}
	for link, to := range links {
		if err := os.Symlink(strings.ReplaceAll(to, "$D", d), filepath.Join(d, link)); err != nil {
			tb.Fatal(err)
		}
	}
	return d
}

// thisTask is the calling thread as the task a walker resolves for; the
// caller has locked its goroutine to the thread.
func thisTask() (*task, int) {
	tid := unix.Gettid()
	tk := &task{root: -1}
	tk.reset(uint32(tid))
	return tk, tid
}
