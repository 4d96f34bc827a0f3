package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/auditguard/auditguard/policy"
)

// printProfiles prints what the policy's toolchain profiles expanded to,
// profile by profile, each value with what it was found from: the
// programs (and where they were found), the helper directories the tools
// reported, PATH entries, the variables set and let through.
func printProfiles(w io.Writer, p *policy.Policy) {
	items := p.ProfileItems()
	spec := p.Exec()
	if len(items) == 0 {
		return
	}
	var uses []string
	for _, u := range spec.Use {
		uses = append(uses, u.Name)
	}
	fmt.Fprintf(w, "toolchain profiles (use = %s):\n", strings.Join(uses, ", "))
	var order []string
	by := map[string][]policy.ProfileItem{}
	for _, it := range items {
		if _, ok := by[it.Profile]; !ok {
			order = append(order, it.Profile)
		}
		by[it.Profile] = append(by[it.Profile], it)
	}
	for _, id := range order {
		doc := ""
		if prof, err := policy.ProfileNamed(id); err == nil {
			doc = ": " + prof.Doc
		}
		fmt.Fprintf(w, "  %s%s\n", id, doc)
		var programs, missing, pass []string
		for _, it := range by[id] {
			switch it.Kind {
			case policy.ProfileProgram:
				programs = append(programs, it.Value)
			case policy.ProfileMissing:
				missing = append(missing, it.Value)
			case policy.ProfileEnvPass:
				pass = append(pass, it.Value)
			}
		}
		if len(programs) > 0 {
			fmt.Fprintln(w, "    programs     (allow rules)")
			wrap(w, "      ", programs, 96)
		}
		if len(missing) > 0 {
			fmt.Fprintln(w, "    not installed")
			wrap(w, "      ", missing, 96)
		}
		for _, it := range by[id] {
			switch it.Kind {
			case policy.ProfileHelperDir:
				fmt.Fprintf(w, "    helper dir   %s  (every program under it; from %s)\n", it.Value, it.From)
			case policy.ProfilePath:
				fmt.Fprintf(w, "    path         + %s  (from %s)\n", it.Value, it.From)
			case policy.ProfileEnvSet:
				fmt.Fprintf(w, "    env set      %s  (%s)\n", it.Value, it.From)
			case policy.ProfileNote:
				fmt.Fprintf(w, "    note         %s  (from %s)\n", it.Value, it.From)
			}
		}
		if len(pass) > 0 {
			fmt.Fprintln(w, "    env pass     (from the host or Cmd.Env)")
			wrap(w, "      ", pass, 96)
		}
	}
	if spec.NoBuiltinDeny {
		fmt.Fprintln(w, "  built-in option denials: off (no_builtin_deny)")
	} else {
		fmt.Fprintln(w, "  built-in option denials: on (builtin; no_builtin_deny = true turns them off)")
	}
	fmt.Fprintln(w)
}
