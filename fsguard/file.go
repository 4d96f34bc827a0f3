package fsguard

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// File is an open file returned by a guarded Fs. Reads and writes through
// it are not re-checked: the decision was made when it was opened, for
// where it was opened. Every call that changes the file's metadata or the
// process (Chmod, Chown, Truncate, Chdir) goes through the guard, checked
// where the file is now (on Linux, the kernel's name for the descriptor;
// elsewhere the name it was opened with), and acts on the open file itself.
//
// The raw *os.File cannot be reached through a File: it has no Fd,
// SyscallConn or Unwrap. A host that needs the raw files makes its handle
// with WithRawFiles. Release of the scope closes every File still open
// (unless the guard keeps handles, audit.WithKeepHandles); after that,
// every call on it fails with fs.ErrClosed, as on a closed *os.File.
type File struct {
	fs   *Fs
	f    afero.File
	osf  *os.File // f, when the base is the OS
	name string   // as the caller named it
	abs  string   // made absolute against the handle's directory at open
}

// Compile-time proof that a File is an afero.File and offers what
// *os.File offers beyond it.
var (
	_ afero.File      = (*File)(nil)
	_ fs.ReadDirFile  = (*File)(nil)
	_ io.ReaderFrom   = (*File)(nil)
	_ io.WriterTo     = (*File)(nil)
	_ io.StringWriter = (*File)(nil)
)

// guardFile wraps a file the Fs opened and ties it to the scope's release.
func (f *Fs) guardFile(fl afero.File, name, abs string) (afero.File, error) {
	if f.opts.rawFiles {
		return named(fl, name), nil
	}
	g := &File{fs: f, f: fl, name: name, abs: abs}
	g.osf, _ = fl.(*os.File)
	if f.scope != nil {
		if err := f.scope.TrackHandle(g); err != nil {
			// The scope ended while the call ran: the file is closed.
			return nil, pathErr("open", name, err)
		}
	}
	return g, nil
}

// Name returns the name the file was opened with.
func (g *File) Name() string { return g.name }

// Close closes the file.
func (g *File) Close() error {
	g.fs.scope.Untrack(g)
	return g.f.Close()
}

func (g *File) Read(b []byte) (int, error)                { return g.f.Read(b) }
func (g *File) ReadAt(b []byte, off int64) (int, error)   { return g.f.ReadAt(b, off) }
func (g *File) Seek(off int64, whence int) (int64, error) { return g.f.Seek(off, whence) }
func (g *File) Write(b []byte) (int, error)               { return g.f.Write(b) }
func (g *File) WriteAt(b []byte, off int64) (int, error)  { return g.f.WriteAt(b, off) }
func (g *File) WriteString(s string) (int, error)         { return g.f.WriteString(s) }
func (g *File) Readdir(n int) ([]os.FileInfo, error)      { return g.f.Readdir(n) }
func (g *File) Readdirnames(n int) ([]string, error)      { return g.f.Readdirnames(n) }
func (g *File) Stat() (os.FileInfo, error)                { return g.f.Stat() }
func (g *File) Sync() error                               { return g.f.Sync() }

// ReadDir reads the directory's entries, as (*os.File).ReadDir.
func (g *File) ReadDir(n int) ([]fs.DirEntry, error) {
	if d, ok := g.f.(fs.ReadDirFile); ok {
		return d.ReadDir(n)
	}
	infos, err := g.f.Readdir(n)
	out := make([]fs.DirEntry, len(infos))
	for i, fi := range infos {
		out[i] = fs.FileInfoToDirEntry(fi)
	}
	return out, err
}

// ReadFrom writes r's contents to the file (a write through the open
// handle), keeping *os.File's copy_file_range and splice fast paths.
func (g *File) ReadFrom(r io.Reader) (int64, error) {
	if g.osf != nil {
		return g.osf.ReadFrom(r)
	}
	return io.Copy(g.f, r)
}

// WriteTo writes the file's contents to w.
func (g *File) WriteTo(w io.Writer) (int64, error) {
	if g.osf != nil {
		return g.osf.WriteTo(w)
	}
	return io.Copy(w, g.f)
}

// SetDeadline and friends are as on *os.File (for pipes and FIFOs).
func (g *File) SetDeadline(t time.Time) error      { return g.deadline(t, (*os.File).SetDeadline) }
func (g *File) SetReadDeadline(t time.Time) error  { return g.deadline(t, (*os.File).SetReadDeadline) }
func (g *File) SetWriteDeadline(t time.Time) error { return g.deadline(t, (*os.File).SetWriteDeadline) }

func (g *File) deadline(t time.Time, set func(*os.File, time.Time) error) error {
	if g.osf == nil {
		return &fs.PathError{Op: "SetDeadline", Path: g.name, Err: os.ErrNoDeadline}
	}
	return set(g.osf, t)
}

// Truncate changes the file's size: a write of where the file is now.
func (g *File) Truncate(size int64) error {
	if err := g.check(policy.OpWrite, "truncate"); err != nil {
		return err
	}
	return g.f.Truncate(size)
}

// Chmod changes the file's mode: an attr change of where the file is now,
// carried out on the open file (fchmod), so a name swapped in between
// cannot redirect it.
func (g *File) Chmod(mode fs.FileMode) error {
	if err := g.check(policy.OpAttr, "chmod"); err != nil {
		return err
	}
	if g.osf != nil {
		return g.osf.Chmod(mode)
	}
	return g.fs.renameErr(g.fs.base.Chmod(g.abs, mode), "chmod", g.name)
}

// Chown changes the file's owner: an attr change, like Chmod.
func (g *File) Chown(uid, gid int) error {
	if err := g.check(policy.OpAttr, "chown"); err != nil {
		return err
	}
	if g.osf != nil {
		return g.osf.Chown(uid, gid)
	}
	return g.fs.renameErr(g.fs.base.Chown(g.abs, uid, gid), "chown", g.name)
}

// RuleProcessChdir denies File.Chdir: it would move the working directory
// of the whole process, host included, which no policy rule grants. It is
// a hard denial, so a host that opted in (audit.WithRescueHard) can let
// BeforeDeny allow it. Fs.Chdir moves the handle's own directory instead.
var RuleProcessChdir = &policy.Rule{Kind: policy.KindSystem, Pattern: "the process's working directory is not changed", Source: "fsguard",
	Hint: "use Fs.Chdir, which moves the guarded handle's own directory; or opt in with audit.WithRescueHard and allow it in BeforeDeny"}

type processChdirReq struct{}

func (processChdirReq) Decide(*policy.Policy) policy.Decision {
	return policy.Deny(policy.TierHard, RuleProcessChdir, "")
}

// Chdir makes the file, a directory, the process's working directory. It
// is denied unless a host callback allows it (RuleProcessChdir); the
// guarded handle's own directory does not change either way.
func (g *File) Chdir() error {
	f := g.fs
	ev := &audit.Event{Op: policy.OpChdir, Target: g.name, Resolved: g.where(), Detail: "File.Chdir (the process's working directory)"}
	if err := f.check(ev, processChdirReq{}); err != nil {
		return pathErr("chdir", g.name, err)
	}
	if g.osf == nil {
		return pathErr("chdir", g.name, errors.ErrUnsupported)
	}
	return g.osf.Chdir()
}

// check runs the pipeline for a metadata change through the open file.
func (g *File) check(op policy.Op, opName string) error {
	f := g.fs
	if f.scope.Begin() == nil {
		defer f.scope.End()
	}
	path := g.where()
	ev := &audit.Event{Op: op, Target: g.name, Resolved: path, Detail: opName + " through an open file"}
	req := &pathReq{op: op, path: path, cwd: f.getwd()}
	if !f.opts.multiLinkWrites {
		if fi, err := g.f.Stat(); err == nil && fi.Mode().IsRegular() {
			req.nlink = linkCount(fi)
		}
	}
	if err := f.check(ev, req); err != nil {
		return pathErr(opName, g.name, err)
	}
	return nil
}

// where returns where the file is now: the kernel's name for its
// descriptor on Linux (it follows renames), else the name it was opened
// with, resolved now. An unresolvable name is returned as opened; the
// policy then judges that.
func (g *File) where() string {
	if g.osf != nil {
		if rc, err := g.osf.SyscallConn(); err == nil {
			var p string
			var rerr error
			_ = rc.Control(func(fd uintptr) {
				p, rerr = os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
			})
			if rerr == nil && strings.HasPrefix(p, "/") && !strings.HasSuffix(p, " (deleted)") {
				return p
			}
		}
	}
	if r, err := policy.Resolve(&resolver{f: g.fs}, g.abs, "/", true); err == nil {
		return r
	}
	return g.abs
}

// file reports the name the caller used, for handles made WithRawFiles.
type file struct {
	afero.File
	name string
}

func (f *file) Name() string { return f.name }

// named returns fl reporting name, wrapping it only when its own name
// differs.
func named(fl afero.File, name string) afero.File {
	if fl == nil || fl.Name() == name {
		return fl
	}
	return &file{File: fl, name: name}
}
