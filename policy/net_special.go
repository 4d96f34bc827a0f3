package policy

import (
	"encoding/binary"
	"net/netip"
	"sync"
)

// SpecialRange is one special-purpose address block. Connections to it are
// denied (TierHard) unless an allowing address rule lies inside it (see
// CheckNet). The tables below are data, each entry with its source.
type SpecialRange struct {
	Prefix netip.Prefix
	Name   string // "loopback", "cloud metadata (AWS, GCP, Azure, ...)"
	Source string // the registry entry or RFC it comes from

	rule *Rule
}

// Sources of the tables.
const (
	srcIANA4 = "IANA IPv4 Special-Purpose Address Registry"
	srcIANA6 = "IANA IPv6 Special-Purpose Address Registry"
)

// cloudMetadata is the named set of cloud instance-metadata and platform
// endpoints. It is matched before the registries so that the denial names it,
// and only a rule naming the exact address unlocks it.
var cloudMetadata = []SpecialRange{
	{Prefix: mp("169.254.169.254/32"), Name: "cloud metadata (AWS, GCP, Azure, OCI, OpenStack, DigitalOcean, Hetzner)", Source: "provider documentation"},
	{Prefix: mp("169.254.170.2/32"), Name: "cloud metadata (AWS ECS task credentials)", Source: "AWS ECS documentation"},
	{Prefix: mp("169.254.170.23/32"), Name: "cloud metadata (AWS EKS pod identity)", Source: "AWS EKS documentation"},
	{Prefix: mp("169.254.169.253/32"), Name: "cloud platform DNS (AWS)", Source: "AWS VPC documentation"},
	{Prefix: mp("169.254.169.123/32"), Name: "cloud platform time (AWS)", Source: "AWS documentation"},
	{Prefix: mp("169.254.0.23/32"), Name: "cloud metadata (Tencent Cloud)", Source: "Tencent Cloud documentation"},
	{Prefix: mp("100.100.100.200/32"), Name: "cloud metadata (Alibaba Cloud)", Source: "Alibaba Cloud documentation"},
	{Prefix: mp("168.63.129.16/32"), Name: "cloud platform wireserver (Azure)", Source: "Azure documentation"},
	{Prefix: mp("192.0.0.192/32"), Name: "cloud metadata (Oracle Cloud Classic)", Source: "Oracle documentation"},
	{Prefix: mp("fd00:ec2::254/128"), Name: "cloud metadata (AWS IPv6)", Source: "AWS documentation"},
	{Prefix: mp("fd00:ec2::23/128"), Name: "cloud metadata (AWS EKS pod identity IPv6)", Source: "AWS EKS documentation"},
	{Prefix: mp("fd00:ec2::253/128"), Name: "cloud platform DNS (AWS IPv6)", Source: "AWS VPC documentation"},
	{Prefix: mp("fd00:ec2::123/128"), Name: "cloud platform time (AWS IPv6)", Source: "AWS documentation"},
	{Prefix: mp("fd20:ce::254/128"), Name: "cloud metadata (GCP IPv6)", Source: "Google Cloud documentation"},
}

// special4 is the IANA IPv4 Special-Purpose Address Registry (its
// sub-blocks of 192.0.0.0/24 are covered by the /24) plus the multicast
// block, as of 2026-11. The few blocks the registry marks globally reachable
// (AS112, AMT, the 192.0.0.9/10 anycasts) are special here too, as in
// daenney/ssrf: a host that needs them names them in a CIDR rule.
var special4 = []SpecialRange{
	{Prefix: mp("0.0.0.0/8"), Name: `"this network" (0.0.0.0 reaches the local host)`, Source: srcIANA4 + ", RFC 791"},
	{Prefix: mp("10.0.0.0/8"), Name: "private use", Source: srcIANA4 + ", RFC 1918"},
	{Prefix: mp("100.64.0.0/10"), Name: "shared address space (CGNAT)", Source: srcIANA4 + ", RFC 6598"},
	{Prefix: mp("127.0.0.0/8"), Name: "loopback", Source: srcIANA4 + ", RFC 1122"},
	{Prefix: mp("169.254.0.0/16"), Name: "link local", Source: srcIANA4 + ", RFC 3927"},
	{Prefix: mp("172.16.0.0/12"), Name: "private use", Source: srcIANA4 + ", RFC 1918"},
	{Prefix: mp("192.0.0.0/24"), Name: "IETF protocol assignments", Source: srcIANA4 + ", RFC 6890"},
	{Prefix: mp("192.0.2.0/24"), Name: "documentation (TEST-NET-1)", Source: srcIANA4 + ", RFC 5737"},
	{Prefix: mp("192.31.196.0/24"), Name: "AS112-v4", Source: srcIANA4 + ", RFC 7535"},
	{Prefix: mp("192.52.193.0/24"), Name: "AMT", Source: srcIANA4 + ", RFC 7450"},
	{Prefix: mp("192.88.99.0/24"), Name: "deprecated 6to4 relay anycast", Source: srcIANA4 + ", RFC 7526"},
	{Prefix: mp("192.168.0.0/16"), Name: "private use", Source: srcIANA4 + ", RFC 1918"},
	{Prefix: mp("192.175.48.0/24"), Name: "direct delegation AS112 service", Source: srcIANA4 + ", RFC 7534"},
	{Prefix: mp("198.18.0.0/15"), Name: "benchmarking", Source: srcIANA4 + ", RFC 2544"},
	{Prefix: mp("198.51.100.0/24"), Name: "documentation (TEST-NET-2)", Source: srcIANA4 + ", RFC 5737"},
	{Prefix: mp("203.0.113.0/24"), Name: "documentation (TEST-NET-3)", Source: srcIANA4 + ", RFC 5737"},
	{Prefix: mp("224.0.0.0/4"), Name: "multicast", Source: "IANA IPv4 Multicast Address Space Registry, RFC 5771"},
	{Prefix: mp("240.0.0.0/4"), Name: "reserved (and limited broadcast 255.255.255.255)", Source: srcIANA4 + ", RFC 1112, RFC 8190"},
}

// special6 is the IANA IPv6 Special-Purpose Address Registry as of 2026-11
// (globally reachable blocks included, as for IPv4), the IPv4-embedding
// forms RFC 4291 deprecated or reserved, the deprecated site-local block
// and multicast. IPv4-mapped addresses (::ffff:0:0/96) are unmapped and
// judged as IPv4 before this table is consulted. The /128 entries are
// matched before the IPv4-embedding forms, so that ::1 is "loopback" and
// not "::0.0.0.1".
var special6 = []SpecialRange{
	{Prefix: mp("::1/128"), Name: "loopback", Source: srcIANA6 + ", RFC 4291"},
	{Prefix: mp("::/128"), Name: "unspecified (reaches the local host)", Source: srcIANA6 + ", RFC 4291"},
	{Prefix: mp("::/96"), Name: "IPv4-compatible (deprecated, ::a.b.c.d)", Source: "RFC 4291 section 2.5.5.1"},
	{Prefix: mp("::ffff:0:0:0/96"), Name: "IPv4-translated (::ffff:0:a.b.c.d)", Source: "RFC 2765 section 2.1"},
	{Prefix: mp("64:ff9b::/96"), Name: "IPv4-IPv6 translation, NAT64 well-known prefix", Source: srcIANA6 + ", RFC 6052"},
	{Prefix: mp("64:ff9b:1::/48"), Name: "IPv4-IPv6 translation, local use", Source: srcIANA6 + ", RFC 8215"},
	{Prefix: mp("100::/64"), Name: "discard only", Source: srcIANA6 + ", RFC 6666"},
	{Prefix: mp("100:0:0:1::/64"), Name: "dummy IPv6 prefix", Source: srcIANA6 + ", RFC 9780"},
	{Prefix: mp("2001::/23"), Name: "IETF protocol assignments (Teredo, ORCHID, ...)", Source: srcIANA6 + ", RFC 2928"},
	{Prefix: mp("2001:db8::/32"), Name: "documentation", Source: srcIANA6 + ", RFC 3849"},
	{Prefix: mp("2002::/16"), Name: "6to4", Source: srcIANA6 + ", RFC 3056"},
	{Prefix: mp("2620:4f:8000::/48"), Name: "direct delegation AS112 service", Source: srcIANA6 + ", RFC 7534"},
	{Prefix: mp("3fff::/20"), Name: "documentation", Source: srcIANA6 + ", RFC 9637"},
	{Prefix: mp("5f00::/16"), Name: "segment routing SIDs", Source: srcIANA6 + ", RFC 9602"},
	{Prefix: mp("fc00::/7"), Name: "unique local (ULA)", Source: srcIANA6 + ", RFC 4193"},
	{Prefix: mp("fe80::/10"), Name: "link local", Source: srcIANA6 + ", RFC 4291"},
	{Prefix: mp("fec0::/10"), Name: "site local (deprecated)", Source: "RFC 3879"},
	{Prefix: mp("ff00::/8"), Name: "multicast", Source: "IANA IPv6 Multicast Address Space Registry, RFC 4291"},
}

// srcSpace6 is the source of outside6.
const srcSpace6 = "IANA IPv6 Address Space Registry, RFC 4291"

// outside6 is every block of the IANA IPv6 Address Space Registry outside
// global unicast 2000::/3 that special6 does not already name (fc00::/7,
// fe80::/10, fec0::/10 and ff00::/8 are there). Each is its own range, so a
// rule unlocks one only by lying inside it: the catch-all ::/0 never does.
var outside6 = []SpecialRange{
	{Prefix: mp("::/8"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
	{Prefix: mp("100::/8"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
	{Prefix: mp("200::/7"), Name: "reserved by IETF, formerly OSI NSAP-mapped (outside global unicast 2000::/3)", Source: srcSpace6 + ", RFC 4048"},
	{Prefix: mp("400::/6"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
	{Prefix: mp("800::/5"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
	{Prefix: mp("1000::/4"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
	{Prefix: mp("4000::/3"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
	{Prefix: mp("6000::/3"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
	{Prefix: mp("8000::/3"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
	{Prefix: mp("a000::/3"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
	{Prefix: mp("c000::/3"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
	{Prefix: mp("e000::/4"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
	{Prefix: mp("f000::/5"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
	{Prefix: mp("f800::/6"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
	{Prefix: mp("fe00::/9"), Name: "reserved by IETF (outside global unicast 2000::/3)", Source: srcSpace6},
}

// embedKind says where an IPv6 form carries an IPv4 address.
type embedKind uint8

const (
	embedLow32  embedKind = iota + 1 // the last 32 bits (NAT64, RFC 6052; IPv4-compatible and -translated)
	embed6to4                        // bits 16-47 (6to4, RFC 3056)
	embedTeredo                      // server in bits 32-63, client in the inverted last 32 bits (RFC 4380)
)

// Embedding is an IPv6 form that carries an IPv4 address; the carried
// address is checked against the IPv4 tables first. When it is special the
// form is denied as that address (and only a rule naming the embedded form
// of that block unlocks it); when it is public the form is judged by the
// IPv6 tables, where every embedding block is itself special.
type embedding struct {
	Prefix netip.Prefix
	Kind   embedKind
	Detail string // constant phrase for decisions
	Source string
}

var embeddings = []embedding{
	{Prefix: mp("64:ff9b::/96"), Kind: embedLow32, Detail: "embedded in a NAT64 address (64:ff9b::/96)", Source: "RFC 6052"},
	{Prefix: mp("64:ff9b:1::/48"), Kind: embedLow32, Detail: "embedded in a local-use NAT64 address (64:ff9b:1::/48)", Source: "RFC 8215"},
	{Prefix: mp("::/96"), Kind: embedLow32, Detail: "embedded in an IPv4-compatible address (::/96)", Source: "RFC 4291"},
	{Prefix: mp("::ffff:0:0:0/96"), Kind: embedLow32, Detail: "embedded in an IPv4-translated address (::ffff:0:0:0/96)", Source: "RFC 2765"},
	{Prefix: mp("2002::/16"), Kind: embed6to4, Detail: "embedded in a 6to4 address (2002::/16)", Source: "RFC 3056"},
	{Prefix: mp("2001::/32"), Kind: embedTeredo, Detail: "embedded in a Teredo address (2001::/32)", Source: "RFC 4380"},
}

func mp(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// specialRules makes the rule of every special-purpose range, once, the
// first time one is needed (a denial, SpecialRanges) rather than at every
// process start: the rules' texts cost about half of this package's
// initialization.
var specialRules = sync.OnceFunc(func() {
	for _, t := range [][]SpecialRange{cloudMetadata, special4, special6, outside6} {
		for i := range t {
			t[i].rule = specialRule(&t[i])
		}
	}
})

// ruleOf is the rule that denies an address in s.
func (s *SpecialRange) ruleOf() *Rule {
	specialRules()
	return s.rule
}

func specialRule(s *SpecialRange) *Rule {
	hint := "add a CIDR rule for the exact address, or for a block inside " + s.Prefix.String() +
		" (host-name rules and catch-alls such as 0.0.0.0/0 never unlock special-purpose addresses); or opt in with audit.WithRescueHard and rescue it in BeforeDeny"
	return &Rule{Kind: KindNet, Pattern: "special-purpose " + s.Prefix.String() + " " + s.Name, Source: "builtin: " + s.Source, Hint: hint}
}

// SpecialRanges returns the special-purpose tables: the cloud metadata set,
// IPv4, IPv6, and the blocks of the IPv6 address space outside 2000::/3.
// IPv6 forms embedding IPv4 (NAT64, IPv4-compatible, IPv4-translated, 6to4,
// Teredo) are checked through the IPv4 tables first.
func SpecialRanges() []SpecialRange {
	specialRules() // the copies carry the rules
	out := make([]SpecialRange, 0, len(cloudMetadata)+len(special4)+len(special6)+len(outside6))
	out = append(out, cloudMetadata...)
	out = append(out, special4...)
	out = append(out, special6...)
	return append(out, outside6...)
}

// specialMatch is the answer for one address: the range it falls in, the
// block an unlocking rule must lie inside, and a detail for embedded forms.
type specialMatch struct {
	r      *SpecialRange
	within netip.Prefix
	detail string
}

// The tables compiled to masks, in the same order, so that a lookup is a
// few integer compares per entry.
type match4 struct {
	base, mask uint32
	r          *SpecialRange
}

type match6 struct {
	hi, lo, mhi, mlo uint64
	r                *SpecialRange
	e                *embedding
}

var (
	meta4, spec4                          []match4
	meta6, exact6, emb6, spec6, outside6m []match6
)

func compile4(t []SpecialRange, dst *[]match4) {
	for i := range t {
		if !t[i].Prefix.Addr().Is4() {
			continue
		}
		b := t[i].Prefix.Addr().As4()
		m := ^uint32(0)
		if bits := t[i].Prefix.Bits(); bits < 32 {
			m = ^(^uint32(0) >> bits)
		}
		*dst = append(*dst, match4{base: binary.BigEndian.Uint32(b[:]), mask: m, r: &t[i]})
	}
}

func mask6(p netip.Prefix) (hi, lo, mhi, mlo uint64) {
	b := p.Addr().As16()
	hi, lo = binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	bits := p.Bits()
	switch {
	case bits == 0:
	case bits < 64:
		mhi = ^(^uint64(0) >> bits)
	case bits == 64:
		mhi = ^uint64(0)
	default:
		mhi, mlo = ^uint64(0), ^(^uint64(0) >> (bits - 64))
	}
	return hi, lo, mhi, mlo
}

// compile6 appends the IPv6 entries of t whose prefix length is (exact) or
// is not (!exact) 128.
func compile6(t []SpecialRange, exact bool, dst *[]match6) {
	for i := range t {
		if t[i].Prefix.Addr().Is4() || (t[i].Prefix.Bits() == 128) != exact {
			continue
		}
		hi, lo, mhi, mlo := mask6(t[i].Prefix)
		*dst = append(*dst, match6{hi: hi, lo: lo, mhi: mhi, mlo: mlo, r: &t[i]})
	}
}

func init() {
	compile4(cloudMetadata, &meta4)
	compile6(cloudMetadata, true, &meta6)
	compile6(cloudMetadata, false, &meta6)
	compile4(special4, &spec4)
	compile6(special6, true, &exact6)
	compile6(special6, false, &spec6)
	compile6(outside6, false, &outside6m)
	for i := range embeddings {
		hi, lo, mhi, mlo := mask6(embeddings[i].Prefix)
		emb6 = append(emb6, match6{hi: hi, lo: lo, mhi: mhi, mlo: mlo, e: &embeddings[i]})
	}
}

func find4(t []match4, v uint32) *SpecialRange {
	for i := range t {
		if v&t[i].mask == t[i].base {
			return t[i].r
		}
	}
	return nil
}

func (m *match6) contains(hi, lo uint64) bool { return hi&m.mhi == m.hi && lo&m.mlo == m.lo }

// special finds the special-purpose range that a (unmapped, unzoned)
// address falls in, if any. It does not allocate.
func special(a netip.Addr) (specialMatch, bool) {
	if a.Is4() {
		b := a.As4()
		v := binary.BigEndian.Uint32(b[:])
		if r := find4(meta4, v); r != nil {
			return specialMatch{r: r, within: r.Prefix}, true
		}
		if r := find4(spec4, v); r != nil {
			return specialMatch{r: r, within: r.Prefix}, true
		}
		return specialMatch{}, false
	}
	b := a.As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	if r := find6(meta6, hi, lo); r != nil {
		return specialMatch{r: r, within: r.Prefix}, true
	}
	if r := find6(exact6, hi, lo); r != nil {
		return specialMatch{r: r, within: r.Prefix}, true
	}
	for i := range emb6 {
		if !emb6[i].contains(hi, lo) {
			continue
		}
		e := emb6[i].e
		var v4s [2][4]byte
		n := 1
		switch e.Kind {
		case embedLow32:
			copy(v4s[0][:], b[12:16])
		case embed6to4:
			copy(v4s[0][:], b[2:6])
		case embedTeredo:
			copy(v4s[0][:], b[4:8])
			for j := 0; j < 4; j++ {
				v4s[1][j] = b[12+j] ^ 0xff
			}
			n = 2
		}
		for j := 0; j < n; j++ {
			if m, ok := special(netip.AddrFrom4(v4s[j])); ok {
				// The unlocking rule must name the embedded form itself.
				within := e.Prefix
				if e.Kind != embedTeredo {
					off := 96
					if e.Kind == embed6to4 {
						off = 16
					}
					if p, err := a.Prefix(off + m.within.Bits()); err == nil {
						within = p
					}
				}
				return specialMatch{r: m.r, within: within, detail: e.Detail}, true
			}
		}
		// The carried address is public: the form itself is judged below
		// (every embedding block is in special6).
		break
	}
	if r := find6(spec6, hi, lo); r != nil {
		return specialMatch{r: r, within: r.Prefix}, true
	}
	if r := find6(outside6m, hi, lo); r != nil {
		return specialMatch{r: r, within: r.Prefix}, true
	}
	return specialMatch{}, false
}

func find6(t []match6, hi, lo uint64) *SpecialRange {
	for i := range t {
		if t[i].contains(hi, lo) {
			return t[i].r
		}
	}
	return nil
}

// IsSpecial reports whether addr (IPv4-mapped forms unmapped) is a
// special-purpose address, and which range it falls in. Zoned or invalid
// addresses are reported as special with ok true and a nil range.
func IsSpecial(addr netip.Addr) (r *SpecialRange, ok bool) {
	if !addr.IsValid() || addr.Zone() != "" {
		return nil, true
	}
	m, ok := special(addr.Unmap())
	return m.r, ok
}
