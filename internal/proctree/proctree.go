// Package proctree reads the process table from /proc, for tests that
// must show that nothing a command or a sandbox started is still alive:
// live processes, children, pid namespace members. It is test support,
// internal to the module; it changes nothing.
package proctree

import (
	"os"
	"strconv"
	"strings"
)

// Stat returns pid's state letter ("R", "S", "Z", ...) and process group;
// ok is false when pid does not exist.
func Stat(pid int) (state string, pgid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold anything
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return "", 0, false
	}
	pg, err := strconv.Atoi(f[2])
	if err != nil {
		return "", 0, false
	}
	return f[0], pg, true
}

// Alive reports whether pid exists and is not a zombie (a killed process
// waiting to be reaped runs nothing).
func Alive(pid int) bool {
	state, _, ok := Stat(pid)
	return ok && state != "Z" && state != "X"
}

// Children lists this process's live children, from every thread's list
// (a child belongs to the thread that started it).
func Children() ([]int, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	var out []int
	seen := map[int]bool{}
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil || seen[pid] {
				continue
			}
			seen[pid] = true
			if Alive(pid) {
				out = append(out, pid)
			}
		}
	}
	return out, nil
}

// NsPid is pid's pid in its own (innermost) pid namespace, 0 if unknown.
func NsPid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f, ok := strings.CutPrefix(line, "NSpid:"); ok {
			fs := strings.Fields(f)
			if len(fs) > 0 {
				n, _ := strconv.Atoi(fs[len(fs)-1])
				return n
			}
		}
	}
	return 0
}

// inNamespace calls fn with each process of pid namespace ns (as
// /proc/PID/ns/pid names it, "pid:[4026532]"); fn returns false to stop.
func inNamespace(ns string, fn func(pid int) bool) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && l == ns && !fn(pid) {
			return
		}
	}
}

// HostPid maps a pid a sandboxed process printed (its pid in namespace
// ns) to the host's pid of the same process; 0 when none.
func HostPid(ns string, nspid int) int {
	found := 0
	inNamespace(ns, func(pid int) bool {
		if NsPid(pid) == nspid {
			found = pid
			return false
		}
		return true
	})
	return found
}

// NamespaceMembers lists the live processes of pid namespace ns, whose
// init has host pid initPid (0: not known). A freed namespace's inode
// number is soon reused by another one (the next sandbox, a pooled
// trampoline): when the namespace now named ns has another init, it is
// not the one the caller means, and nothing is listed (its own init gone,
// the kernel has ended every process of the old one).
func NamespaceMembers(ns string, initPid int) []int {
	var out []int
	reused := false
	inNamespace(ns, func(pid int) bool {
		if !Alive(pid) {
			return true
		}
		if initPid > 0 && pid != initPid && NsPid(pid) == 1 {
			reused = true
			return false
		}
		out = append(out, pid)
		return true
	})
	if reused {
		return nil
	}
	return out
}

// Descendants lists the live (non-zombie) processes below pid, children
// first. A process a command or a sandbox leaked would be one: orphans of
// a sandbox are reparented to its init, and the kernel kills every process
// of the pid namespace when that init exits. (Matching by pid namespace
// instead could find another process's sandbox that reused a freed
// namespace's inode number.)
func Descendants(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := parentOf(p); pp > 0 {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := children[pid]
	for len(queue) > 0 {
		p := queue[0]
		queue = append(queue[1:], children[p]...)
		if Alive(p) {
			out = append(out, p)
		}
	}
	return out
}

// parentOf is pid's parent, 0 if unknown.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}
