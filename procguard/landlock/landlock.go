// Package landlock confines one OS thread (and the children it starts) with
// Linux Landlock filesystem rules, leaving the rest of the process free.
//
// Landlock domains apply per thread and are inherited by children. Start
// locks a dedicated goroutine to its thread, restricts that thread only,
// starts the child from it and lets the goroutine exit still locked, so the
// Go runtime discards the thread instead of reusing it. New runtime threads
// are cloned from the runtime's template thread, never from a restricted
// one, so the restriction cannot leak into the host.
package landlock

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// Filesystem access rights, as in <linux/landlock.h>.
const (
	Execute    = 0x1
	WriteFile  = 0x2
	ReadFile   = 0x4
	ReadDir    = 0x8
	RemoveDir  = 0x10
	RemoveFile = 0x20
	MakeChar   = 0x40
	MakeDir    = 0x80
	MakeReg    = 0x100
	MakeSock   = 0x200
	MakeFifo   = 0x400
	MakeBlock  = 0x800
	MakeSym    = 0x1000
	Refer      = 0x2000 // ABI 2
	Truncate   = 0x4000 // ABI 3
	IoctlDev   = 0x8000 // ABI 5

	// ReadExec is what every path outside the writable roots keeps.
	ReadExec = ReadFile | ReadDir | Execute
	// fileRights are the rights that apply to a regular file rule.
	fileRights = Execute | WriteFile | ReadFile | Truncate | IoctlDev
)

// HandledFS returns the filesystem rights Landlock ABI abi can restrict.
func HandledFS(abi int) uint64 {
	if abi < 1 {
		return 0
	}
	h := uint64(Execute | WriteFile | ReadFile | ReadDir | RemoveDir | RemoveFile | MakeChar |
		MakeDir | MakeReg | MakeSock | MakeFifo | MakeBlock | MakeSym)
	if abi >= 2 {
		h |= Refer
	}
	if abi >= 3 {
		h |= Truncate
	}
	if abi >= 5 {
		h |= IoctlDev
	}
	return h
}

// Rule grants rights on a path and everything beneath it.
type Rule struct {
	Path   string
	Access uint64
}

// Ruleset is a set of path rules under one ABI.
type Ruleset struct {
	ABI   int
	Rules []Rule
	// Scoped asks for IPC scoping (ABI 6+): ScopeSignal keeps the child
	// from signalling processes outside its domain (the host among them).
	// Ignored below ABI 6.
	Scoped uint64
	// DenyTCP handles TCP bind and connect with no rule allowing them, so
	// the domain may open no TCP socket to anywhere (ABI 4+; ignored
	// below, which Status.HandledNet shows).
	DenyTCP bool
}

// Network rights (ABI 4).
const (
	NetBindTCP    = 0x1
	NetConnectTCP = 0x2
)

// IPC scopes (ABI 6).
const (
	ScopeAbstractUnixSocket = 0x1
	ScopeSignal             = 0x2
)

// Status says exactly what a Ruleset enforced.
type Status struct {
	ABI     int    // the ABI used, 0 when nothing was enforced
	Handled uint64 // the rights the domain restricts
	Scoped  uint64 // the IPC scopes enforced (ABI 6+)
	// HandledNet are the network rights restricted, none of them granted.
	HandledNet uint64
	// Rules are the rules actually added (paths that exist), in order.
	Rules []Rule
	// Skipped lists rules that could not be added, with the reason.
	Skipped []string
}

// String renders the status for events and logs.
func (s Status) String() string {
	if s.ABI == 0 {
		return "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "abi %d fs=%#x", s.ABI, s.Handled)
	if s.HandledNet != 0 {
		b.WriteString(" tcp=denied")
	}
	if s.Scoped&ScopeSignal != 0 {
		b.WriteString(" scope=signal")
	}
	if s.Scoped&ScopeAbstractUnixSocket != 0 {
		b.WriteString(" scope=abstract-unix")
	}
	for _, r := range s.Rules {
		fmt.Fprintf(&b, " %s:%s", r.Path, AccessString(r.Access))
	}
	return b.String()
}

// AccessString renders rights compactly: "rx", "rwx", "rw".
func AccessString(a uint64) string {
	var s string
	if a&(ReadFile|ReadDir) != 0 {
		s += "r"
	}
	if a&(WriteFile|MakeReg|RemoveFile) != 0 {
		s += "w"
	}
	if a&Execute != 0 {
		s += "x"
	}
	return s
}

// Normalize sorts rules by path and merges duplicates; useful for stable
// reports.
func (rs *Ruleset) Normalize() {
	m := map[string]uint64{}
	for _, r := range rs.Rules {
		m[r.Path] |= r.Access
	}
	rs.Rules = rs.Rules[:0]
	for p, a := range m {
		rs.Rules = append(rs.Rules, Rule{p, a})
	}
	sort.Slice(rs.Rules, func(i, j int) bool { return rs.Rules[i].Path < rs.Rules[j].Path })
}

// Exists reports whether path exists (only existing paths can be rules).
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
