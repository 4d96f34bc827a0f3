//go:build !linux

package procguard

import (
	"os"
	"sync"
	"syscall"
)

// Outside Linux there are no cgroups: a command is killed through its
// process group only, and no limit is shared by its tree.

type cgroup struct {
	dir string
	fd  int
}

const cgLinuxOnly = "cgroups are Linux-only"

// The discovery state export_test.go switches off; there is nothing to
// discover here.
var (
	cgOnce          sync.Once
	cgParent, cgWhy string
)

func findCgroupParent() {}

func newCgroup(l cgroupLimits) (*cgroup, CgroupStatus) {
	return nil, missingStatus(l, CgroupLinuxOnly, cgLinuxOnly)
}

func (g *cgroup) attach(*syscall.SysProcAttr) {}
func (g *cgroup) join(pid int) error          { return nil }
func (g *cgroup) joinAll(pid int) error       { return nil }

func (g *cgroup) treeJoin() (initJoin func(int) error, tree *os.File, err error) {
	return nil, nil, nil
}
func (g *cgroup) sessionJoin() ([]*os.File, error) { return nil, nil }
func (g *cgroup) closeFD()                         {}
func (g *cgroup) kill()                            {}
func (g *cgroup) populated() bool                  { return false }
func (g *cgroup) killIfPopulated()                 {}
func (g *cgroup) drain()                           {}
func (g *cgroup) remove()                          {}
func shutdownCgroups()                             {}
