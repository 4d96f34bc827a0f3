package fsguard

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/auditguard/auditguard/policy"
)

// rootCache keeps one handle per write-root directory, opened on first use.
// Lookups read an immutable map without locking (every guarded call makes
// one); opening a new root or closing them all copies it under mu.
type rootCache struct {
	mu    sync.Mutex
	roots atomic.Pointer[map[string]*rootHandle]
	snap  atomic.Pointer[rootsSnap]
	ended bool // the scope was released: nothing is opened again (under mu)
}

// rootsEnd is what the scope's release closes: the cache's handles, for
// good.
type rootsEnd struct{ c *rootCache }

func (e *rootsEnd) Close() error {
	e.c.mu.Lock()
	e.c.ended = true
	e.c.mu.Unlock()
	return e.c.closeAll()
}

// errRootsEnded is returned for a root asked for after the scope ended; the
// call is denied by the scope check anyway.
var errRootsEnded = errors.New("fsguard: the scope was released")

// rootHandle is a directory descriptor on a write root for the openat2
// fast paths (fast_linux.go), and an os.Root on the same directory for the
// rest, opened only when a call needs it: most calls never do, so a root
// usually costs one descriptor, not two.
type rootHandle struct {
	dir string
	fd  int // O_PATH directory descriptor; -1 when it could not be opened
	// use is read-held while a call works from fd, and write-held by
	// Close: a descriptor number closed (and reused by another open) under
	// a call could otherwise point it at an unrelated directory.
	use    sync.RWMutex
	closed bool

	rootMu sync.Mutex // guards root and dead; taken after use, never before
	root   *os.Root
	dead   bool // closed: no os.Root is opened any more
}

// osRoot returns the handle's os.Root, opening it on first use. It is
// opened through the descriptor where there is one, so both name the same
// directory even if the root's path was replaced since.
func (h *rootHandle) osRoot() (*os.Root, error) {
	h.rootMu.Lock()
	defer h.rootMu.Unlock()
	if h.dead {
		return nil, errRootsEnded
	}
	if h.root != nil {
		return h.root, nil
	}
	var err error
	if h.fd >= 0 {
		h.root, err = os.OpenRoot("/proc/self/fd/" + strconv.Itoa(h.fd))
	}
	if h.fd < 0 || err != nil {
		h.root, err = os.OpenRoot(h.dir)
	}
	return h.root, err
}

// close closes the handle's descriptors once no call works from them.
func (h *rootHandle) close() error {
	h.use.Lock()
	return h.closeLocked()
}

// closeLocked is close with use write-held; it releases it.
func (h *rootHandle) closeLocked() error {
	defer h.use.Unlock()
	h.closed = true
	h.rootMu.Lock()
	defer h.rootMu.Unlock()
	h.dead = true
	var err error
	if h.root != nil {
		err = h.root.Close()
	}
	closeDirFd(h.fd)
	h.fd = -1
	return err
}

// acquire read-holds h for a call on its descriptor; false when closed.
func (h *rootHandle) acquire() bool {
	h.use.RLock()
	if h.closed || h.fd < 0 {
		h.use.RUnlock()
		return false
	}
	return true
}

func (h *rootHandle) release() { h.use.RUnlock() }

// rootsSnap indexes a policy's write roots by path, so finding the root
// that holds a path is a few map probes at the path's component boundaries
// (O(depth)), whatever the number of roots.
type rootsSnap struct {
	pol   *policy.Policy
	roots map[string]struct{}
	// lens[n] is set when some root is n bytes long: deepest probes the
	// map only at the boundaries a root could end at, one probe for the
	// usual single root instead of one per component.
	lens []bool
	dot  bool // "." is a root: the handle's working directory
}

// deepest returns the deepest root that contains p (p itself included),
// or "" when none does.
func (s *rootsSnap) deepest(p string) string {
	if len(s.roots) == 0 || len(p) == 0 || p[0] != '/' {
		return ""
	}
	for {
		if len(p) < len(s.lens) && s.lens[len(p)] {
			if _, ok := s.roots[p]; ok {
				return p
			}
		}
		if p == "/" {
			return ""
		}
		p = parentOf(p)
	}
}

func (c *rootCache) get(dir string) (*rootHandle, error) {
	if m := c.roots.Load(); m != nil {
		if h := (*m)[dir]; h != nil {
			return h, nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return nil, errRootsEnded
	}
	old := map[string]*rootHandle{}
	if m := c.roots.Load(); m != nil {
		if h := (*m)[dir]; h != nil {
			return h, nil
		}
		old = *m
	}
	h := &rootHandle{dir: dir, fd: openDirFd(dir)}
	if h.fd < 0 {
		// No descriptor (no O_PATH here, or an error): the os.Root is
		// then the handle, and its error is the caller's.
		if _, err := h.osRoot(); err != nil {
			return nil, err
		}
	}
	next := maps.Clone(old)
	next[dir] = h
	c.roots.Store(&next)
	return h, nil
}

func (c *rootCache) closeAll() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.roots.Swap(nil)
	if m == nil {
		return nil
	}
	var errs []error
	for _, h := range *m {
		errs = append(errs, h.close())
	}
	return errors.Join(errs...)
}

func (c *rootCache) snapshot(p *policy.Policy) *rootsSnap {
	if s := c.snap.Load(); s != nil && s.pol == p {
		return s
	}
	wr := p.WriteRoots()
	s := &rootsSnap{pol: p, roots: make(map[string]struct{}, len(wr)), dot: p.DotRoot()}
	longest := 0
	for _, r := range wr {
		s.roots[r] = struct{}{}
		longest = max(longest, len(r))
	}
	s.lens = make([]bool, longest+1)
	for _, r := range wr {
		s.lens[len(r)] = true
	}
	c.snap.Store(s)
	c.prune(s)
	return s
}

// prune closes the handles of roots the policy no longer has, after a
// reload: a long-lived Fs keeps descriptors only for the roots in force.
// A call that found such a handle before the reload finishes first (close
// waits for it); one that asks for it afterwards opens it again if a root
// still holds its path. With "." as a root every handle is kept, since the
// handle's working directory is a root wherever it is.
func (c *rootCache) prune(s *rootsSnap) {
	if s.dot {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.roots.Load()
	if m == nil {
		return
	}
	var gone []*rootHandle
	next := map[string]*rootHandle{}
	for dir, h := range *m {
		if _, ok := s.roots[dir]; ok {
			next[dir] = h
		} else {
			gone = append(gone, h)
		}
	}
	if len(gone) == 0 {
		return
	}
	c.roots.Store(&next)
	for _, h := range gone {
		if h.use.TryLock() {
			h.closeLocked()
		} else {
			// A call is working from it, maybe this very goroutine (a
			// callback using the Fs during a call): close once it is done.
			go h.close()
		}
	}
}

// rootFor returns the deepest write-root directory of the guard's policy
// (or the working directory, when "." is a root) that contains every path,
// or "" when none does (the call was allowed by a host callback or Warn
// mode, outside every root). The roots are probed at the component
// boundaries of the paths' common prefix, deepest first.
func (f *Fs) rootFor(paths ...string) string {
	if !f.isOS || f.scope == nil || len(paths) == 0 {
		return ""
	}
	s := f.roots.snapshot(f.scope.Guard().Policy())
	common := paths[0]
	for _, p := range paths[1:] {
		for !policy.Within(p, common) {
			if common == "/" || common == "" {
				return ""
			}
			common = parentOf(common)
		}
	}
	best := s.deepest(common)
	if s.dot {
		if wd := f.getwd(); len(wd) > len(best) && policy.Within(common, wd) {
			best = wd
		}
	}
	return best
}

// rootOf is rootFor(path) for a path a decision allowed: the root the
// decision named (policy.Decision.Root) when it is a write root holding
// the path, found without probing, else rootFor's answer.
func (f *Fs) rootOf(root, path string) string {
	if root != "" && f.isOS && f.scope != nil && policy.Within(path, root) {
		s := f.roots.snapshot(f.scope.Guard().Policy())
		if _, ok := s.roots[root]; ok {
			return root
		}
	}
	return f.rootFor(path)
}

// rel makes a resolved path relative to root dir (".", for the root itself).
func rel(dir, path string) string {
	if path == dir {
		return "."
	}
	if dir == "/" {
		return path[1:]
	}
	return path[len(dir)+1:]
}

// inRoot returns the os.Root to mutate path through, and path relative to
// it; ok is false when no write root contains the path.
func (f *Fs) inRoot(path string) (r *os.Root, relPath string, ok bool, err error) {
	dir := f.rootFor(path)
	if dir == "" {
		return nil, "", false, nil
	}
	h, err := f.roots.get(dir)
	if err != nil {
		return nil, "", true, err
	}
	r, err = h.osRoot()
	if err != nil {
		return nil, "", true, err
	}
	return r, rel(dir, path), true, nil
}

// inRootR is inRoot for a resolved name, keeping a trailing "/".
func (f *Fs) inRootR(r resolved) (*os.Root, string, bool, error) {
	root, rp, ok, err := f.inRoot(r.path)
	if ok && err == nil && r.slash {
		rp += "/"
	}
	return root, rp, ok, err
}

// parentIn opens the directory that holds path, through the deepest root
// containing it, for the two-name operations whose names sit under
// different roots. The returned file is a directory opened inside the
// root, so a symbolic link swapped into the parent chain cannot move it out.
func (f *Fs) parentIn(path string) (*os.File, string, bool, error) {
	r, relPath, ok, err := f.inRoot(parentOf(path))
	if !ok || err != nil {
		return nil, "", ok, err
	}
	d, err := r.Open(relPath)
	if err != nil {
		return nil, "", true, err
	}
	return d, baseName(path), true, nil
}

// renameErr rewrites the path of an error from a root, fast-path or base
// call to the name the caller used. On the OS base the operation is named
// as afero.OsFs names it (os.Root says "openat" where os.OpenFile says
// "open"); another base's own operation names are kept.
func (f *Fs) renameErr(err error, op, name string) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if !f.isOS {
			op = pe.Op
		}
		return &fs.PathError{Op: op, Path: name, Err: pe.Err}
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// renameLinkErr is renameErr for two-name calls: an *os.LinkError, as the
// os package returns, unless a non-OS base answered with an *fs.PathError.
func (f *Fs) renameLinkErr(err error, op, oldname, newname string) error {
	if err == nil {
		return nil
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return &os.LinkError{Op: op, Old: oldname, New: newname, Err: le.Err}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if !f.isOS {
			return &fs.PathError{Op: pe.Op, Path: oldname, Err: pe.Err}
		}
		return &os.LinkError{Op: op, Old: oldname, New: newname, Err: pe.Err}
	}
	return &os.LinkError{Op: op, Old: oldname, New: newname, Err: err}
}
