//go:build linux

package landlock

import (
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Restricted threads are expensive to make (a new OS thread, a ruleset, a
// syscall per rule) and cheap to keep. StartReused keeps one locked,
// restricted thread per distinct ruleset and runs start functions on it.
// Landlock rules name inodes, not paths, so before each reuse every rule
// path is checked to still be the same file; otherwise the thread is
// retired and a new one restricted.

// maxWorkers bounds the restricted threads kept alive.
const maxWorkers = 8

type worker struct {
	key   string
	ids   []fileID // identity of each rule path when restricted
	reqs  chan func()
	st    Status
	err   error
	ready chan struct{}
}

type fileID struct {
	path     string
	dev, ino uint64
	ok       bool
}

var (
	workersMu sync.Mutex
	workers   = map[string]*worker{}
	order     []string // least recently made first
)

func rulesKey(rs *Ruleset) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(rs.ABI))
	b.WriteByte('/')
	b.WriteString(strconv.FormatUint(rs.Scoped, 16))
	if rs.DenyTCP {
		b.WriteString("/notcp")
	}
	for _, r := range rs.Rules {
		b.WriteByte(0)
		b.WriteString(r.Path)
		b.WriteByte(0)
		b.WriteString(strconv.FormatUint(r.Access, 16))
	}
	return b.String()
}

func identify(rs *Ruleset) []fileID {
	ids := make([]fileID, len(rs.Rules))
	for i, r := range rs.Rules {
		var st unix.Stat_t
		ids[i].path = r.Path
		if unix.Stat(r.Path, &st) == nil {
			ids[i].dev, ids[i].ino, ids[i].ok = uint64(st.Dev), st.Ino, true
		}
	}
	return ids
}

func sameIDs(a, b []fileID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// StartReused is Start with the restricted thread kept for later calls with
// an equal ruleset whose paths still name the same files. Calls sharing a
// thread run one at a time.
func StartReused(rs *Ruleset, start func() error) (Status, error) {
	key := rulesKey(rs)
	ids := identify(rs)

	workersMu.Lock()
	w := workers[key]
	if w != nil && !sameIDs(w.ids, ids) {
		delete(workers, key)
		close(w.reqs) // its goroutine returns, still locked: the thread is discarded
		w = nil
	}
	if w == nil {
		order = removeKey(order, key)
		for len(workers) >= maxWorkers && len(order) > 0 {
			oldest := order[0]
			order = order[1:]
			if ow := workers[oldest]; ow != nil {
				delete(workers, oldest)
				close(ow.reqs)
			}
		}
		w = &worker{key: key, ids: ids, reqs: make(chan func()), ready: make(chan struct{})}
		workers[key] = w
		order = append(order, key)
		onSpareThread(func() { w.run(rs) })
	}
	workersMu.Unlock()

	<-w.ready
	if w.err != nil {
		workersMu.Lock()
		if workers[key] == w {
			delete(workers, key)
		}
		workersMu.Unlock()
		return w.st, w.err
	}
	done := make(chan error, 1)
	if !send(w.reqs, func() { done <- start() }) {
		// Retired between lookup and use: fall back to a one-off thread.
		return Start(rs, start)
	}
	return w.st, <-done
}

// send delivers fn unless the worker was retired (its channel closed).
func send(ch chan func(), fn func()) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	ch <- fn
	return true
}

func removeKey(s []string, k string) []string {
	out := s[:0]
	for _, x := range s {
		if x != k {
			out = append(out, x)
		}
	}
	return out
}

// run restricts its (locked, non-main) thread and serves start functions
// until the worker is retired.
func (w *worker) run(rs *Ruleset) {
	w.st, w.err = rs.restrictThread()
	close(w.ready)
	if w.err != nil {
		return
	}
	for fn := range w.reqs {
		fn()
	}
}
