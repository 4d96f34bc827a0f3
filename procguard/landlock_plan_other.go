//go:build !linux

package procguard

import (
	"errors"

	"github.com/auditguard/auditguard/audit"

	"github.com/auditguard/auditguard/procguard/landlock"
)

func (c *Cmd) plannedConfinement(pr *prepared) (string, *audit.Child) {
	text := "landlock=none (Linux only)"
	if pr.pol.Exec().NoLandlock {
		text = "landlock=off (policy)"
	}
	return text, &audit.Child{Dir: pr.req.Dir, Network: audit.NetworkHost, Note: text}
}

func withoutProtectedNote(note string) string { return note }

func (c *Cmd) landlockRulesetFor(pr *prepared, _ bool) (*landlock.Ruleset, string, error) {
	return c.landlockRuleset(pr)
}

func (c *Cmd) landlockRuleset(pr *prepared) (*landlock.Ruleset, string, error) {
	spec := pr.pol.Exec()
	if spec.NoLandlock {
		return nil, "disabled by the policy (ExecSpec.NoLandlock)", nil
	}
	if spec.RequireLandlock {
		return nil, "Landlock is Linux-only", errors.New("procguard: the policy requires Landlock, which is Linux-only")
	}
	return nil, "Landlock is Linux-only", nil
}

func sandboxExecDirs(_ *prepared, rs *landlock.Ruleset) *landlock.Ruleset { return rs }
