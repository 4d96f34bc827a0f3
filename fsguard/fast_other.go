//go:build !linux

package fsguard

import (
	"errors"
	"io/fs"
	"os"

	"github.com/spf13/afero"
)

// Without openat2 every call takes the slow path: policy.Resolve, then
// os.Root.

func openDirFd(string) int { return -1 }

func fastResolve(string, bool) (string, bool) { return "", false }
func closeDirFd(int)                          {}

func (f *Fs) fastOpenWrite(string, string, int, os.FileMode) (afero.File, error, bool) {
	return nil, nil, false
}
func (f *Fs) fastRemove(string, string) (error, bool)                    { return nil, false }
func (f *Fs) fastMkdir(string, string, os.FileMode) (error, bool)        { return nil, false }
func (f *Fs) fastRename(string, string, string) (error, bool)            { return nil, false }
func renameat(int, string, int, string) error                            { return errors.ErrUnsupported }
func linkat(int, string, int, string) error                              { return errors.ErrUnsupported }
func (f *Fs) fastOpenRead(string, string, int) (afero.File, error, bool) { return nil, nil, false }
func (f *Fs) fastStat(string, string, string, bool) (fs.FileInfo, error, bool) {
	return nil, nil, false
}

func openNoLinks(string, string, int) (afero.File, error) { return nil, errors.ErrUnsupported }
func statNoLinks(string, string) (fs.FileInfo, error)     { return nil, errors.ErrUnsupported }
