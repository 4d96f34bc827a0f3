package policy_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// fuzzTools builds a policy that allows every tabled tool with any
// arguments, the tools being empty executables in a temp dir (nothing
// runs: CheckExec only reads names).
func fuzzTools(f *testing.F) (*policy.Policy, map[string]string, []*policy.Tool) {
	bin := filepath.Join(f.TempDir(), "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		f.Fatal(err)
	}
	var rules []policy.ExecRule
	progs := map[string]string{}
	var tools []*policy.Tool
	for _, t := range policy.Tools() {
		if len(t.DeniedOptions()) == 0 {
			continue
		}
		p := filepath.Join(bin, t.Name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			f.Fatal(err)
		}
		progs[t.Name] = p
		tools = append(tools, t)
		rules = append(rules, policy.ExecRule{Program: p})
	}
	pol, err := policy.New(policy.Spec{WriteRoots: []string{bin}, Exec: policy.ExecSpec{Path: []string{bin}, Rules: rules}})
	if err != nil {
		f.Fatal(err)
	}
	return pol, progs, tools
}

type fuzzBytes struct {
	b []byte
	i int
}

func (f *fuzzBytes) n(max int) int {
	if max <= 0 {
		return 0
	}
	if f.i >= len(f.b) {
		return 0
	}
	v := int(f.b[f.i])
	f.i++
	return v % max
}

// spell writes option o in a random spelling its tool accepts: long
// (exact, abbreviated, "=value" or separate value), short (alone,
// attached value, at the end of a cluster of switches), or multi-letter.
func spell(fb *fuzzBytes, t *policy.Tool, sec *policy.ToolSection, o *policy.ToolOption, oldStyleFirst bool) (words []string) {
	if o.Word != "" {
		return []string{o.Word}
	}
	val := "val"
	if o.JudgesConfigKey() {
		// git -c KEY=VALUE is judged by its key: give it a key that runs a program.
		val = "core.fsmonitor=val"
	}
	var switches []string
	for _, x := range sec.Options {
		if x.Arg == policy.ArgNone && x.Risk == policy.RiskSafe {
			for _, s := range x.Short {
				if len(s) == 1 && sec.Option("-"+s) == x {
					switches = append(switches, s)
				}
			}
		}
	}
	sort.Strings(switches)
	useShort := len(o.Short) > 0 && (len(o.Long) == 0 || fb.n(2) == 0)
	if useShort {
		s := o.Short[fb.n(len(o.Short))]
		if len(s) > 1 || (t.Style == policy.StyleGit && sec == t.Main) {
			words = []string{"-" + s}
			if o.Arg == policy.ArgRequired {
				words = append(words, val)
			}
			return words
		}
		cluster := ""
		if t.Style != policy.StylePartial {
			for k := fb.n(3); k > 0 && len(switches) > 0; k-- {
				cluster += switches[fb.n(len(switches))]
			}
		}
		cluster += s
		if oldStyleFirst && t.OldStyle && o.Arg != policy.ArgOptional {
			words = []string{cluster}
			if o.Arg == policy.ArgRequired {
				words = append(words, val)
			}
			return words
		}
		switch o.Arg {
		case policy.ArgRequired:
			if fb.n(2) == 0 {
				return []string{"-" + cluster + val}
			}
			return []string{"-" + cluster, val}
		case policy.ArgOptional:
			if fb.n(2) == 0 {
				return []string{"-" + cluster + val}
			}
		}
		return []string{"-" + cluster}
	}
	l := o.Long[fb.n(len(o.Long))]
	if t.Style == policy.StyleGNU || (t.Style == policy.StyleGit && sec != t.Main) {
		// Any prefix: unambiguous ones run it, ambiguous ones fail; one that
		// is another option's whole name is that option, so skip those.
		k := 1 + fb.n(len(l))
		for k < len(l) {
			if x := sec.Option("--" + l[:k]); x == nil || x == o {
				break
			}
			k++
		}
		l = l[:k]
	}
	switch {
	case o.Arg == policy.ArgNone:
		return []string{"--" + l}
	case o.Arg == policy.ArgOptional || fb.n(2) == 0:
		return []string{"--" + l + "=" + val}
	}
	return []string{"--" + l, val}
}

// safeWords returns a harmless option of sec, spelled whole, with a value
// when it takes one, or an operand.
func safeWords(fb *fuzzBytes, sec *policy.ToolSection, optsOnly bool) []string {
	if len(sec.Options) == 0 || (fb.n(3) == 0 && !optsOnly) {
		return []string{[]string{"file.txt", "main", "x y", "a=b"}[fb.n(4)]}
	}
	o := sec.Options[fb.n(len(sec.Options))]
	if o.Risk != policy.RiskSafe || o.Word != "" {
		return nil
	}
	sp := o.Spellings()[0]
	switch o.Arg {
	case policy.ArgRequired:
		return []string{sp, "val"}
	case policy.ArgOptional:
		if len(sp) > 2 && sp[1] == '-' {
			return []string{sp + "=val"}
		}
	}
	return []string{sp}
}

// FuzzDeniedOptionSpellings: random argv over the tabled tools never
// yields an allow when it holds a denied option, whatever its spelling.
func FuzzDeniedOptionSpellings(f *testing.F) {
	pol, progs, tools := fuzzTools(f)
	for _, seed := range []string{"", "\x00\x01\x02", "\x05\x03\x07\x01\x09", "\xff\xfe\x10\x20\x30\x40\x50"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		tool := tools[fb.n(len(tools))]
		secs := tool.AllSections()
		var cands []*policy.ToolSection
		for _, s := range secs {
			for _, o := range s.Options {
				if o.Risk == policy.RiskRuns || o.Risk == policy.RiskConfig {
					cands = append(cands, s)
					break
				}
			}
		}
		sec := cands[fb.n(len(cands))]
		var denied []*policy.ToolOption
		for _, o := range sec.Options {
			if o.Risk == policy.RiskRuns || o.Risk == policy.RiskConfig {
				denied = append(denied, o)
			}
		}
		o := denied[fb.n(len(denied))]
		argv := []string{tool.Name}
		git := tool.Style == policy.StyleGit
		if git && sec != tool.Main {
			argv = append(argv, sec.Name)
		}
		first := len(argv) == 1 && !git
		if first && tool.OldStyle && fb.n(2) == 0 {
			argv = append(argv, spell(fb, tool, sec, o, true)...)
		} else {
			for k := fb.n(4); k > 0; k-- {
				// git's global options come before the command word: no operands there.
				argv = append(argv, safeWords(fb, sec, git && sec == tool.Main)...)
			}
			if git && o.Word != "" && sec != tool.Main {
				argv = argv[:2] // the command word comes right after its command
			}
			argv = append(argv, spell(fb, tool, sec, o, false)...)
			if !(git && sec == tool.Main && o.Word != "") {
				for k := fb.n(4); k > 0; k-- {
					argv = append(argv, safeWords(fb, sec, git && sec == tool.Main)...)
				}
			}
		}
		if git && sec == tool.Main && o.Word == "" {
			argv = append(argv, "log")
		}
		if d := pol.CheckExec(progs[tool.Name], argv); d.Allowed {
			t.Fatalf("%q allowed (rule %v); it holds %s %s", argv, d.Rule, sec.Name, o.Spelling())
		}
	})
}
