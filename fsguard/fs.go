package fsguard

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// Fs is the guarded afero.Fs. Make one with New; it is safe for concurrent
// use. Its working directory (Chdir, Getwd) belongs to the handle, not to
// the process: relative names resolve against it and it is the policy's "."
// root.
type Fs struct {
	ctx   context.Context
	scope *audit.Scope
	base  afero.Fs
	isOS  bool
	lst   afero.Lstater    // nil when the base cannot Lstat
	lr    afero.LinkReader // nil when the base cannot read links
	ln    afero.Linker     // nil when the base cannot make symbolic links
	opts  options

	cwd   atomic.Pointer[string] // resolved, absolute
	roots rootCache              // os.Root handles on write roots (OS base only)
	pure  pureState              // what the fast paths need to decide purely
}

// Compile-time proof that Fs is a full afero filesystem with the optional
// interfaces.
var (
	_ afero.Fs         = (*Fs)(nil)
	_ afero.Lstater    = (*Fs)(nil)
	_ afero.Linker     = (*Fs)(nil)
	_ afero.LinkReader = (*Fs)(nil)
	_ afero.Symlinker  = (*Fs)(nil)
)

// Option configures a guarded Fs.
type Option func(*options)

type options struct {
	dir             string
	symlinkAnywhere bool
	multiLinkWrites bool
	rawFiles        bool
}

// WithDir sets the handle's initial working directory (the process's
// working directory for the OS base, "/" for other bases, by default). It
// is resolved once, when the handle is made.
func WithDir(dir string) Option { return func(o *options) { o.dir = dir } }

// WithSymlinkTargetsAnywhere lets Symlink create links whose target lies
// outside the write roots. By default the target, resolved from the link's
// own directory, must be writable under the policy, so that a link cannot
// later lead an unguarded program out of the roots.
func WithSymlinkTargetsAnywhere() Option { return func(o *options) { o.symlinkAnywhere = true } }

// WithMultiLinkWrites turns off the hard-link rule: by default, writing to,
// changing the attributes of, or adding a name to a regular file that has
// more than one hard link is denied, because its other names may live
// outside the roots.
func WithMultiLinkWrites() Option { return func(o *options) { o.multiLinkWrites = true } }

// WithRawFiles opts out of guarded files: Open, OpenFile and Create return
// the base's own files (an *os.File for the OS base) instead of a *File.
// Their Chmod, Chown, Truncate and Chdir are then not checked, and release
// of the scope does not close them: they are the host's to close, and
// anything done through them after release is, in docs/threat-model.md's
// terms, leaked rather than after release.
func WithRawFiles() Option { return func(o *options) { o.rawFiles = true } }

// New returns a guarded view of base that checks every call against the
// guard scope ctx carries (audit.From). Without a scope every call is
// denied with audit.ErrNoScope; once the scope is released every call is
// denied with audit.ErrScopeClosed.
func New(ctx context.Context, base afero.Fs, opts ...Option) *Fs {
	f := &Fs{ctx: ctx, scope: audit.From(ctx), base: base}
	for _, o := range opts {
		o(&f.opts)
	}
	switch base.(type) {
	case *afero.OsFs, afero.OsFs:
		f.isOS = true
	}
	f.lst, _ = base.(afero.Lstater)
	f.lr, _ = base.(afero.LinkReader)
	f.ln, _ = base.(afero.Linker)
	f.initPure()
	if f.scope != nil && f.isOS {
		// The scope's release closes the root handles this Fs opens, so a
		// handle nobody Closes costs no descriptor past its scope.
		_ = f.scope.TrackCleanup(&rootsEnd{c: &f.roots})
	}

	dir := f.opts.dir
	if dir == "" {
		dir = "/"
		if f.isOS {
			if wd, err := os.Getwd(); err == nil {
				dir = wd
			}
		}
	}
	cwd := cleanAbs(dir, "/")
	if r, err := policy.Resolve(&resolver{f: f}, dir, "/", true); err == nil {
		cwd = r
	}
	f.cwd.Store(&cwd)
	return f
}

// Name reports the guarded base's name.
func (f *Fs) Name() string { return "fsguard(" + f.base.Name() + ")" }

// Getwd returns the handle's working directory, resolved.
func (f *Fs) Getwd() (string, error) { return *f.cwd.Load(), nil }

// Close releases the os.Root handles the Fs keeps on write roots. The Fs
// stays usable; handles are reopened on demand. Release of the scope closes
// them too (and for good), so a handle that is never closed costs no
// descriptor once its scope is released.
func (f *Fs) Close() error { return f.roots.closeAll() }

func (f *Fs) getwd() string { return *f.cwd.Load() }

// abs makes name absolute against the handle's working directory without
// cleaning it: resolution, not lexical cleaning, decides what ".." means.
func (f *Fs) abs(name string) string {
	if len(name) > 0 && name[0] == '/' {
		return name
	}
	return f.getwd() + "/" + name
}

// off reports whether the FS protocol is switched off for this scope: the
// calls then pass straight through (scope rules still apply).
func (f *Fs) off() bool {
	return f.scope != nil && f.scope.Mode(audit.FS) == audit.Off
}

// aferoHelpers are passed over when finding the caller: code that calls
// afero.WriteFile is the caller, not afero.WriteFile.
var aferoHelpers = []string{"github.com/spf13/afero."}

// check runs the audit pipeline for one call.
func (f *Fs) check(ev *audit.Event, req audit.Request) error {
	ev.Protocol = audit.FS
	ev.PassOver = aferoHelpers
	return f.scope.Check(f.ctx, ev, req)
}

// resolved is one name after resolution.
type resolved struct {
	path    string
	info    fs.FileInfo // Lstat of path, when resolution saw it (nil otherwise)
	missing bool        // resolution saw that path does not exist
	slash   bool        // the name ended in "/": the call must find a directory
}

// target is the path the call acts on: the resolved path, with the
// caller's trailing "/" kept so the kernel still insists on a directory.
func (r resolved) target() string {
	if r.slash && r.path != "/" {
		return r.path + "/"
	}
	return r.path
}

// resolve returns where name lands, relative names taken from cwd. follow
// says whether a symbolic link as the last component is followed.
func (f *Fs) resolve(name, cwd string, follow bool) (resolved, error) {
	return f.resolveWith(name, cwd, follow, true)
}

// resolveWith is resolve; fast says whether the one-call proof
// (fastResolve) is worth trying (not when the route already tried it).
func (f *Fs) resolveWith(name, cwd string, follow, fast bool) (resolved, error) {
	if strings.Contains(name, "..") && f.dotdotAfterMissing(name, cwd) {
		return resolved{}, syscall.ENOENT
	}
	return f.resolveLexical(name, cwd, follow, fast)
}

// dotdotAfterMissing reports whether a ".." in name comes after a
// directory that does not exist: the kernel then answers ENOENT, where
// resolution climbs lexically ("sub/missing/../g" resolves to "sub/g").
// The call must fail as the OS's does, not act on the climbed path.
func (f *Fs) dotdotAfterMissing(name, cwd string) bool {
	for i := 1; i+2 <= len(name); i++ {
		if name[i-1] != '/' || name[i:i+2] != ".." || (i+2 < len(name) && name[i+2] != '/') {
			continue
		}
		p, err := policy.Resolve(&resolver{f: f}, name[:i], cwd, true)
		if err != nil {
			return false // the call fails resolving anyway
		}
		if _, err := f.lstat(p); errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// resolveLexical is resolve with ".." after a missing directory climbing
// lexically, as os.MkdirAll, which makes the missing directory first,
// needs.
func (f *Fs) resolveLexical(name, cwd string, follow, fast bool) (resolved, error) {
	if fast && f.isOS && name != "" {
		if p := absAt(name, cwd); fastResolve(p, follow) {
			return resolved{path: p}, nil
		}
	}
	r := resolver{f: f}
	p, err := policy.Resolve(&r, name, cwd, follow)
	if err != nil {
		return resolved{}, err
	}
	out := resolved{path: p, slash: name[len(name)-1] == '/'}
	if r.lastName == p {
		out.info = r.lastInfo
		out.missing = r.lastInfo == nil
	}
	return out, nil
}

// lstat returns the link's own information (Stat for a base that cannot
// hold links).
func (f *Fs) lstat(name string) (fs.FileInfo, error) {
	if f.isOS {
		return os.Lstat(name)
	}
	if f.lst != nil {
		fi, _, err := f.lst.LstatIfPossible(name)
		return fi, err
	}
	return f.base.Stat(name)
}

func (f *Fs) readlink(name string) (string, error) {
	if f.isOS {
		return os.Readlink(name)
	}
	if f.lr != nil {
		return f.lr.ReadlinkIfPossible(name)
	}
	return "", &fs.PathError{Op: "readlink", Path: name, Err: afero.ErrNoReadlink}
}

// resolver adapts the base to policy.FS and remembers the last successful
// Lstat, so the caller learns about the final component (its link count)
// without another system call.
type resolver struct {
	f        *Fs
	lastName string
	lastInfo fs.FileInfo
}

func (r *resolver) Lstat(name string) (fs.FileInfo, error) {
	fi, err := r.f.lstat(name)
	switch {
	case err == nil:
		r.lastName, r.lastInfo = name, fi
	case errors.Is(err, fs.ErrNotExist):
		r.lastName, r.lastInfo = name, nil
	default:
		r.lastName, r.lastInfo = "", nil
	}
	return fi, err
}

func (r *resolver) Readlink(name string) (string, error) { return r.f.readlink(name) }

// cleanAbs is a lexical fallback used only for the initial working
// directory when it cannot be resolved.
func cleanAbs(dir, cwd string) string {
	if len(dir) == 0 || dir[0] != '/' {
		dir = cwd + "/" + dir
	}
	out := "/"
	rest := dir
	for len(rest) > 0 {
		for len(rest) > 0 && rest[0] == '/' {
			rest = rest[1:]
		}
		i := 0
		for i < len(rest) && rest[i] != '/' {
			i++
		}
		c := rest[:i]
		rest = rest[i:]
		switch c {
		case "", ".":
		case "..":
			out = parentOf(out)
		default:
			if out == "/" {
				out += c
			} else {
				out += "/" + c
			}
		}
	}
	return out
}

func parentOf(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
