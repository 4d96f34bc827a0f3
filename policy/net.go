package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// NetSpec holds the rules for dialing and listening. With no rules, every
// connection and every bind is denied.
type NetSpec struct {
	Rules []NetRule
}

// NetRule allows (or, with Deny, forbids) connections or binds. Exactly one
// of Host, CIDR and Path is set.
//
// A Host rule matches a name: "api.example.com" exactly, or
// "*.example.com" for every subdomain (not example.com itself). A wildcard
// over a public suffix ("*.com", "*.co.uk", "*.github.io") is rejected. Host rules
// never match IP literals and never unlock special-purpose addresses: a name
// resolving to 10.0.0.5 also needs a CIDR rule inside 10.0.0.0/8.
//
// A CIDR rule matches addresses: "10.0.0.0/8", or one address ("127.0.0.1",
// "::1"). It allows dialing those addresses as literals, and names whose
// every resolved address it allows. A special-purpose address is unlocked
// only by an allowing CIDR rule whose range lies inside the special block
// (127.0.0.1/32 inside 127.0.0.0/8); catch-alls (0.0.0.0/0, ::/0) mean the
// public internet and unlock nothing.
//
// A Path rule (Network "unix") matches a unix socket path and its subtree;
// the socket must also lie under a write root.
type NetRule struct {
	Deny bool
	Host string
	CIDR string
	Path string
	// Ports lists ports ("443") and ranges ("8000-8999"); empty means every
	// port. Ignored for unix sockets.
	Ports []string
	// Network is "tcp" (the default; covers tcp4 and tcp6), "udp" or "unix".
	Network string
	// Listen makes the rule about binding (Listen, ListenPacket) instead of
	// connecting.
	Listen bool
	// Source is the provenance ("code" when empty).
	Source string
}

type portRange struct{ lo, hi uint16 }

// netRule is the validated form of a NetRule.
type netRule struct {
	rule   *Rule
	deny   bool
	listen bool
	kind   netKind
	prefix netip.Prefix
	path   string
	ports  []portRange // empty: every port
}

func (r *netRule) applies(op Op, kind netKind, port uint16) bool {
	if r.kind != kind || r.listen != (op == OpListen) {
		return false
	}
	if len(r.ports) == 0 || kind == netUnix {
		return true
	}
	for _, pr := range r.ports {
		if pr.lo <= port && port <= pr.hi {
			return true
		}
	}
	return false
}

// netRules is the validated, indexed form of a NetSpec. Host rules are
// found by map lookups on the name and each of its parent domains, so their
// cost follows the name's depth, not the number of rules; address and path
// rules are scanned.
type netRules struct {
	exact map[string][]*netRule // "api.example.com"
	wild  map[string][]*netRule // "*.example.com" under "example.com"
	addrs []*netRule
	paths []*netRule
}

func (r *netRules) build(spec NetSpec, p *Policy) error {
	var errs []error
	for _, nr := range spec.Rules {
		if err := r.add(nr, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *netRules) add(nr NetRule, p *Policy) error {
	src := nr.Source
	if src == "" {
		src = "code"
	}
	value := nr.Host + nr.CIDR + nr.Path
	fail := func(format string, args ...any) error {
		return &EntryError{Field: "net rule", Value: value, Source: src, Err: fmt.Errorf(format, args...)}
	}
	set := 0
	for _, s := range []string{nr.Host, nr.CIDR, nr.Path} {
		if s != "" {
			set++
		}
	}
	if set != 1 {
		return fail("set exactly one of Host, CIDR and Path")
	}
	x := &netRule{deny: nr.Deny, listen: nr.Listen}
	switch nr.Network {
	case "", "tcp":
		x.kind = netTCP
	case "udp":
		x.kind = netUDP
	case "unix":
		x.kind = netUnix
	default:
		return fail("unknown network %q (tcp, udp or unix; tcp covers tcp4 and tcp6)", nr.Network)
	}
	if (x.kind == netUnix) != (nr.Path != "") {
		return fail(`unix sockets are named by Path with Network "unix", and only they`)
	}
	for _, ps := range nr.Ports {
		pr, err := parsePortRange(ps)
		if err != nil {
			return fail("port %q: %v", ps, err)
		}
		x.ports = append(x.ports, pr)
	}
	switch {
	case nr.Host != "":
		key, wild, err := hostPattern(nr.Host)
		if err != nil {
			return fail("%v", err)
		}
		x.rule = r.newRule(nr, src, "", p)
		m := &r.exact
		if wild {
			m = &r.wild
		}
		if *m == nil {
			*m = map[string][]*netRule{}
		}
		(*m)[key] = append((*m)[key], x)
	case nr.CIDR != "":
		pf, err := cidr(nr.CIDR)
		if err != nil {
			return fail("%v", err)
		}
		x.prefix = pf
		x.rule = r.newRule(nr, src, pf.String(), p)
		r.addrs = append(r.addrs, x)
	default:
		if nr.Path[0] != '/' || cleanAbs(nr.Path) != nr.Path {
			return fail("unix socket rules need a clean absolute path")
		}
		x.path = nr.Path
		x.rule = r.newRule(nr, src, "", p)
		r.paths = append(r.paths, x)
	}
	return nil
}

// newRule renders the rule as "allow connect tcp api.example.com ports 443".
func (r *netRules) newRule(nr NetRule, src, target string, p *Policy) *Rule {
	var b strings.Builder
	if nr.Deny {
		b.WriteString("deny ")
	} else {
		b.WriteString("allow ")
	}
	if nr.Listen {
		b.WriteString("listen ")
	} else {
		b.WriteString("connect ")
	}
	if nr.Network == "" {
		b.WriteString("tcp ")
	} else {
		b.WriteString(nr.Network + " ")
	}
	if target == "" {
		target = nr.Host + nr.Path
	}
	b.WriteString(target)
	if len(nr.Ports) > 0 && nr.Path == "" {
		b.WriteString(" ports ")
		b.WriteString(strings.Join(nr.Ports, ","))
	}
	rule := &Rule{Kind: KindNet, Pattern: b.String(), Source: src}
	if nr.Deny {
		rule.Hint = hintNetDeny
	}
	p.rules = append(p.rules, rule)
	return rule
}

// hostPattern validates a host rule and returns its map key.
func hostPattern(h string) (key string, wild bool, err error) {
	if strings.HasPrefix(h, "*.") {
		wild, h = true, h[2:]
	}
	if strings.IndexByte(h, '*') >= 0 {
		return "", false, errors.New(`"*" is only allowed as a leading "*." (subdomains)`)
	}
	if _, ok := parseIP(h); ok {
		return "", false, errors.New("an IP address is not a host name: use CIDR")
	}
	canon, _, cerr := CanonicalHost(h)
	if cerr != nil {
		return "", false, errors.New(cerr.(*NetInputError).Reason)
	}
	if canon != h {
		return "", false, fmt.Errorf("write the host in canonical form %q", canon)
	}
	if wild {
		if err := publicSuffixError(canon); err != nil {
			return "", false, err
		}
	}
	return canon, wild, nil
}

// cidr parses "10.0.0.0/8" or one address. Host bits, zones and IPv4-mapped
// IPv6 forms are rejected (net.ParseCIDR would read ::ffff:0:0/96 as
// 0.0.0.0/0).
func cidr(s string) (netip.Prefix, error) {
	var pf netip.Prefix
	if strings.IndexByte(s, '%') >= 0 {
		return pf, errors.New("zones are not accepted")
	}
	if strings.IndexByte(s, '/') < 0 {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return pf, err
		}
		pf = netip.PrefixFrom(a, a.BitLen())
	} else {
		var err error
		if pf, err = netip.ParsePrefix(s); err != nil {
			return pf, err
		}
	}
	a := pf.Addr()
	switch {
	case a.Zone() != "":
		return pf, errors.New("zones are not accepted")
	case a.Is4In6():
		return pf, errors.New("IPv4-mapped IPv6 is not accepted: write the IPv4 form")
	case pf.Masked() != pf:
		return pf, fmt.Errorf("host bits are set: did you mean %s?", pf.Masked())
	}
	return pf, nil
}

func parsePortRange(s string) (portRange, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	a, ok := parsePort(lo)
	if !ok {
		return portRange{}, errors.New(reasonBadPort)
	}
	b := a
	if isRange {
		if b, ok = parsePort(hi); !ok {
			return portRange{}, errors.New(reasonBadPort)
		}
		if b < a {
			return portRange{}, errors.New("range is reversed")
		}
	}
	return portRange{a, b}, nil
}

func cleanAbs(p string) string {
	for _, bad := range []string{"//", "/./", "/../"} {
		if strings.Contains(p+"/", bad) {
			return ""
		}
	}
	if len(p) > 1 && p[len(p)-1] == '/' {
		return ""
	}
	return p
}

// Built-in net rules that decide when nothing configured does.
var (
	ruleNetDefault = &Rule{Kind: KindDefault, Pattern: "connections need a net rule", Source: "builtin",
		Hint: "add a net rule (Host, or CIDR for addresses) with the port, or rescue the call in BeforeDeny"}
	ruleListenDefault = &Rule{Kind: KindDefault, Pattern: "binding a port needs a listen rule", Source: "builtin",
		Hint: "add a net rule with Listen and the address (CIDR) and port, or rescue the call in BeforeDeny"}
	ruleNetInput = &Rule{Kind: KindInvalid, Pattern: "addresses must be canonical", Source: "builtin",
		Hint: "use a canonical host name or IP literal with a numeric port"}
	ruleUnixRoot = &Rule{Kind: KindNet, Pattern: "unix sockets must lie under a write root", Source: "builtin",
		Hint: "add a write root containing the socket and a unix net rule naming it"}
)

// NetRequest asks about one dial or bind; it satisfies audit.Request. Build
// it with ParseNetRequest, then fill Addrs with the resolved addresses.
type NetRequest struct {
	Op      Op     // OpConnect or OpListen
	Network string // tcp, tcp4, tcp6, udp, udp4, udp6, unix, unixgram, unixpacket
	Host    string // canonical name or IP literal; for unix, the resolved path
	Port    uint16
	// IP is Host as an address when Host is an IP literal.
	IP netip.Addr
	// Addrs are the addresses a name resolved to (unmapped). Empty for a
	// name means "not resolved": only the name is judged.
	Addrs []netip.Addr

	invalid string
}

// Decide implements audit.Request.
func (r *NetRequest) Decide(p *Policy) Decision {
	if r.invalid != "" {
		return Deny(TierInvalid, ruleNetInput, r.invalid)
	}
	return p.CheckNet(r.Op, r.Network, r.Host, r.Port, r.Addrs)
}

// ParseNetRequest canonicalises network and address for op before any
// lookup. On invalid input it returns an error and a request that decides
// TierInvalid, so the caller can still run it through the pipeline (and
// its records). For unix networks the address is the socket path, which the
// caller must resolve (Resolve) before deciding.
func ParseNetRequest(op Op, network, address string) (*NetRequest, error) {
	r := &NetRequest{Op: op, Network: network, Host: address}
	kind, _ := parseNetwork(network)
	switch {
	case op != OpConnect && op != OpListen:
		r.invalid = reasonNotNetOp
	case kind == netNone:
		r.invalid = reasonBadNetwork
	case kind == netUnix:
		if address == "" || address[0] != '/' {
			r.invalid = reasonUnixPath
		}
	default:
		host, ip, port, err := SplitNetAddress(address)
		if err != nil {
			r.invalid = err.(*NetInputError).Reason
			break
		}
		r.Host, r.IP, r.Port = host, ip, port
		if ip.IsValid() {
			r.Addrs = []netip.Addr{ip}
			if !familyOK(network, ip) {
				r.invalid = reasonFamily
			}
		}
	}
	if r.invalid != "" {
		return r, &NetInputError{Input: address, Reason: r.invalid}
	}
	return r, nil
}

func familyOK(network string, a netip.Addr) bool {
	_, v := parseNetwork(network)
	return v == 0 || (v == 4) == a.Is4()
}

// CheckNet decides op (OpConnect or OpListen) on host:port over network.
// host is a canonical name or IP literal (CanonicalHost); addrs are the
// addresses the name resolved to, every one of which is judged (an IP
// literal is judged as itself). For unix networks host is the resolved
// socket path and port is ignored.
//
// In order: invalid input (TierInvalid); a deny rule matching the name or
// any address, or a special-purpose address no rule unlocks (TierHard); then
// the call is allowed by a host rule matching the name, or by address rules
// allowing every address; otherwise it is denied (TierSoft). CheckNet makes
// no system call and does not allocate.
func (p *Policy) CheckNet(op Op, network, host string, port uint16, addrs []netip.Addr) Decision {
	if p == nil {
		return denyNoPolicy
	}
	kind, _ := parseNetwork(network)
	if kind == netNone {
		return Deny(TierInvalid, ruleNetInput, reasonBadNetwork)
	}
	if op != OpConnect && op != OpListen {
		return Deny(TierInvalid, ruleNetInput, reasonNotNetOp)
	}
	if kind == netUnix {
		return p.checkUnix(op, host)
	}
	lit, isLit := parseIP(host)
	if isLit {
		if lit.Zone() != "" || lit.Is4In6() {
			return Deny(TierInvalid, ruleNetInput, reasonNonCanonicalQ)
		}
	} else if !isCanonicalName(host) {
		if r := hostReason(host); r != "" {
			return Deny(TierInvalid, ruleNetInput, r)
		}
		return Deny(TierInvalid, ruleNetInput, reasonNonCanonicalQ)
	}
	return p.checkNet(op, kind, network, host, lit, isLit, port, addrs)
}

// checkNet is CheckNet once the host is known to be canonical: a name, or
// (isLit) the literal address lit.
func (p *Policy) checkNet(op Op, kind netKind, network, host string, lit netip.Addr, isLit bool, port uint16, addrs []netip.Addr) Decision {
	def := ruleNetDefault
	if op == OpListen {
		def = ruleListenDefault
	}

	// Explicit denies and special-purpose addresses (hard), then allows.
	var hostAllow *Rule
	if !isLit {
		if d, allow := p.net.matchHost(op, kind, host, port); d != nil {
			return Deny(TierHard, d, "")
		} else {
			hostAllow = allow
		}
	}
	var addrAllow *Rule
	allAddrs := true
	n := len(addrs)
	if isLit {
		n++
	}
	if n == 0 {
		allAddrs = false
	}
	for i := 0; i < n; i++ {
		a := lit
		if i < len(addrs) {
			a = addrs[i]
		}
		if !a.IsValid() || a.Zone() != "" {
			return Deny(TierInvalid, ruleNetInput, reasonBadAddr)
		}
		a = a.Unmap()
		if !familyOK(network, a) {
			return Deny(TierInvalid, ruleNetInput, reasonFamily)
		}
		deny, allow, unlocked := p.net.matchAddr(op, kind, a, port)
		if deny != nil {
			return Deny(TierHard, deny, "")
		}
		if !unlocked {
			if m, ok := special(a); ok {
				return Deny(TierHard, m.r.ruleOf(), m.detail)
			}
		}
		if allow == nil {
			allAddrs = false
		} else if addrAllow == nil {
			addrAllow = allow
		}
	}
	switch {
	case hostAllow != nil:
		return Allow(hostAllow)
	case allAddrs && addrAllow != nil:
		return Allow(addrAllow)
	}
	return Deny(TierSoft, def, "")
}

// CheckDial decides a dial of network to one already-resolved address ip
// for host (a canonical name, or "" when the address was given literally).
// It is CheckNet for a single address, without allocating.
func (p *Policy) CheckDial(network, host string, ip netip.Addr, port uint16) Decision {
	if p == nil {
		return denyNoPolicy
	}
	if host == "" {
		kind, _ := parseNetwork(network)
		if kind == netNone || kind == netUnix {
			return Deny(TierInvalid, ruleNetInput, reasonBadNetwork)
		}
		if !ip.IsValid() || ip.Zone() != "" {
			return Deny(TierInvalid, ruleNetInput, reasonBadAddr)
		}
		return p.checkNet(OpConnect, kind, network, "", ip.Unmap(), true, port, nil)
	}
	a := [1]netip.Addr{ip}
	return p.CheckNet(OpConnect, network, host, port, a[:])
}

// matchHost returns the first deny rule, else the first allow rule, among
// the host rules matching name for op, kind and port.
func (r *netRules) matchHost(op Op, kind netKind, name string, port uint16) (deny, allow *Rule) {
	scan := func(rs []*netRule) {
		for _, x := range rs {
			if !x.applies(op, kind, port) {
				continue
			}
			if x.deny {
				if deny == nil {
					deny = x.rule
				}
			} else if allow == nil {
				allow = x.rule
			}
		}
	}
	if r.exact != nil {
		scan(r.exact[name])
	}
	if r.wild != nil {
		for i := 0; i < len(name); i++ {
			if name[i] == '.' {
				scan(r.wild[name[i+1:]])
			}
		}
	}
	return deny, allow
}

// matchAddr returns the first deny rule and the first allow rule containing
// a, and whether an allow rule unlocks a when it is special-purpose.
func (r *netRules) matchAddr(op Op, kind netKind, a netip.Addr, port uint16) (deny, allow *Rule, unlocked bool) {
	var sm specialMatch
	var isSpecial, looked bool
	for _, x := range r.addrs {
		if !x.prefix.Contains(a) || !x.applies(op, kind, port) {
			continue
		}
		if x.deny {
			if deny == nil {
				deny = x.rule
			}
			continue
		}
		if allow == nil {
			allow = x.rule
		}
		if !looked {
			sm, isSpecial = special(a)
			looked = true
		}
		if isSpecial && x.prefix.Bits() >= sm.within.Bits() && sm.within.Contains(x.prefix.Addr()) {
			unlocked = true
		}
	}
	return deny, allow, unlocked
}

func (p *Policy) checkUnix(op Op, path string) Decision {
	if path == "" || path[0] != '/' || cleanAbs(path) != path {
		return Deny(TierInvalid, ruleNetInput, reasonUnixPath)
	}
	var allow *Rule
	for _, x := range p.net.paths {
		if x.listen != (op == OpListen) || !Within(path, x.path) {
			continue
		}
		if x.deny {
			return Deny(TierHard, x.rule, "")
		}
		if allow == nil {
			allow = x.rule
		}
	}
	if d := p.CheckPath(OpWrite, path, ""); !d.Allowed {
		if d.Tier == TierHard {
			return d
		}
		return Deny(TierSoft, ruleUnixRoot, "")
	}
	if allow == nil {
		if op == OpListen {
			return Deny(TierSoft, ruleListenDefault, "")
		}
		return Deny(TierSoft, ruleNetDefault, "")
	}
	return Allow(allow)
}

// NetRuleCount reports how many net rules the policy holds.
func (p *Policy) NetRuleCount() int {
	if p == nil {
		return 0
	}
	n := len(p.net.addrs) + len(p.net.paths)
	for _, rs := range p.net.exact {
		n += len(rs)
	}
	for _, rs := range p.net.wild {
		n += len(rs)
	}
	return n
}

// maxForwardRange bounds how many ports one rule's range may contribute to
// LoopbackPorts: a sandbox listens on each, so "1-65535" is not forwarded.
const maxForwardRange = 256

// LoopbackPorts lists the TCP ports that allowing connect rules open on
// loopback addresses (a CIDR rule inside 127.0.0.0/8 or ::1/128), for the
// sandbox to forward. Ranges wider than 256 ports and rules for every port
// are not listed; skipped says so. Every connection through a forward is
// decided again with CheckDial.
func (p *Policy) LoopbackPorts() (ports []uint16, skipped bool) {
	if p == nil {
		return nil, false
	}
	seen := map[uint16]bool{}
	loop4, loop6 := netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")
	for _, r := range p.net.addrs {
		if r.deny || r.listen || r.kind != netTCP {
			continue
		}
		pf := r.prefix.Masked()
		inside4 := pf.Addr().Is4() && pf.Bits() >= loop4.Bits() && loop4.Contains(pf.Addr())
		if !inside4 && pf != loop6 {
			continue
		}
		if len(r.ports) == 0 {
			skipped = true
			continue
		}
		for _, pr := range r.ports {
			if int(pr.hi)-int(pr.lo) >= maxForwardRange {
				skipped = true
				continue
			}
			for port := int(pr.lo); port <= int(pr.hi); port++ {
				if !seen[uint16(port)] {
					seen[uint16(port)] = true
					ports = append(ports, uint16(port))
				}
			}
		}
	}
	slices.Sort(ports)
	return ports, skipped
}
