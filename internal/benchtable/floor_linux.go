package main

import "golang.org/x/sys/unix"

// statFloor is a side of the Stat row with no guard code at all: the
// system calls a checked Stat cannot do without, on the same file. A read
// with read-deny entries present must know that no symbolic link on the
// way leads the name somewhere else, and no stat call takes the resolve
// flags that would say so; the proof is an openat2 of the parent with no
// link followed, then fstatat of the entry from it, then close. The side
// shows how far below the Stat target that floor already is on this
// machine.
func statFloor(e *env, root string) *side {
	s := &side{name: sideFloor, note: "no guard code: openat2(root, \"a/b\", RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) + fstatat(\"read.txt\") + close, the calls a proof of the name needs"}
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		s.skip = "cannot open the root: " + err.Error()
		return s
	}
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	s.op = func(int) error {
		fd, err := unix.Openat2(rootFd, "a/b", &how)
		if err != nil {
			return err
		}
		var st unix.Stat_t
		err = unix.Fstatat(fd, "read.txt", &st, unix.AT_SYMLINK_NOFOLLOW)
		unix.Close(fd)
		return err
	}
	e.undo = append(e.undo, func() { unix.Close(rootFd) })
	return s
}

// rawLstat is the decision row's base side: the lstat system call on name
// through x/sys/unix, with no os.FileInfo made (its one allocation is the
// name's C string).
func rawLstat(name string) *side {
	var st unix.Stat_t
	return &side{
		name: sideLstat,
		op:   func(int) error { return unix.Lstat(name, &st) },
		note: "unix.Lstat(" + name + "): the system call alone, no os.FileInfo made",
	}
}
