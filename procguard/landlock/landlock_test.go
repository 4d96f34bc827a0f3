//go:build linux

package landlock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestConstantsMatchKernelHeaders(t *testing.T) {
	pairs := map[uint64]uint64{
		Execute: unix.LANDLOCK_ACCESS_FS_EXECUTE, WriteFile: unix.LANDLOCK_ACCESS_FS_WRITE_FILE,
		ReadFile: unix.LANDLOCK_ACCESS_FS_READ_FILE, ReadDir: unix.LANDLOCK_ACCESS_FS_READ_DIR,
		MakeSym: unix.LANDLOCK_ACCESS_FS_MAKE_SYM, Refer: unix.LANDLOCK_ACCESS_FS_REFER,
		Truncate: unix.LANDLOCK_ACCESS_FS_TRUNCATE, IoctlDev: unix.LANDLOCK_ACCESS_FS_IOCTL_DEV,
	}
	for ours, theirs := range pairs {
		if ours != theirs {
			t.Errorf("%#x != %#x", ours, theirs)
		}
	}
	for abi, want := range map[int]uint64{0: 0, 1: 0x1fff, 2: 0x3fff, 3: 0x7fff, 4: 0x7fff, 5: 0xffff, 7: 0xffff} {
		if got := HandledFS(abi); got != want {
			t.Errorf("HandledFS(%d) = %#x, want %#x", abi, got, want)
		}
	}
}

// TestStartRestrictsOnlyItsThread: the function run by Start cannot create
// a file outside the allowed tree, while the caller can, before and after.
func TestStartRestrictsOnlyItsThread(t *testing.T) {
	abi, err := ABI()
	if err != nil {
		t.Skipf("Landlock unavailable: %v", err)
	}
	allowed, denied := t.TempDir(), t.TempDir()
	rs := &Ruleset{ABI: abi, Rules: []Rule{{"/", ReadExec}, {allowed, HandledFS(abi)}, {"/nonexistent-auditguard", ReadExec}}}
	st, err := Start(rs, func() error {
		if err := os.WriteFile(filepath.Join(allowed, "ok"), nil, 0o644); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(denied, "no"), nil, 0o644)
	})
	if err == nil || !os.IsPermission(err) {
		t.Fatalf("restricted thread wrote outside: %v", err)
	}
	if st.ABI != abi || len(st.Rules) != 2 || len(st.Skipped) != 1 {
		t.Fatalf("status %+v", st)
	}
	if err := os.WriteFile(filepath.Join(denied, "host"), nil, 0o644); err != nil {
		t.Fatalf("host restricted: %v", err)
	}
}

// TestStartReused: an equal ruleset reuses the restricted thread; replacing
// a rule's directory (a new inode) makes a new one, so the new directory is
// writable and the old grant does not linger.
func TestStartReused(t *testing.T) {
	abi, err := ABI()
	if err != nil {
		t.Skipf("Landlock unavailable: %v", err)
	}
	base := t.TempDir()
	allowed := filepath.Join(base, "w")
	os.Mkdir(allowed, 0o755)
	rs := &Ruleset{ABI: abi, Rules: []Rule{{"/", ReadExec}, {allowed, HandledFS(abi)}}}
	var tids [3]int
	for i := range 2 {
		if _, err := StartReused(rs, func() error {
			tids[i] = unix.Gettid()
			return os.WriteFile(filepath.Join(allowed, "f"), nil, 0o644)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if tids[0] != tids[1] {
		t.Fatalf("thread not reused: %v", tids)
	}
	if err := os.RemoveAll(allowed); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(allowed, 0o755)
	if _, err := StartReused(rs, func() error {
		tids[2] = unix.Gettid()
		if err := os.WriteFile(filepath.Join(base, "outside"), nil, 0o644); err == nil {
			t.Error("wrote outside the rules")
		}
		return os.WriteFile(filepath.Join(allowed, "f"), nil, 0o644)
	}); err != nil {
		t.Fatalf("recreated directory: %v", err)
	}
	if tids[2] == tids[0] {
		t.Fatal("a stale thread was reused")
	}
	if err := os.WriteFile(filepath.Join(base, "host"), nil, 0o644); err != nil {
		t.Fatalf("host restricted: %v", err)
	}
}

// TestNeverTheMainThread: however often it is asked, the restricted thread
// is never the thread group leader.
func TestNeverTheMainThread(t *testing.T) {
	abi, err := ABI()
	if err != nil {
		t.Skipf("Landlock unavailable: %v", err)
	}
	dir := t.TempDir()
	for i := range 50 {
		rs := &Ruleset{ABI: abi, Rules: []Rule{{"/", ReadExec}, {dir, HandledFS(abi)}}}
		if _, err := Start(rs, func() error {
			if unix.Gettid() == unix.Getpid() {
				t.Errorf("run %d restricted the main thread", i)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStartReusedKeyedByEveryRule: rulesets that differ by one extra
// executable file (as procguard's per-command programs do) never share a
// restricted thread; an equal ruleset built again does; and more distinct
// rulesets than maxWorkers still each get their own domain.
func TestStartReusedKeyedByEveryRule(t *testing.T) {
	abi, err := ABI()
	if err != nil {
		t.Skipf("Landlock unavailable: %v", err)
	}
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil || !strings.HasPrefix(sh, "/usr/") {
		t.Skipf("needs a merged /usr (/bin/sh is %q, %v)", sh, err)
	}
	dir := t.TempDir()
	var progs []string
	for i := range maxWorkers + 2 {
		p := filepath.Join(dir, "prog"+string(rune('a'+i)))
		if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		progs = append(progs, p)
	}
	mk := func(extra ...string) *Ruleset {
		// /usr keeps execute for the shell and its loader.
		rs := &Ruleset{ABI: abi, Rules: []Rule{{"/", ReadFile | ReadDir}, {"/usr", ReadExec}, {"/dev/null", ReadFile | WriteFile}}}
		for _, p := range extra {
			rs.Rules = append(rs.Rules, Rule{p, Execute | ReadFile})
		}
		rs.Normalize()
		return rs
	}
	tid := func(rs *Ruleset) int {
		t.Helper()
		var id int
		if _, err := StartReused(rs, func() error { id = unix.Gettid(); return nil }); err != nil {
			t.Fatal(err)
		}
		return id
	}
	a1 := tid(mk(progs[0]))
	ab := tid(mk(progs[0], progs[1]))
	a2 := tid(mk(progs[0]))
	ba := tid(mk(progs[1], progs[0]))
	if a1 == ab || a1 != a2 || ab != ba {
		t.Fatalf("threads: a=%d ab=%d a again=%d ba=%d", a1, ab, a2, ba)
	}
	// More distinct rulesets than kept threads: each call still runs under
	// its own rules (the domain may execute exactly its own file).
	for i, p := range progs {
		var canExec, cannotExec error
		if _, err := StartReused(mk(p), func() error {
			canExec = exec.Command(p).Run()
			cannotExec = exec.Command(progs[(i+1)%len(progs)]).Run()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if canExec != nil || !errors.Is(cannotExec, os.ErrPermission) {
			t.Errorf("ruleset %d: own file %v, other file %v", i, canExec, cannotExec)
		}
	}
	workersMu.Lock()
	n := len(workers)
	workersMu.Unlock()
	if n > maxWorkers {
		t.Fatalf("%d restricted threads kept, at most %d", n, maxWorkers)
	}
}
