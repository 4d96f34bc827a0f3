package policy

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

// catchAll is a policy whose only rules are the public-internet catch-alls.
func catchAll(t testing.TB, extra ...NetRule) *Policy {
	return netPolicy(t, append([]NetRule{{CIDR: "0.0.0.0/0"}, {CIDR: "::/0"}}, extra...)...)
}

// TestSpecialBlocksNeverReachedByCatchAll probes the first, a middle and the
// last address of every special-purpose block, and of every block the
// issue names, under 0.0.0.0/0 and ::/0: each is denied, hard.
func TestSpecialBlocksNeverReachedByCatchAll(t *testing.T) {
	p := catchAll(t)
	blocks := []string{
		// Named explicitly: IPv4-compatible, IPv4-translated, NAT64
		// well-known and local-use, the 64:ff9c:: space, and samples of
		// everything outside global unicast 2000::/3.
		"::/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "64:ff9c::/32",
		"::/8", "100::/8", "200::/7", "400::/6", "800::/5", "1000::/4", "4000::/3", "6000::/3",
		"8000::/3", "a000::/3", "c000::/3", "e000::/4", "f000::/5", "f800::/6", "fc00::/7",
		"fe00::/9", "fe80::/10", "fec0::/10", "ff00::/8",
		"2001:db8::/32", "2002::/16", "3fff::/20", "5f00::/16",
	}
	for _, s := range SpecialRanges() {
		blocks = append(blocks, s.Prefix.String())
	}
	for _, b := range blocks {
		pf := netip.MustParsePrefix(b)
		first, last := pf.Addr(), lastAddr(pf)
		mid := midAddr(pf)
		for _, a := range []netip.Addr{first, mid, last} {
			d := p.CheckNet(OpConnect, networkOf(a), a.String(), 443, nil)
			if d.Allowed || d.Tier != TierHard || !strings.Contains(d.Rule.Pattern, "special-purpose") {
				t.Errorf("%s (in %s) under catch-alls: %+v (rule %v)", a, b, d, d.Rule)
			}
		}
	}
	// Public addresses are what the catch-alls are for.
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "2606:4700::1111", "2a00:1450:4001::1", "2001:4860:4860::8888"} {
		if d := p.CheckNet(OpConnect, networkOf(netip.MustParseAddr(a)), a, 443, nil); !d.Allowed {
			t.Errorf("public %s denied: %+v", a, d)
		}
	}
}

// TestOutsideGlobalUnicastRandom: any IPv6 address outside 2000::/3 is
// special, whatever allows it broadly.
func TestOutsideGlobalUnicastRandom(t *testing.T) {
	rnd := rand.New(rand.NewPCG(15, 6))
	g := netip.MustParsePrefix("2000::/3")
	for range 5000 {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], rnd.Uint64())
		binary.BigEndian.PutUint64(b[8:], rnd.Uint64())
		a := netip.AddrFrom16(b)
		if g.Contains(a) || a.Is4In6() {
			continue
		}
		if r, ok := IsSpecial(a); !ok || r == nil {
			t.Fatalf("%s outside 2000::/3 is not special", a)
		}
	}
}

// TestEmbeddedSpecialStaysDenied: a rule inside an IPv4-embedding block
// unlocks the block's public addresses, but an embedded IPv4 address that
// is itself special stays denied (unless a rule names that embedded form).
func TestEmbeddedSpecialStaysDenied(t *testing.T) {
	// The catch-alls come last so that the decision names the inner rule.
	p := netPolicy(t,
		NetRule{CIDR: "64:ff9b::/96"}, NetRule{CIDR: "64:ff9b:1::/48"}, NetRule{CIDR: "::/96"},
		NetRule{CIDR: "::ffff:0:0:0/96"}, NetRule{CIDR: "2002::/16"},
		NetRule{CIDR: "127.0.0.0/8"}, NetRule{CIDR: "169.254.169.254"}, NetRule{CIDR: "10.0.0.0/8"},
		NetRule{CIDR: "64:ff9b::a00:1"},
		NetRule{CIDR: "0.0.0.0/0"}, NetRule{CIDR: "::/0"},
	)
	for _, tc := range []struct {
		addr    string
		allowed bool
		want    string // substring of the deciding rule or detail
	}{
		{"64:ff9b::808:808", true, "64:ff9b::/96"},
		{"64:ff9b::a9fe:a9fe", false, "cloud metadata"},
		{"64:ff9b::7f00:1", false, "loopback"},
		{"64:ff9b::a00:1", true, "allow"}, // the exact embedded form 64:ff9b::a00:1 is named
		{"64:ff9b::a00:2", false, "private use"},
		{"64:ff9b:1::808:808", true, "64:ff9b:1::/48"},
		{"64:ff9b:1::a9fe:a9fe", false, "cloud metadata"},
		{"::808:808", true, "::/96"},
		{"::a9fe:a9fe", false, "cloud metadata"},
		{"::7f00:1", false, "loopback"},
		{"::ffff:0:808:808", true, "::ffff:0:0:0/96"},
		{"::ffff:0:a9fe:a9fe", false, "cloud metadata"},
		{"2002:808:808::1", true, "2002::/16"},
		{"2002:a9fe:a9fe::1", false, "cloud metadata"},
		{"::1", false, "loopback"}, // loopback, not "::0.0.0.1"
		{"::", false, "unspecified"},
	} {
		d := p.CheckNet(OpConnect, "tcp", tc.addr, 80, nil)
		got := d.Rule.String() + " " + d.Detail
		if d.Allowed != tc.allowed || !strings.Contains(got, tc.want) {
			t.Errorf("%s: allowed=%v %q, want allowed=%v containing %q", tc.addr, d.Allowed, got, tc.allowed, tc.want)
		}
		if !tc.allowed && d.Tier != TierHard {
			t.Errorf("%s: tier %v, want hard", tc.addr, d.Tier)
		}
	}
}

func networkOf(a netip.Addr) string {
	if a.Is4() {
		return "tcp4"
	}
	return "tcp6"
}

func midAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	if bits := p.Bits(); bits < len(b)*8 {
		b[bits/8] |= 0x80 >> (bits % 8)
		// Set a low bit too, so the probe is not on a round boundary.
		b[len(b)-1] |= 1
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
