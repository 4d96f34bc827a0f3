package fsguard

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/policy"
)

// The routes of the reads, top to bottom. Every read takes one of them:
//
//  1. passthrough: the FS protocol is Off (scope rules still apply);
//  2. quiet: a silent scope whose policies cannot deny any read: the raw
//     call, since the decision cannot depend on the name;
//  3. fast (OS base): a lexically clean name the pure policies allow is
//     opened or looked at with no symbolic link followed
//     (fastOpenRead/fastStat): success, or a missing component, proves the
//     name is where it lands, the decision is made on it (the pipeline
//     runs unless the scope is silent, where the pure decision was the
//     decision), and the descriptor or information is handed back;
//  4. slow: the name is resolved component by component, the decision is
//     made once on the resolution, and on the OS base the act goes to the
//     resolved path again with no link followed (pinnedRead), so a link
//     swapped in after the decision makes it fail instead of redirecting
//     it; the route then starts again from the resolution (maxReroutes
//     times). Bases other than the OS, paths under /proc (whose magic links
//     name no path) and kernels without openat2 read by the name as
//     called.
//
// A fast path never runs the pipeline and then falls back: a call the
// pure policies deny, or one the kernel cannot prove, goes straight to the
// slow path, so every call is decided once.

// maxReroutes bounds how often a read starts again because its path
// changed between decision and act.
const maxReroutes = 3

// openRead is OpenFile without a write flag.
func (f *Fs) openRead(name string, flag int) (afero.File, error) {
	cwd := f.getwd()
	if f.quietRead() {
		fl, err := f.base.OpenFile(absAt(name, cwd), flag, 0)
		if err != nil {
			return nil, f.renameErr(err, "open", name)
		}
		return named(fl, name), nil
	}
	if fl, err, ok := f.fastOpenRead(name, cwd, flag); ok {
		return fl, err
	}
	follow := flag&syscall.O_NOFOLLOW == 0
	for try := 1; ; try++ {
		r, cwd, err := f.single(policy.OpRead, "open", name, follow, false, flag)
		if err != nil {
			return nil, err
		}
		if !f.pinnedRead(r.path) {
			fl, err := f.base.OpenFile(absAt(name, cwd), flag, 0)
			if err != nil {
				return nil, f.renameErr(err, "open", name)
			}
			return named(fl, name), nil
		}
		if !follow && r.info != nil && r.info.Mode()&fs.ModeSymlink != 0 {
			return nil, pathErr("open", name, syscall.ELOOP) // open(2) with O_NOFOLLOW on a link
		}
		fl, err := openNoLinks(r.target(), name, flag)
		if err == syscall.ELOOP && try < maxReroutes {
			continue // a link appeared on the decided path: decide again
		}
		if err != nil {
			return nil, pathErr("open", name, err)
		}
		return fl, nil
	}
}

// stat is Stat (follow) and Lstat (no follow) on the OS base.
func (f *Fs) stat(opName, name string, follow bool) (fs.FileInfo, error) {
	cwd := f.getwd()
	if f.quietRead() {
		return f.statByName(opName, absAt(name, cwd), name, follow)
	}
	if fi, err, ok := f.fastStat(opName, name, cwd, follow); ok {
		return fi, err
	}
	for try := 1; ; try++ {
		r, cwd, err := f.single(policy.OpRead, opName, name, follow, false, 0)
		if err != nil {
			return nil, err
		}
		if !f.pinnedRead(r.path) || r.path == "/" {
			return f.statByName(opName, absAt(name, cwd), name, follow)
		}
		info, err := statNoLinks(r.path, filepath.Base(name))
		if err == nil && follow && info.Mode()&fs.ModeSymlink != 0 {
			err = syscall.ELOOP // the resolution followed it: it was swapped in
		}
		if err == syscall.ELOOP && try < maxReroutes {
			continue
		}
		if err != nil {
			return nil, pathErr(opName, name, err)
		}
		if r.slash && !info.IsDir() {
			return nil, pathErr(opName, name, syscall.ENOTDIR)
		}
		return info, nil
	}
}

func (f *Fs) statByName(opName, abs, name string, follow bool) (fs.FileInfo, error) {
	var fi fs.FileInfo
	var err error
	if follow {
		fi, err = os.Stat(abs)
	} else {
		fi, err = os.Lstat(abs)
	}
	return fi, f.renameErr(err, opName, name)
}

// pinnedRead reports whether a read of the resolved path p is carried out
// with no link followed (see the route above).
func (f *Fs) pinnedRead(p string) bool {
	return f.isOS && !fastOff.Load() && p != "/proc" && !strings.HasPrefix(p, "/proc/")
}
