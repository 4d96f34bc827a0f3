package policyfile

import (
	"strconv"

	"github.com/auditguard/auditguard/policy"
)

// The top-level `use` key of a policy file names toolchain profiles
// (policy.Profile):
//
//	use = ["git", "go", "python", "coreutils", "make"]
//
// Each name is a profile ("go") or a profile version ("go@1"); the rules
// the profile adds carry "file:line profile go@1 (what it was found from)"
// as their Source. Only an operator layer may use profiles.

// decodeUse reads `use` into the exec spec.
func (d *fileDecoder) decodeUse(f *tfield, x *execFile) {
	if x.has == nil {
		x.has = map[string]filePos{}
	}
	x.has["use"] = f.pos
	for _, e := range d.entries(f, "use", policy.KindExec) {
		if _, err := policy.ProfileNamed(e.value); err != nil {
			d.fail(e.at, "use", err.Error())
			continue
		}
		x.spec.Use = append(x.spec.Use, policy.ProfileUse{Name: e.value, Source: d.name + ":" + strconv.Itoa(e.at.line)})
	}
}
