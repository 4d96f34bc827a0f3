package policy

import (
	"errors"
	"path/filepath"
	"strings"
)

// Rules for every program under a directory (ExecRule.Under): what an
// agent builds or writes in its workspace ($WS/bin/hello, ./run.sh), the
// test binaries `go test` builds in TMPDIR, a tool's helper directory
// (git's exec path, GOTOOLDIR). The decision is the same as for a named
// program (deny rules, the option tables of a program named like a tool);
// procguard decides how far the kernel lets children execute such files
// (docs/exec.md, "Programs under a directory").

// buildUnder validates and indexes one Under rule.
func (x *execRules) buildUnder(r ExecRule, src string) error {
	switch {
	case r.Program != "":
		return errors.New("a rule names either a program or a directory (under), not both")
	case !filepath.IsAbs(r.Under):
		return errors.New("under must be an absolute directory")
	case len(r.Env) > 0 && r.Deny:
		return errors.New("a deny rule has no env")
	}
	for _, a := range r.Args {
		if a == "" || strings.IndexByte(a, 0) >= 0 {
			return errors.New("empty or NUL argument token")
		}
	}
	dir, err := Resolve(OSFS{}, r.Under, "/", true)
	if err != nil {
		return err
	}
	pat := "under " + dir
	if len(r.Args) > 0 {
		pat += " " + strings.Join(r.Args, " ")
	}
	hint := "build or write the program under an allowed directory, add an allow rule for it, or rescue the call in BeforeDeny"
	if r.Deny {
		pat = "deny " + pat
		hint = "drop the deny rule, or opt in with audit.WithRescueHard and rescue it in BeforeDeny"
	}
	er := &execRule{rule: r, prog: dir, env: newNameSet(r.Env),
		r: &Rule{Kind: KindExec, Pattern: pat, Source: src, Hint: hint}}
	for _, ex := range r.Match {
		if !er.matches(ex) {
			return errors.New("example " + quote(strings.Join(ex, " ")) + " does not match")
		}
	}
	for _, ex := range r.NoMatch {
		if er.matches(ex) {
			return errors.New("counter-example " + quote(strings.Join(ex, " ")) + " matches")
		}
	}
	if r.Deny {
		x.hasDeny = true
	}
	x.under = append(x.under, er)
	x.all = append(x.all, er)
	return nil
}

// expandSpec expands the toolchain profiles of spec.
func expandSpec(spec ExecSpec) (ExecSpec, []ProfileItem, []error) {
	out, items, err := expandProfiles(spec)
	if err != nil {
		return out, items, []error{err}
	}
	return out, items, nil
}

// underCovered reports why a workspace layer's Under allow rule is not
// within an operator Under allow rule ("" when it is): the operator's
// directory must hold the workspace's, its args cover them, and it must
// let through every variable the workspace rule names.
func underCovered(ox *execRules, r ExecRule) string {
	dir, err := Resolve(OSFS{}, r.Under, "/", true)
	if err != nil {
		return ": " + err.Error()
	}
	for _, o := range ox.under {
		if o.rule.Deny || (dir != o.prog && !underDir(dir, o.prog)) || !argsCover(o.rule.Args, r.Args) {
			continue
		}
		ok := true
		for _, n := range r.Env {
			if !envCovers(ox.env, n) && !envCovers(o.env, n) {
				ok = false
			}
		}
		if ok {
			return ""
		}
	}
	return ": no operator rule allows programs under that directory with these arguments and variables"
}
