//go:build unix && !linux

package procguard

import "syscall"

// cgroup is Linux-only; elsewhere there is none.
type cgroup struct {
	dir string
	fd  int
}

func newCgroup() (*cgroup, string)            { return nil, "cgroups are Linux-only" }
func (g *cgroup) attach(*syscall.SysProcAttr) {}
func (g *cgroup) closeFD()                    {}
func (g *cgroup) kill()                       {}
func (g *cgroup) drain()                      {}
func (g *cgroup) remove()                     {}
