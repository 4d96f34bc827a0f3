package audit

import (
	"context"

	"github.com/auditguard/auditguard/policy"
)

// The guard takes what a watched policy file says: policyfile.Watch swaps
// the policy and the modes together through these methods. The guard meets
// policyfile's Swapper, ModeSwapper and PolicyModesSwapper; that is asserted
// in watch_test.go, so that audit does not depend on the file format.

// SetModes applies the modes of a policy file. A protocol the file leaves
// unset goes back to the mode given to New, so deleting `net = "off"` from
// the file really ends it. Denied from inside a scope.
func (g *Guard) SetModes(ctx context.Context, m policy.Modes) error {
	return g.update(ctx, "SetModes", func(s *state) { s.modes = g.fileModes(m) })
}

// SetPolicyAndModes swaps a policy and its file's modes in one atomic step:
// no decision ever sees the new policy with the old modes. Denied from inside
// a scope.
func (g *Guard) SetPolicyAndModes(ctx context.Context, p *policy.Policy, m policy.Modes) error {
	if p == nil {
		return ErrNilPolicy
	}
	return g.update(ctx, "SetPolicyAndModes", func(s *state) {
		s.pol = p
		s.modes = g.fileModes(m)
	})
}

func (g *Guard) fileModes(m policy.Modes) [numProtocols]Mode {
	out := g.baseModes
	for p, fm := range [numProtocols]policy.Mode{FS: m.FS, Exec: m.Exec, Net: m.Net} {
		switch fm {
		case policy.ModeEnforce:
			out[p] = Enforce
		case policy.ModeWarn:
			out[p] = Warn
		case policy.ModeOff:
			out[p] = Off
		}
	}
	return out
}
