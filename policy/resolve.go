package policy

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// FS is what path resolution needs from the filesystem being guarded. The
// OS filesystem satisfies it through OSFS; fsguard adapts any afero base.
type FS interface {
	Lstat(name string) (fs.FileInfo, error)
	Readlink(name string) (string, error)
}

// OSFS resolves against the operating system's filesystem.
type OSFS struct{}

func (OSFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }
func (OSFS) Readlink(name string) (string, error)   { return os.Readlink(name) }

// MaxSymlinks is how many symbolic links one resolution may follow, as on
// Linux. A longer chain is treated as a loop and denied.
const MaxSymlinks = 40

// Resolution errors. They all deny: a path that cannot be resolved safely
// is never guessed at.
var (
	ErrTooManyLinks = errors.New("too many levels of symbolic links")
	ErrNotDir       = errors.New("a middle component is not a directory")
	ErrInvalidPath  = errors.New("invalid path")
)

// ResolveError reports why a path could not be resolved.
type ResolveError struct {
	Path string // the path as asked
	At   string // the component being resolved when it failed
	Err  error
}

func (e *ResolveError) Error() string {
	if e.At != "" && e.At != e.Path {
		return "resolve " + e.Path + ": at " + e.At + ": " + e.Err.Error()
	}
	return "resolve " + e.Path + ": " + e.Err.Error()
}

func (e *ResolveError) Unwrap() error { return e.Err }

// Resolve returns where name really lands on fsys: an absolute path free of
// symbolic links, ".", ".." and repeated separators.
//
// Relative names are taken from cwd, which must be absolute. Resolution walks
// component by component: ".." after a symbolic link climbs from the link's
// target, not lexically; a link's relative target is read from the link's own
// directory. The last component is followed only when follow is true or the
// name ends in a separator. For a path that does not exist yet, the result is
// the deepest existing ancestor, resolved, plus the rest. Loops, over-long
// chains, a file used as a directory and any error other than "does not
// exist" fail, so callers deny.
func Resolve(fsys FS, name, cwd string, follow bool) (string, error) {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return "", &ResolveError{Path: name, Err: ErrInvalidPath}
	}
	rest := name
	if name[0] != '/' {
		if cwd == "" || cwd[0] != '/' || strings.IndexByte(cwd, 0) >= 0 {
			return "", &ResolveError{Path: name, Err: errors.New("relative path without an absolute working directory")}
		}
		rest = cwd + "/" + name
	}
	if name[len(name)-1] == '/' {
		follow = true
	}

	resolved := "/"
	missing := 0 // components appended lexically after the first that did not exist
	links := 0
	for {
		var comp string
		comp, rest = nextComponent(rest)
		if comp == "" {
			return resolved, nil
		}
		if comp == "." {
			continue
		}
		if comp == ".." {
			// resolved never holds a symbolic link, so its lexical parent is its
			// real parent.
			resolved = parentOf(resolved)
			if missing > 0 {
				missing--
			}
			continue
		}
		next := joinPath(resolved, comp)
		if missing > 0 {
			resolved = next
			missing++
			continue
		}
		last := isLast(rest)
		fi, err := fsys.Lstat(next)
		if err != nil {
			if isNotExist(err) {
				resolved = next
				missing = 1
				continue
			}
			return "", &ResolveError{Path: name, At: next, Err: err}
		}
		if fi.Mode()&fs.ModeSymlink != 0 && (!last || follow) {
			links++
			if links > MaxSymlinks {
				return "", &ResolveError{Path: name, At: next, Err: ErrTooManyLinks}
			}
			target, err := fsys.Readlink(next)
			if err != nil {
				return "", &ResolveError{Path: name, At: next, Err: err}
			}
			if target == "" || strings.IndexByte(target, 0) >= 0 {
				return "", &ResolveError{Path: name, At: next, Err: ErrInvalidPath}
			}
			if target[0] == '/' {
				resolved = "/"
			}
			if rest == "" {
				rest = target
			} else {
				rest = target + "/" + rest
			}
			continue
		}
		if !last && !fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 {
			return "", &ResolveError{Path: name, At: next, Err: ErrNotDir}
		}
		resolved = next
	}
}

// isNotExist is the only error class that may fall back to the parent.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOENT)
}

// nextComponent splits the first non-empty component off p.
func nextComponent(p string) (comp, rest string) {
	for len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return p, ""
}

// isLast reports whether rest holds no further component (a trailing "."
// or ".." still counts as one: it requires the current one to be a directory).
func isLast(rest string) bool {
	for i := 0; i < len(rest); i++ {
		if rest[i] != '/' {
			return false
		}
	}
	return true
}

func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// Within reports whether path is dir or lies below it, comparing whole
// components: "/allowed" does not contain "/allowed_evil". Both must be
// clean absolute paths.
func Within(path, dir string) bool {
	if dir == "/" {
		return len(path) > 0 && path[0] == '/'
	}
	if !strings.HasPrefix(path, dir) {
		return false
	}
	return len(path) == len(dir) || path[len(dir)] == '/'
}
