package procguard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroup is a per-command cgroup v2 directory. A nil *cgroup is valid and
// does nothing.
type cgroup struct {
	dir string
	fd  int
	// events is an open cgroup.events (re-read with pread), or -1.
	events int
	// killed: cgroup.kill was written. Such a cgroup is never reused: on
	// some kernels a child cloned into it later (CLONE_INTO_CGROUP) is
	// killed at birth, as the kill sequence number it sees is stale.
	killed atomic.Bool
	// empty: the leader has exited and the cgroup was seen empty; nothing
	// can enter it any more (only its members could fork into it).
	empty bool
}

var (
	cgOnce   sync.Once
	cgParent string // where per-command cgroups are made
	cgWhy    string // why there are none
	cgSeq    atomic.Uint64
)

// findCgroupParent finds the cgroup v2 directory of this process and checks
// that a child with cgroup.kill can be made in it.
func findCgroupParent() {
	mnt := ""
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		cgWhy = "no /proc/self/mountinfo"
		return
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "... mountpoint opts ... - fstype source superopts"
		line := sc.Text()
		pre, post, ok := strings.Cut(line, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) >= 5 {
			mnt = fields[4]
			break
		}
	}
	f.Close()
	if mnt == "" {
		cgWhy = "no cgroup v2 mount"
		return
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		cgWhy = "cannot read /proc/self/cgroup"
		return
	}
	rel := ""
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			rel = p
		}
	}
	if rel == "" {
		cgWhy = "this process is in no cgroup v2 hierarchy"
		return
	}
	parent := filepath.Join(mnt, rel)
	probe := filepath.Join(parent, fmt.Sprintf("auditguard-probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		cgWhy = "cgroup " + parent + " is not writable: " + err.Error()
		return
	}
	_, kerr := os.Stat(filepath.Join(probe, "cgroup.kill"))
	os.Remove(probe)
	if kerr != nil {
		cgWhy = "cgroup.kill unsupported (kernel older than 5.14)"
		return
	}
	cgParent = parent
	removeStale(parent)
}

// removeStale deletes empty per-command cgroups left by processes that are
// gone (pooled cgroups outlive their process).
func removeStale(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "auditguard-*-*"))
	for _, d := range dirs {
		f := strings.Split(filepath.Base(d), "-")
		if len(f) != 3 {
			continue
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		os.Remove(d) // fails, harmlessly, when not empty
	}
}

// cgPool keeps a few empty per-command cgroups (with their open fds) for
// reuse: making and removing a cgroup costs more than starting /bin/true.
// A cgroup is only pooled when no process is left in it, and only one
// command uses it at a time.
var cgPool = make(chan *cgroup, 8)

// newCgroup makes a per-command cgroup, or returns nil and why not.
func newCgroup() (*cgroup, string) {
	cgOnce.Do(findCgroupParent)
	if cgParent == "" {
		return nil, cgWhy
	}
	select {
	case g := <-cgPool:
		return g, ""
	default:
	}
	dir := filepath.Join(cgParent, fmt.Sprintf("auditguard-%d-%d", os.Getpid(), cgSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, "cannot make a cgroup: " + err.Error()
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return nil, "cannot open the cgroup: " + err.Error()
	}
	ev, err := unix.Open(filepath.Join(dir, "cgroup.events"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		ev = -1
	}
	return &cgroup{dir: dir, fd: fd, events: ev}, ""
}

// attach makes the child start inside the cgroup (clone3 CLONE_INTO_CGROUP).
func (g *cgroup) attach(a *syscall.SysProcAttr) {
	a.UseCgroupFD = true
	a.CgroupFD = g.fd
}

func (g *cgroup) closeFD() {
	if g != nil && g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
	if g != nil && g.events >= 0 {
		unix.Close(g.events)
		g.events = -1
	}
}

// kill kills every process in the cgroup, setsid escapees included.
func (g *cgroup) kill() {
	if g == nil {
		return
	}
	g.killed.Store(true)
	_ = os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
}

// populated reports whether a live process is in the cgroup (zombies are
// not counted); it errs on "yes".
func (g *cgroup) populated() bool {
	var buf [128]byte
	if g.events >= 0 {
		n, err := unix.Pread(g.events, buf[:], 0)
		if err == nil {
			return !bytes.Contains(buf[:n], []byte("populated 0"))
		}
	}
	b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.events"))
	return err != nil || !bytes.Contains(b, []byte("populated 0"))
}

// killIfPopulated kills the cgroup's processes when there are any; the
// common case (the leader exited alone) costs one read.
func (g *cgroup) killIfPopulated() {
	if g == nil {
		return
	}
	if g.populated() {
		g.kill()
	} else {
		g.empty = true
	}
}

// drain waits, bounded, until no process of the cgroup is alive any more.
func (g *cgroup) drain() {
	if g == nil || g.empty {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for delay := 50 * time.Microsecond; g.populated() && time.Now().Before(deadline); delay = min(2*delay, 10*time.Millisecond) {
		g.kill()
		time.Sleep(delay)
	}
}

// remove returns the empty cgroup to the pool, or deletes it.
func (g *cgroup) remove() {
	if g == nil {
		return
	}
	if g.fd >= 0 && !g.killed.Load() && (g.empty || !g.populated()) {
		g.empty = false
		select {
		case cgPool <- g:
			return
		default:
		}
	}
	g.closeFD()
	for i := 0; i < 100; i++ {
		err := os.Remove(g.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		g.kill()
		time.Sleep(time.Millisecond)
	}
}
