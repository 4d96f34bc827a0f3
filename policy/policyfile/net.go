package policyfile

import (
	"errors"
	"strconv"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/internal/didyoumean"
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
// values are validated by Builder.Build, whose errors rulepos.go maps
// back to the rule's position.

// netKeys are the keys [net] accepts.
var netKeys = []string{"allow", "deny"}

var netRuleKeys = []string{"host", "cidr", "path", "ports", "network", "listen", "match", "no_match"}

// netFile is a decoded [net] table and where its rules are written.
type netFile struct {
	spec  policy.NetSpec
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
			if k := didyoumean.Normalize(f.key); (k == "rule" || k == "rules") && didyoumean.Closest(f.key, netKeys) == "" {
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
		r := policy.NetRule{Deny: deny}
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
				match = d.entries(rf, kpath, policy.KindNet)
			case "no_match":
				noMatch = d.entries(rf, kpath, policy.KindNet)
			default:
				hint := ""
				if k := didyoumean.Normalize(rf.key); k == "deny" || k == "allow" {
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
func (d *fileDecoder) netExamples(r policy.NetRule, rpath string, match, noMatch []fileEntry) {
	if len(match)+len(noMatch) == 0 {
		return
	}
	// The rule must build before its examples mean anything.
	if _, err := r.Matches("0.0.0.0:0"); isRuleError(err) {
		return
	}
	for _, e := range match {
		m, err := r.Matches(e.value)
		switch {
		case err != nil:
			d.fail(e.at, rpath+".match", strconv.Quote(e.value)+": "+exampleReason(err))
		case !m:
			d.fail(e.at, rpath+".match", "example "+strconv.Quote(e.value)+" does not match the rule")
		}
	}
	for _, e := range noMatch {
		m, err := r.Matches(e.value)
		switch {
		case err != nil:
			d.fail(e.at, rpath+".no_match", strconv.Quote(e.value)+": "+exampleReason(err))
		case m:
			d.fail(e.at, rpath+".no_match", "counter-example "+strconv.Quote(e.value)+" matches the rule")
		}
	}
}

// isRuleError reports whether err from NetRule.Matches is about the rule
// itself rather than the example.
func isRuleError(err error) bool {
	var ee *policy.EntryError
	return errors.As(err, &ee)
}

// exampleReason is what is wrong with an example, without the address the
// message already quotes.
func exampleReason(err error) string {
	var ni *policy.NetInputError
	if errors.As(err, &ni) {
		return ni.Reason
	}
	return err.Error()
}

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
func layerNet(d *fileDecoder, op, ws netFile) policy.NetSpec {
	var opAllow, opDeny []policy.NetRule
	for _, r := range op.spec.Rules {
		if r.Deny {
			opDeny = append(opDeny, r)
		} else {
			opAllow = append(opAllow, r)
		}
	}
	var wsAllow, wsDeny []policy.NetRule
	for i, r := range ws.spec.Rules {
		if r.Deny {
			wsDeny = append(wsDeny, r)
			continue
		}
		wsAllow = append(wsAllow, r)
		if why := policy.NetAllowWithin(opAllow, r); why != "" {
			d.fail(ws.rules[i].at, ws.rules[i].key, why+"; a workspace layer can only narrow the operator's net rules")
		}
	}
	rules := opDeny
	if _, ok := ws.has["allow"]; ok {
		rules = append(rules, wsAllow...)
	} else {
		rules = append(opAllow, rules...)
	}
	return policy.NetSpec{Rules: append(rules, wsDeny...)}
}
