//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// A sandbox that outlives a command (a Session's, a recycled one) holds
// objects by what its paths named when it was built: its write roots are
// mounts of the directories they were, its masks and read-only binds
// mounts over the files and directories they were, its Landlock rules on
// the inodes their paths named. Once a path names another object (a
// workspace removed and made again, a protected file replaced by a
// rename, a program upgraded), the sandbox would show the command the old
// one, so it serves no more commands (trampoline.stale): the next is
// started in a new sandbox, as it would have been without the reuse.

// idOf is what path names now, following links.
func idOf(path string) fileID {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return fileID{Path: path}
	}
	return fileID{Path: path, Dev: uint64(st.Dev), Ino: st.Ino}
}

// ruleIDs is what the paths of spec's Landlock rules name now; the host
// takes them before it sends the spec, so a path that changes before
// init opens it makes the sandbox stale, never the reverse.
func ruleIDs(spec *Spec) []fileID {
	if spec.Landlock == nil {
		return nil
	}
	ids := make([]fileID, len(spec.Landlock.Rules))
	for i, r := range spec.Landlock.Rules {
		ids[i] = idOf(r.Path)
	}
	return ids
}

// stale reports whether a path the sandbox holds now names another
// object than when the sandbox was built.
func (t *trampoline) stale() bool {
	for _, id := range t.held {
		if idOf(id.Path) != id {
			return true
		}
	}
	return false
}
