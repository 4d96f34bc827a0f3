//go:build !unix

package fsguard

import "io/fs"

// oNoFollow is 0 where open has no O_NOFOLLOW: no flag asks not to follow
// a final link, so a write open is checked where the link leads.
const oNoFollow = 0

// linkCount is 0 where FileInfo carries no link count: the hard-link rule
// has nothing to go on there.
func linkCount(fs.FileInfo) uint64 { return 0 }
