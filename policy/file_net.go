package policy

import (
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// The [net] table of a policy file (docs/policy.md):
//
//	[[net.allow]]
//	host     = "api.example.com"       # or "*.example.com" (subdomains only)
//	ports    = [443]                   # ports and "8000-8999" ranges; absent: every port
//	match    = ["api.example.com:443"] # examples checked at load
//	no_match = ["api.example.com:80"]
//
//	[[net.allow]]
//	cidr   = "127.0.0.1"               # an address or a range
//	ports  = ["8000-8999"]
//	listen = true                      # about binding, not connecting
//
//	[[net.allow]]
//	path    = "/srv/agent/work/run"    # unix sockets under this directory
//	network = "unix"                   # "tcp" (default), "udp" or "unix"
//
//	[[net.deny]]
//	cidr = "10.0.0.0/8"
//
// Every rule's Source is "file:line" of its [[net.allow]] / [[net.deny]]
// header (or of its inline table). Keys and examples are checked here; the
// values are validated by Builder.Build, whose errors file_rulepos.go maps
// back to the rule's position.

// netKeys are the keys [net] accepts.
var netKeys = []string{"allow", "deny"}

var netRuleKeys = []string{"host", "cidr", "path", "ports", "network", "listen", "match", "no_match"}

// netFile is a decoded [net] table and where its rules are written.
type netFile struct {
	spec  NetSpec
	has   map[string]filePos
	rules []fileRule // parallel to spec.Rules
}

// decodeNet reads the [net] table.
func decodeNet(d *fileDecoder, t *tval) netFile {
	x := netFile{has: map[string]filePos{}}
	for _, f := range t.fields {
		path := "net." + f.key
		switch f.key {
		case "allow", "deny":
			d.netRules(f, path, f.key == "deny", &x)
		default:
			if k := normalizeKey(f.key); (k == "rule" || k == "rules") && closestName(f.key, netKeys) == "" {
				d.unknownIn(path, f, netKeys, "net rules are written as [[net.allow]] and [[net.deny]] tables")
			} else {
				d.unknown("net", f, netKeys)
			}
			continue
		}
		x.has[f.key] = f.pos
	}
	return x
}

func (d *fileDecoder) netRules(f *tfield, path string, deny bool, x *netFile) {
	for i, t := range d.tables(f, path) {
		rpath := path + "[" + strconv.Itoa(i) + "]"
		r := NetRule{Deny: deny}
		var match, noMatch []fileEntry
		bad := false
		for _, rf := range t.fields {
			kpath := rpath + "." + rf.key
			ok := true
			switch rf.key {
			case "host":
				r.Host, ok = d.str(rf, kpath)
			case "cidr":
				r.CIDR, ok = d.str(rf, kpath)
			case "path":
				r.Path, ok = d.str(rf, kpath)
			case "network":
				r.Network, ok = d.str(rf, kpath)
			case "listen":
				r.Listen, ok = d.boolean(rf, kpath)
			case "ports":
				r.Ports, ok = d.ports(rf, kpath)
			case "match":
				match = d.entries(rf, kpath, KindNet)
			case "no_match":
				noMatch = d.entries(rf, kpath, KindNet)
			default:
				hint := ""
				if k := normalizeKey(rf.key); k == "deny" || k == "allow" {
					hint = "allow and deny rules are separate tables: [[net.allow]] and [[net.deny]]"
				}
				d.unknownIn(kpath, rf, netRuleKeys, hint)
				ok = false
			}
			bad = bad || !ok
		}
		if r.Host == "" && r.CIDR == "" && r.Path == "" && !bad {
			d.fail(t.pos, rpath, "missing host, cidr or path")
			continue
		}
		fr := fileRule{file: d.name, at: t.pos, key: rpath, value: r.Host + r.CIDR + r.Path}
		r.Source = fr.source()
		if !bad {
			d.netExamples(r, rpath, match, noMatch)
		}
		x.spec.Rules = append(x.spec.Rules, r)
		x.rules = append(x.rules, fr)
	}
}

// ports reads an array of ports: integers, or strings for ranges.
func (d *fileDecoder) ports(f *tfield, path string) ([]string, bool) {
	if f.val.kind != tArray {
		d.fail(f.val.pos, path, `expected an array of ports (443, "8000-8999"), got `+f.val.kind.String())
		return nil, false
	}
	out := []string{}
	ok := true
	for i, el := range f.val.elems {
		switch el.kind {
		case tInt:
			if el.i < 0 || el.i > 65535 {
				d.fail(el.pos, path+"["+strconv.Itoa(i)+"]", strconv.FormatInt(el.i, 10)+": not a port (0-65535)")
				ok = false
				continue
			}
			out = append(out, strconv.FormatInt(el.i, 10))
		case tString:
			out = append(out, el.str)
		default:
			d.fail(el.pos, path+"["+strconv.Itoa(i)+"]", "expected a port (an integer, or a string range), got "+el.kind.String())
			ok = false
		}
	}
	return out, ok
}

// netExamples checks a rule's examples ("host:port", "ip:port", or a socket
// path for unix rules) against the rule alone. A rule that does not build
// is left to Builder.Build to report.
func (d *fileDecoder) netExamples(r NetRule, rpath string, match, noMatch []fileEntry) {
	if len(match)+len(noMatch) == 0 {
		return
	}
	var one netRules
	if one.add(r, &Policy{}) != nil {
		return
	}
	for _, e := range match {
		m, err := one.matches(r, e.value)
		switch {
		case err != nil:
			d.fail(e.at, rpath+".match", strconv.Quote(e.value)+": "+err.Error())
		case !m:
			d.fail(e.at, rpath+".match", "example "+strconv.Quote(e.value)+" does not match the rule")
		}
	}
	for _, e := range noMatch {
		m, err := one.matches(r, e.value)
		switch {
		case err != nil:
			d.fail(e.at, rpath+".no_match", strconv.Quote(e.value)+": "+err.Error())
		case m:
			d.fail(e.at, rpath+".no_match", "counter-example "+strconv.Quote(e.value)+" matches the rule")
		}
	}
}

// matches reports whether the one rule r (already added) applies to the
// example address.
func (one *netRules) matches(r NetRule, example string) (bool, error) {
	op := OpConnect
	if r.Listen {
		op = OpListen
	}
	if r.Path != "" {
		if example == "" || example[0] != '/' || cleanAbs(example) != example {
			return false, errBadExample("want a clean absolute socket path")
		}
		return Within(example, r.Path), nil
	}
	kind := netTCP
	if r.Network == "udp" {
		kind = netUDP
	}
	host, ip, port, err := SplitNetAddress(example)
	if err != nil {
		return false, errBadExample(`want "host:port" or "ip:port": ` + err.(*NetInputError).Reason)
	}
	if ip.IsValid() {
		deny, allow, _ := one.matchAddr(op, kind, ip.Unmap(), port)
		return deny != nil || allow != nil, nil
	}
	deny, allow := one.matchHost(op, kind, host, port)
	return deny != nil || allow != nil, nil
}

type errBadExample string

func (e errBadExample) Error() string { return string(e) }

// layerNet combines the net rules of an operator and a workspace layer. A
// workspace layer may only narrow:
//
//   - [[net.allow]], when the workspace has the key (even empty), replaces
//     the operator's allow rules, and each of its rules must be covered by
//     operator allow rules of the same network and direction (listen or
//     connect): a host equal to an operator host or under an operator
//     wildcard ("a.example.com" or "*.a.example.com" under
//     "*.example.com"), a CIDR inside an operator CIDR that unlocks the same
//     special-purpose addresses, a socket path under an operator path; and
//     its ports a subset of the ports those operator rules allow together;
//   - [[net.deny]] rules are added; the operator's always stay.
//
// Violations are reported through d (the workspace file) with the
// workspace rule's position and the reason.
func layerNet(d *fileDecoder, op, ws netFile) NetSpec {
	var opAllow, opDeny []NetRule
	var opRules []opNetRule
	for _, r := range op.spec.Rules {
		if r.Deny {
			opDeny = append(opDeny, r)
			continue
		}
		opAllow = append(opAllow, r)
		if x, err := parseNetRule(r); err == nil {
			opRules = append(opRules, opNetRule{r, x})
		}
	}
	var wsAllow, wsDeny []NetRule
	for i, r := range ws.spec.Rules {
		if r.Deny {
			wsDeny = append(wsDeny, r)
			continue
		}
		wsAllow = append(wsAllow, r)
		w, err := parseNetRule(r)
		if err != nil {
			continue // reported when the layer was built alone
		}
		if why := netCovered(opRules, r, w); why != "" {
			d.fail(ws.rules[i].at, ws.rules[i].key, why+"; a workspace layer can only narrow the operator's net rules")
		}
	}
	rules := opDeny
	if _, ok := ws.has["allow"]; ok {
		rules = append(rules, wsAllow...)
	} else {
		rules = append(opAllow, rules...)
	}
	return NetSpec{Rules: append(rules, wsDeny...)}
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
	return nil, errBadExample("no rule")
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
