//go:build !linux

package fsguard

import (
	"errors"
	"io/fs"
	"os"

	"github.com/spf13/afero"
)

// Without openat2 every call takes the slow route: policy.Resolve, then
// os.Root.

const fastRoutes = false

func openDirFd(string) int { return -1 }
func closeDirFd(int)       {}

func fastResolve(string, bool) bool { return false }

// pin holds nothing here: the fast route is never taken.
type pin struct {
	ok, missing bool
}

func (p *pin) release()                {}
func (p *pin) nlink() (uint64, bool)   { return 0, false }
func (p *pin) file(string) afero.File  { return nil }
func (p *pin) stat() fs.FileInfo       { return nil }
func (p *pin) remove() error           { return errors.ErrUnsupported }
func (p *pin) mkdir(os.FileMode) error { return errors.ErrUnsupported }
func (p *pin) openWrite(string, string, int, os.FileMode) (afero.File, error, bool) {
	return nil, errors.ErrUnsupported, false
}

func (f *Fs) pin(*call, pinKind) bool                     { return false }
func (f *Fs) pinRename(*call, string, string) bool        { return false }
func rename(*pin, *pin) error                             { return errors.ErrUnsupported }
func renameat(int, string, int, string) error             { return errors.ErrUnsupported }
func linkat(int, string, int, string) error               { return errors.ErrUnsupported }
func openNoLinks(string, string, int) (afero.File, error) { return nil, errors.ErrUnsupported }
func statNoLinks(string, string) (fs.FileInfo, error)     { return nil, errors.ErrUnsupported }
