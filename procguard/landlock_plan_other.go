//go:build unix && !linux

package procguard

import (
	"errors"

	"github.com/auditguard/auditguard/procguard/landlock"
)

func (c *Cmd) plannedConfinement(pr *prepared) string {
	if pr.pol.Exec().NoLandlock {
		return "landlock=off (policy)"
	}
	return "landlock=none (Linux only)"
}

func withoutProtectedNote(note string) string { return note }

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
