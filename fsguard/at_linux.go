package fsguard

import "golang.org/x/sys/unix"

// renameat and linkat act on names inside directory handles that were
// opened through os.Root, so neither name can be carried outside its root
// by a symbolic link swapped into the parent chain. The names are single
// components (no "/").
func renameat(olddir int, oldname string, newdir int, newname string) error {
	return unix.Renameat(olddir, oldname, newdir, newname)
}

func linkat(olddir int, oldname string, newdir int, newname string) error {
	return unix.Linkat(olddir, oldname, newdir, newname, 0)
}
