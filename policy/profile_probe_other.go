//go:build !unix

package policy

import "io/fs"

// fileID has no device and inode to give where the system does not
// report them: the probe cache keys on path, size and time alone.
func fileID(fs.FileInfo) (dev, ino uint64) { return 0, 0 }
