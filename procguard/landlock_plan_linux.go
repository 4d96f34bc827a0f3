package procguard

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/landlock"
)

// noteProtected says what Landlock cannot do: its rights are inherited by
// everything beneath a rule, so a protected name inside a write root cannot
// be made read-only by the kernel (the guard still refuses it in-process).
const noteProtected = "protected names inside write roots are not kernel-enforced (Landlock rights are inherited by subtrees)"

// devices stay readable and writable for children.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// plannedConfinement says, before the decision is recorded, what kernel
// confinement the child will get. Start fails rather than run with less.
func (c *Cmd) plannedConfinement(pr *prepared) string {
	spec := pr.pol.Exec()
	if spec.NoLandlock {
		return "landlock=off (policy)"
	}
	abi, err := landlock.ABI()
	if err != nil {
		return "landlock=none (" + err.Error() + ")"
	}
	sig := ""
	if spec.DenyNetwork && abi >= 4 {
		sig += "; no TCP connect or bind"
	}
	if abi >= 6 {
		sig += "; no signals to processes outside the child's domain"
	}
	if spec.LandlockExecOnlyAllowed {
		return fmt.Sprintf("landlock=abi %d (write roots rw, everything else r, execute only allowed programs and their interpreters%s; %s)", abi, sig, noteProtected)
	}
	return fmt.Sprintf("landlock=abi %d (write roots rw, everything else rx%s; %s)", abi, sig, noteProtected)
}

// writableRoots are the write roots every policy of the scope allows
// writing to, with the host working directory for a "." root.
func writableRoots(pr *prepared) []string {
	var cand []string
	for _, p := range pr.pols {
		cand = append(cand, p.WriteRoots()...)
		if p.DotRoot() && pr.cwd != "" {
			cand = append(cand, pr.cwd)
		}
	}
	var out []string
next:
	for _, r := range cand {
		for _, p := range pr.pols {
			if d := p.CheckPath(policy.OpWrite, r, pr.cwd); !d.Allowed {
				continue next
			}
		}
		if landlock.Exists(r) {
			out = append(out, r)
		}
	}
	return out
}

// landlockRuleset builds the child's ruleset, or nil with a note when there
// is none; an error when the policy requires Landlock and it is missing.
func (c *Cmd) landlockRuleset(pr *prepared) (*landlock.Ruleset, string, error) {
	spec := pr.pol.Exec()
	if spec.NoLandlock {
		return nil, "disabled by the policy (ExecSpec.NoLandlock)", nil
	}
	abi, err := landlock.ABI()
	if err != nil {
		if spec.RequireLandlock {
			return nil, err.Error(), fmt.Errorf("procguard: the policy requires Landlock: %w", err)
		}
		return nil, err.Error(), nil
	}
	rs := &landlock.Ruleset{ABI: abi, Scoped: landlock.ScopeSignal, DenyTCP: spec.DenyNetwork}
	note := noteProtected
	if spec.DenyNetwork && abi < 4 {
		if spec.RequireLandlock {
			return nil, "", fmt.Errorf("procguard: the policy denies children the network, which needs Landlock ABI 4 (this kernel has %d)", abi)
		}
		note += "; network not restricted: Landlock ABI 4 needed"
	}
	everywhere, writable := uint64(landlock.ReadExec), landlock.HandledFS(abi)
	if spec.LandlockExecOnlyAllowed {
		everywhere &^= landlock.Execute
		writable &^= landlock.Execute
		for _, prog := range executables(pr) {
			rs.Rules = append(rs.Rules, landlock.Rule{Path: prog, Access: landlock.Execute | landlock.ReadFile})
		}
	}
	rs.Rules = append(rs.Rules, landlock.Rule{Path: "/", Access: everywhere})
	for _, r := range writableRoots(pr) {
		rs.Rules = append(rs.Rules, landlock.Rule{Path: r, Access: writable})
	}
	for _, d := range devices {
		if landlock.Exists(d) {
			rs.Rules = append(rs.Rules, landlock.Rule{Path: d,
				Access: landlock.ReadFile | landlock.WriteFile | landlock.Truncate | landlock.IoctlDev})
		}
	}
	rs.Normalize()
	if len(rs.Rules) == 0 {
		return nil, "", errors.New("procguard: empty Landlock ruleset")
	}
	return rs, note, nil
}

// executables are the files a child may execute under
// LandlockExecOnlyAllowed: the programs of the plan and of every allow rule
// every policy of the scope shares, plus the ELF interpreters and "#!"
// interpreters they need.
func executables(pr *prepared) []string {
	seen := map[string]bool{}
	var out []string
	var add func(p string, depth int)
	add = func(p string, depth int) {
		if p == "" || seen[p] || depth > 4 {
			return
		}
		seen[p] = true
		out = append(out, p)
		if interp := interpreter(p); interp != "" {
			if real, err := filepath.EvalSymlinks(interp); err == nil {
				add(real, depth+1)
			}
		}
	}
	for _, prog := range pr.pol.ExecPrograms() {
		shared := true
		for _, p := range pr.pols[1:] {
			if !slices.Contains(p.ExecPrograms(), prog) {
				shared = false
			}
		}
		if shared {
			add(prog, 0)
		}
	}
	for _, c := range pr.req.Plan.Commands {
		add(c.Program, 0)
	}
	for _, c := range pr.req.Plan.Wrappers {
		add(c.Program, 0)
	}
	return out
}

// interpreter returns the ELF interpreter (PT_INTERP) or "#!" interpreter
// of an executable file, or "".
func interpreter(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var head [256]byte
	n, _ := io.ReadFull(f, head[:])
	if n > 2 && head[0] == '#' && head[1] == '!' {
		line := string(head[2:n])
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		if fields := strings.Fields(line); len(fields) > 0 {
			return fields[0]
		}
		return ""
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return ""
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				return strings.TrimRight(string(b), "\x00")
			}
		}
	}
	return ""
}
