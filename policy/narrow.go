package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// Narrowing: whether the rules of one policy let through only what a wider
// one does. A front end that stacks policies (package policyfile, where a
// workspace layer may only narrow the operator's) asks the wider policy
// these questions; they are matching questions, so they live beside the
// matchers. Each answer is a phrase that names the narrower rule and says
// why it is not covered, in the terms of an operator (the wider policy) and
// a workspace layer, and it is "" when the rule is covered.

// ExecAllowWithin reports why the allow rule r lets through a call that no
// allow rule of p lets through ("" when p covers it): the same real program
// (a bare name looked up on path) or a directory under one of p's Under
// rules, an argument prefix p's rule covers, and every variable r lets
// through allowed by p's env or by each overlapping rule. The error says r's
// program could not be resolved. It resolves programs and directories on
// the real filesystem.
func (p *Policy) ExecAllowWithin(r ExecRule, path []string) (string, error) {
	ox := &p.exec
	if r.Under != "" {
		if why := underCovered(ox, r); why != "" {
			return "under " + quote(r.Under) + why, nil
		}
		return "", nil
	}
	prog, err := RealProgram(r.Program, path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", quote(r.Program), err)
	}
	if why := execCovered(ox, prog, r); why != "" {
		return execRuleString(r) + why, nil
	}
	return "", nil
}

// ExecEnvWithin reports whether p's exec env (ExecSpec.Env) lets through
// every variable the env entry n ("NAME" or "PREFIX_*") lets through.
func (p *Policy) ExecEnvWithin(n string) bool { return envCovers(p.exec.env, n) }

// RealProgram returns the real path a rule's program names, as Build
// resolves it: a bare name looked up on path (DefaultExecPath when empty),
// an absolute path as it is, symbolic links resolved.
func RealProgram(name string, path []string) (string, error) {
	if len(path) == 0 {
		path = DefaultExecPath
	}
	x := execRules{path: path}
	return x.programPath(name)
}

// NetAllowWithin reports why the allow rule r lets through an address or
// port that no allow rule of wider lets through ("" when they cover it, and
// when r or a rule of wider is invalid: building reports those): a host
// equal to a wider host or under a wider wildcard, a CIDR inside a wider
// CIDR that unlocks no more special-purpose addresses, a socket path under
// a wider path, of the same network and direction, and its ports within
// the ports the covering rules allow together. Deny rules of wider are
// ignored.
func NetAllowWithin(wider []NetRule, r NetRule) string {
	var ops []opNetRule
	for _, o := range wider {
		if o.Deny {
			continue
		}
		if x, err := parseNetRule(o); err == nil {
			ops = append(ops, opNetRule{o, x})
		}
	}
	w, err := parseNetRule(r)
	if err != nil {
		return ""
	}
	return netCovered(ops, r, w)
}

// Matches reports whether the rule r, on its own, applies to example:
// "host:port" or "ip:port", or a socket path for a unix rule. It returns
// the rule's *EntryError when r is invalid, and a *NetInputError when the
// example is.
func (r NetRule) Matches(example string) (bool, error) {
	var one netRules
	if err := one.add(r, &Policy{}); err != nil {
		return false, err
	}
	op := OpConnect
	if r.Listen {
		op = OpListen
	}
	if r.Path != "" {
		if example == "" || example[0] != '/' || cleanAbs(example) != example {
			return false, &NetInputError{Input: example, Reason: "want a clean absolute socket path"}
		}
		return Within(example, r.Path), nil
	}
	kind := netTCP
	if r.Network == "udp" {
		kind = netUDP
	}
	host, ip, port, err := SplitNetAddress(example)
	if err != nil {
		var ni *NetInputError
		reason := err.Error()
		if errors.As(err, &ni) {
			reason = ni.Reason
		}
		return false, &NetInputError{Input: example, Reason: `want "host:port" or "ip:port": ` + reason}
	}
	if ip.IsValid() {
		deny, allow, _ := one.matchAddr(op, kind, ip.Unmap(), port)
		return deny != nil || allow != nil, nil
	}
	deny, allow := one.matchHost(op, kind, host, port)
	return deny != nil || allow != nil, nil
}

// execCovered reports why an allow rule r of a workspace layer, for the
// real program prog, is not within the operator's allow rules ("" when it
// is).
func execCovered(ox *execRules, prog string, r ExecRule) string {
	pr := ox.programs[prog]
	var allows []*execRule
	if pr != nil {
		allows = pr.allow
	}
	resolved := ""
	if prog != r.Program {
		resolved = " (" + prog + ")"
	}
	if len(allows) == 0 {
		return resolved + ": the operator layer allows no rule for this program"
	}
	var cover *execRule
	var list []string
	for _, o := range allows {
		list = append(list, execRuleString(o.rule)+" at "+o.rule.Source)
		if cover == nil && argsCover(o.rule.Args, r.Args) {
			cover = o
		}
	}
	if cover == nil {
		return resolved + ": not within any operator allow rule for it (" + strings.Join(list, ", ") + ")"
	}
	for _, n := range r.Env {
		if envCovers(ox.env, n) {
			continue
		}
		for _, o := range allows {
			if argsOverlap(o.rule.Args, r.Args) && !envCovers(o.env, n) {
				return resolved + ": env " + strconv.Quote(n) + " is not allowed by the operator's exec env nor by " +
					execRuleString(o.rule) + " at " + o.rule.Source
			}
		}
	}
	return ""
}

// argsCover reports whether every argument list an allow rule with prefix
// ws matches is matched by an allow rule with prefix op.
func argsCover(op, ws []string) bool {
	if len(op) > len(ws) {
		return false
	}
	for i, o := range op {
		if o != "*" && o != ws[i] {
			return false
		}
	}
	return true
}

// argsOverlap reports whether some argument list matches both allow
// prefixes.
func argsOverlap(a, b []string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != "*" && b[i] != "*" && a[i] != b[i] {
			return false
		}
	}
	return true
}

// envCovers reports whether set lets through every variable entry n lets
// through: an exact name named exactly (or, when it is neither an injection
// nor a secret-looking name, matched by a prefix), a prefix under a prefix.
func envCovers(set nameSet, n string) bool {
	if p, ok := strings.CutSuffix(n, "*"); ok {
		for _, q := range set.prefixes {
			if strings.HasPrefix(p, q) {
				return true
			}
		}
		return false
	}
	if set.exact[n] {
		return true
	}
	return !IsInjectionVar(n) && !IsSecretVar(n) && set.match(n, false)
}

func execRuleString(r ExecRule) string {
	s := r.Program
	if len(r.Args) > 0 {
		s += " " + strings.Join(r.Args, " ")
	}
	return strconv.Quote(s)
}

// netRuleString renders a rule as the policy does ("allow connect tcp
// api.example.com ports 443").
func netRuleString(r NetRule) string {
	var p Policy
	var scratch netRules
	target := ""
	if r.CIDR != "" {
		if pf, err := cidr(r.CIDR); err == nil {
			target = pf.String()
		}
	}
	return strconv.Quote(scratch.newRule(r, "", target, &p).Pattern)
}

// opNetRule is an operator allow rule as written and validated.
type opNetRule struct {
	r NetRule
	x *netRule
}

// parseNetRule validates one rule into its netRule form.
func parseNetRule(nr NetRule) (*netRule, error) {
	var one netRules
	var p Policy
	if err := one.add(nr, &p); err != nil {
		return nil, err
	}
	for _, l := range [][]*netRule{one.addrs, one.paths} {
		if len(l) == 1 {
			return l[0], nil
		}
	}
	for _, m := range []map[string][]*netRule{one.exact, one.wild} {
		for _, l := range m {
			return l[0], nil
		}
	}
	return nil, errors.New("no rule")
}

// netCovered reports why workspace allow rule w (r as written) is not
// covered by the operator's allow rules ops ("" when it is).
func netCovered(ops []opNetRule, r NetRule, w *netRule) string {
	var covering, all []*netRule
	var special string
	for _, on := range ops {
		o := on.x
		if o.kind != w.kind || o.listen != w.listen || (on.r.Host != "") != (r.Host != "") || (on.r.CIDR != "") != (r.CIDR != "") {
			continue
		}
		all = append(all, o) // the same kind of rule, for the message
		switch {
		case r.Host != "":
			if o.prefix.IsValid() || o.path != "" || on.r.Host == "" || !hostCovers(on.r.Host, r.Host) {
				continue
			}
		case r.CIDR != "":
			if !o.prefix.IsValid() || o.prefix.Bits() > w.prefix.Bits() || !o.prefix.Contains(w.prefix.Addr()) {
				continue
			}
			if why := unlocksNoMore(w.prefix, o.prefix); why != "" {
				special = why
				continue
			}
		default:
			if o.path == "" || !Within(w.path, o.path) {
				continue
			}
		}
		covering = append(covering, o)
	}
	what := netRuleString(r)
	if len(covering) == 0 {
		if special != "" {
			return what + ": " + special
		}
		if len(all) == 0 {
			return what + " is not within any operator allow rule (the operator layer has no allow rule of this kind)"
		}
		return what + " is not within any operator allow rule (" + netRuleList(all) + ")"
	}
	if w.kind == netUnix {
		return ""
	}
	var union []portRange
	for _, o := range covering {
		if len(o.ports) == 0 {
			return ""
		}
		union = append(union, o.ports...)
	}
	want := w.ports
	if len(want) == 0 {
		want = []portRange{{0, 65535}}
	}
	for _, pr := range want {
		if !portsCover(union, pr) {
			return what + ": ports " + portString(pr) + " are not all allowed by the operator rules covering it (" + netRuleList(covering) + ")"
		}
	}
	return ""
}

// hostCovers reports whether operator host pattern oh matches every name
// that workspace host pattern h matches.
func hostCovers(oh, h string) bool {
	if !strings.HasPrefix(oh, "*.") {
		return oh == h
	}
	return strings.HasSuffix(h, oh[1:]) // "a.example.com", "*.example.com", "*.a.example.com" under "*.example.com"
}

// unlocksNoMore reports why workspace range w (inside operator range o)
// would unlock special-purpose addresses that o does not ("" when it
// unlocks nothing more). Ranges that overlap IPv6 forms embedding IPv4
// addresses are accepted only when they repeat the operator's range.
func unlocksNoMore(w, o netip.Prefix) string {
	if w == o {
		return ""
	}
	if w.Addr().Is6() {
		for _, e := range embeddings {
			if e.Prefix.Overlaps(w) {
				return "an IPv6 range overlapping " + e.Prefix.String() + " (" + e.Detail + ") can only repeat an operator range exactly in a workspace layer"
			}
		}
	}
	for _, a := range []netip.Addr{w.Addr(), prefixLast(w)} {
		sm, ok := special(a)
		if !ok {
			continue
		}
		in := sm.within
		if in.Bits() <= w.Bits() && in.Contains(w.Addr()) && !(o.Bits() >= in.Bits() && in.Contains(o.Addr())) {
			return "it would unlock special-purpose addresses (" + sm.r.Name + ", " + in.String() +
				") that the operator range " + o.String() + " does not unlock"
		}
	}
	return ""
}

func prefixLast(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	bits := p.Bits()
	for i := range b {
		for j := 0; j < 8; j++ {
			if i*8+j >= bits {
				b[i] |= 0x80 >> j
			}
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// portsCover reports whether the union of ranges contains want.
func portsCover(union []portRange, want portRange) bool {
	sort.Slice(union, func(i, j int) bool { return union[i].lo < union[j].lo })
	next := uint32(want.lo) // first port not yet covered
	for _, r := range union {
		if uint32(r.lo) > next {
			break
		}
		if uint32(r.hi)+1 > next {
			next = uint32(r.hi) + 1
		}
		if next > uint32(want.hi) {
			return true
		}
	}
	return next > uint32(want.hi)
}

func portString(r portRange) string {
	if r.lo == 0 && r.hi == 65535 {
		return "(every port)"
	}
	if r.lo == r.hi {
		return strconv.Itoa(int(r.lo))
	}
	return strconv.Itoa(int(r.lo)) + "-" + strconv.Itoa(int(r.hi))
}

func netRuleList(rs []*netRule) string {
	if len(rs) == 0 {
		return "none"
	}
	var parts []string
	for _, r := range rs {
		parts = append(parts, strconv.Quote(r.rule.Pattern)+" at "+r.rule.Source)
	}
	return strings.Join(parts, ", ")
}
