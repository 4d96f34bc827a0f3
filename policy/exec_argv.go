package policy

import (
	"sort"
	"strings"
)

// Reading a command's arguments as its tool does, so that a rule on an
// option matches every spelling the tool accepts: "--upload-p=x" (GNU and
// git accept any unambiguous prefix), "-iOid" (a short option inside a
// cluster, taking the rest of the word as its value), "tar tIf prog"
// (tar's old style: the first word is a cluster whose valued letters take
// the following words). The scan makes no allocation.

type itemKind uint8

const (
	itemOption    itemKind = iota + 1 // opt names it (value holds its value, if any)
	itemAmbiguous                     // a long prefix matching several options of sec
	itemUnknown                       // an option word the table does not list
	itemOperand                       // a non-option word (opt set when it is a risky command word)
)

type argItem struct {
	kind   itemKind
	opt    *ToolOption
	sec    *ToolSection
	word   string // the word as written (for options, the whole word)
	prefix string // itemAmbiguous: the long name as written
	value  string
	hasVal bool
}

// argScan walks the arguments after the program name.
type argScan struct {
	tool    *Tool
	sec     *ToolSection // nil: an unknown git command (everything unknown)
	args    []string
	i       int
	rest    string // letters left in a short-option cluster
	word    string // the word the cluster came from
	old     bool   // the cluster is tar's old-style first word
	done    bool   // after "--"
	global  bool   // git: before the command word
	started bool
}

func newArgScan(t *Tool, args []string) argScan {
	return argScan{tool: t, sec: t.Main, args: args, global: t.Style == StyleGit}
}

func (s *argScan) prefixes() bool {
	switch s.tool.Style {
	case StyleGNU:
		return true
	case StyleGit:
		return !s.global
	}
	return false
}

// next returns the next item, false at the end.
func (s *argScan) next() (argItem, bool) {
	if s.rest != "" {
		return s.short(), true
	}
	for s.i < len(s.args) {
		w := s.args[s.i]
		s.i++
		first := !s.started
		s.started = true
		if s.done || w == "-" || len(w) < 2 || w[0] != '-' {
			if first && s.tool.OldStyle && !s.done && w != "" && w[0] != '-' {
				s.rest, s.word, s.old = w, w, true
				return s.short(), true
			}
			it := argItem{kind: itemOperand, word: w, sec: s.sec}
			if s.global && !s.done {
				// git: the first operand is the command.
				it.opt = s.sec.words[w]
				s.sec = s.tool.Section(w)
				s.global = false
			} else if s.sec != nil && !s.done {
				it.opt = s.sec.words[w]
			}
			return it, true
		}
		if w == "--" {
			s.done = true
			if s.global {
				s.global = false
				s.sec = nil
			}
			continue
		}
		if s.sec == nil {
			return argItem{kind: itemUnknown, word: w}, true
		}
		if w[1] == '-' {
			return s.long(w), true
		}
		for _, o := range s.sec.multi {
			for _, m := range o.Short {
				if w[1:] == m {
					return s.valued(argItem{kind: itemOption, opt: o, sec: s.sec, word: w}, ""), true
				}
			}
		}
		if s.global {
			// git.c reads its own options whole: "-C dir", never "-Cdir" or "-pP".
			if len(w) == 2 && w[1] < 128 && s.sec.shorts[w[1]] != nil {
				return s.valued(argItem{kind: itemOption, opt: s.sec.shorts[w[1]], sec: s.sec, word: w}, ""), true
			}
			return argItem{kind: itemUnknown, word: w, sec: s.sec}, true
		}
		s.rest, s.word, s.old = w[1:], w, false
		return s.short(), true
	}
	return argItem{}, false
}

// short reads one letter of a cluster.
func (s *argScan) short() argItem {
	c := s.rest[0]
	after := s.rest[1:]
	s.rest = ""
	var o *ToolOption
	if c < 128 {
		o = s.sec.shorts[c]
	}
	if o == nil {
		s.rest = after // an unknown letter: the tool fails, keep reading
		return argItem{kind: itemUnknown, word: s.word, sec: s.sec}
	}
	it := argItem{kind: itemOption, opt: o, sec: s.sec, word: s.word}
	switch o.Arg {
	case ArgNone:
		s.rest = after
	case ArgOptional:
		if after != "" && !s.old {
			it.value, it.hasVal = after, true
		} else {
			s.rest = after
		}
	case ArgRequired:
		if s.old {
			// tar's old style: valued letters take the following words in order.
			s.rest = after
			if s.i < len(s.args) {
				it.value, it.hasVal = s.args[s.i], true
				s.i++
			}
		} else if after != "" {
			it.value, it.hasVal = after, true
		} else if s.i < len(s.args) {
			it.value, it.hasVal = s.args[s.i], true
			s.i++
		}
	}
	if s.rest == "" {
		s.old = false
	}
	return it
}

// long reads "--name", "--name=value", "--name value" and their prefixes.
func (s *argScan) long(w string) argItem {
	name, val, eq := strings.Cut(w[2:], "=")
	it := argItem{word: w, sec: s.sec}
	o, ambiguous := s.sec.lookupLong(name, s.prefixes())
	if o == nil && !ambiguous && s.tool.Style == StyleGit && strings.HasPrefix(name, "no-") {
		// git's negation of an option: it resets, runs nothing.
		if n, amb := s.sec.lookupLong(name[3:], true); n != nil || amb {
			it.kind = itemUnknown
			it.word = "" // a negation never matches a deny token
			return it
		}
	}
	switch {
	case o != nil:
		it.kind, it.opt = itemOption, o
	case ambiguous:
		it.kind, it.prefix = itemAmbiguous, name
		return it
	default:
		it.kind = itemUnknown
		return it
	}
	if eq {
		it.value, it.hasVal = val, true
	} else if o.Arg == ArgRequired && s.i < len(s.args) {
		it.value, it.hasVal = s.args[s.i], true
		s.i++
	}
	return it
}

func (s *argScan) valued(it argItem, _ string) argItem {
	if it.opt.Arg == ArgRequired && s.i < len(s.args) {
		it.value, it.hasVal = s.args[s.i], true
		s.i++
	}
	return it
}

// lookupLong finds the option a long name (or, with prefixes, an
// unambiguous prefix of one) names. An exact name wins; a prefix of
// several spellings of one option is that option (as glibc's getopt_long
// decides); a prefix of several options is ambiguous.
func (s *ToolSection) lookupLong(name string, prefixes bool) (o *ToolOption, ambiguous bool) {
	if name == "" {
		return nil, false
	}
	i := sort.Search(len(s.longs), func(i int) bool { return s.longs[i].name >= name })
	if i < len(s.longs) && s.longs[i].name == name {
		return s.longs[i].opt, false
	}
	if !prefixes {
		return nil, false
	}
	for j := i; j < len(s.longs) && strings.HasPrefix(s.longs[j].name, name); j++ {
		if o == nil {
			o = s.longs[j].opt
		} else if s.longs[j].opt != o {
			return nil, true
		}
	}
	return o, false
}

// candidates calls f for each option a long prefix may name, until f
// returns true.
func (s *ToolSection) anyCandidate(prefix string, f func(*ToolOption) bool) bool {
	i := sort.Search(len(s.longs), func(i int) bool { return s.longs[i].name >= prefix })
	for j := i; j < len(s.longs) && strings.HasPrefix(s.longs[j].name, prefix); j++ {
		if f(s.longs[j].opt) {
			return true
		}
	}
	return false
}

// deniedSpelling reports the built-in deny rule a word matches when read
// on its own: an exact spelling, "--name=value", a prefix of a long
// spelling, or a short spelling inside a cluster. It is the conservative
// reading for words the table cannot place (unknown options, a git command
// the table lacks, values that look like options).
func deniedSpelling(t *Tool, sec *ToolSection, w string, allow *execRule) *ToolOption {
	if len(w) < 2 || w[0] != '-' {
		return nil
	}
	if sec != nil {
		return deniedIn(sec, w, allow)
	}
	if o := deniedIn(t.Main, w, allow); o != nil {
		return o
	}
	for _, s := range t.Sections {
		if o := deniedIn(s, w, allow); o != nil {
			return o
		}
	}
	return nil
}

func deniedIn(s *ToolSection, w string, allow *execRule) *ToolOption {
	for _, o := range s.Options {
		if o.rule != nil && spells(o, w) && !allowNames(allow, o) {
			return o
		}
	}
	return nil
}

// spells reports whether word w could be a spelling of o: "--na" (a
// prefix), "--name=v", "-x" or a cluster holding x, "-TT".
func spells(o *ToolOption, w string) bool {
	if strings.HasPrefix(w, "--") {
		name, _, _ := strings.Cut(w[2:], "=")
		if name == "" {
			return false
		}
		for _, l := range o.Long {
			if strings.HasPrefix(l, name) {
				return true
			}
		}
		return false
	}
	for _, sh := range o.Short {
		if len(sh) == 1 {
			if strings.IndexByte(w[1:], sh[0]) >= 0 {
				return true
			}
		} else if strings.HasPrefix(w[1:], sh) {
			return true
		}
	}
	return false
}

// builtinDeny returns the built-in rule that denies args for tool t, nil
// when none does. An option the allowing rule names in its Args (allow)
// is let through for that rule.
func builtinDeny(t *Tool, args []string, allow *execRule, judged bool) *Rule {
	sc := newArgScan(t, args)
	for {
		it, ok := sc.next()
		if !ok {
			return nil
		}
		var r *Rule
		switch it.kind {
		case itemOption, itemOperand:
			if it.opt != nil && it.opt.rule != nil && !allowNames(allow, it.opt) && !(judged && it.opt.startsOnly) {
				r = it.opt.rule
				if it.opt.configKey {
					// git -c KEY=VALUE: only keys that run programs or read
					// configuration are denied (exec_gitconfig.go).
					r = gitConfigDeny(it.value, it.hasVal)
				}
			}
		case itemAmbiguous:
			it.sec.anyCandidate(it.prefix, func(o *ToolOption) bool {
				if o.rule != nil && !allowNames(allow, o) && !(judged && o.startsOnly) {
					r = o.rule
				}
				return r != nil
			})
		case itemUnknown:
			if it.word != "" {
				if o := deniedSpelling(t, it.sec, it.word, allow); o != nil {
					r = o.rule
				}
			}
		}
		if r == nil && it.hasVal && len(it.value) > 1 && it.value[0] == '-' {
			// A value that looks like a denied option: refused too, so a
			// table that misreads an option's value cannot hide one.
			if o := deniedSpelling(t, it.sec, it.value, allow); o != nil {
				r = o.rule
			}
		}
		if r != nil {
			return r
		}
	}
}

func allowNames(allow *execRule, o *ToolOption) bool {
	if allow == nil {
		return false
	}
	for _, a := range allow.rule.Args {
		if o.names(a) {
			return true
		}
	}
	return false
}

// denyMatchesOption reports whether deny token tok (an option spelling)
// matches an option of args in any spelling the tool accepts.
func denyMatchesOption(t *Tool, args []string, tok string) bool {
	sc := newArgScan(t, args)
	for {
		it, ok := sc.next()
		if !ok {
			return false
		}
		switch it.kind {
		case itemOption:
			if it.opt.names(tok) {
				return true
			}
		case itemAmbiguous:
			if it.sec.anyCandidate(it.prefix, func(o *ToolOption) bool { return o.names(tok) }) {
				return true
			}
		case itemUnknown:
			if it.word != "" && looseOption(tok, it.word) {
				return true
			}
		}
		if it.hasVal && len(it.value) > 1 && it.value[0] == '-' && looseOption(tok, it.value) {
			return true
		}
	}
}

// looseOption is the reading of a word for tools without a table: deny
// token "--flag" matches "--flag", "--flag=v" and any prefix "--fl"; "-f"
// matches "-f", "-fvalue" and any cluster "-xf".
func looseOption(tok, w string) bool {
	if len(tok) < 2 || tok[0] != '-' || len(w) < 2 || w[0] != '-' {
		return false
	}
	if strings.HasPrefix(tok, "--") {
		if !strings.HasPrefix(w, "--") {
			return false
		}
		name, _, _ := strings.Cut(w[2:], "=")
		return name != "" && strings.HasPrefix(tok[2:], name)
	}
	if strings.HasPrefix(w, "--") {
		return false
	}
	if len(tok) == 2 {
		return strings.IndexByte(w[1:], tok[1]) >= 0
	}
	return strings.HasPrefix(w, tok)
}
