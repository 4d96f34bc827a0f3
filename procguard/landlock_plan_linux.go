package procguard

import (
	"errors"
	"fmt"

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
	return fmt.Sprintf("landlock=abi %d (write roots rw, everything else rx; %s)", abi, noteProtected)
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
	rs := &landlock.Ruleset{ABI: abi}
	rs.Rules = append(rs.Rules, landlock.Rule{Path: "/", Access: landlock.ReadExec})
	for _, r := range writableRoots(pr) {
		rs.Rules = append(rs.Rules, landlock.Rule{Path: r, Access: landlock.HandledFS(abi)})
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
	return rs, noteProtected, nil
}
