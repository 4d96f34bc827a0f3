package procguard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
}

// newCgroup makes a per-command cgroup, or returns nil and why not.
func newCgroup() (*cgroup, string) {
	cgOnce.Do(findCgroupParent)
	if cgParent == "" {
		return nil, cgWhy
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
	return &cgroup{dir: dir, fd: fd}, ""
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
}

// kill kills every process in the cgroup, setsid escapees included.
func (g *cgroup) kill() {
	if g == nil {
		return
	}
	_ = os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
}

// drain waits, bounded, until no process of the cgroup is alive any more.
func (g *cgroup) drain() {
	if g == nil {
		return
	}
	ev := filepath.Join(g.dir, "cgroup.events")
	deadline := time.Now().Add(5 * time.Second)
	for delay := 50 * time.Microsecond; time.Now().Before(deadline); delay = min(2*delay, 10*time.Millisecond) {
		b, err := os.ReadFile(ev)
		if err != nil || bytes.Contains(b, []byte("populated 0")) {
			return
		}
		g.kill()
		time.Sleep(delay)
	}
}

// remove deletes the cgroup once it is empty.
func (g *cgroup) remove() {
	if g == nil {
		return
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
