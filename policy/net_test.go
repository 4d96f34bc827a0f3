package policy

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

func netPolicy(t testing.TB, rules ...NetRule) *Policy {
	t.Helper()
	p, err := New(Spec{Net: NetSpec{Rules: rules}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func TestCanonicalHost(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		invalid  bool
	}{
		{in: "example.com", want: "example.com"},
		{in: "Example.COM.", want: "example.com"},
		{in: "_dmarc.example.com", want: "_dmarc.example.com"},
		{in: "127.0.0.1", want: "127.0.0.1"},
		{in: "::FFFF:127.0.0.1", want: "127.0.0.1"},
		{in: "::ffff:7f00:1", want: "127.0.0.1"},
		{in: "2001:DB8::1", want: "2001:db8::1"},
		{in: "", invalid: true},
		{in: "127.1", invalid: true},
		{in: "2130706433", invalid: true},
		{in: "0x7f000001", invalid: true},
		{in: "0X7F000001", invalid: true},
		{in: "0177.0.0.1", invalid: true},
		{in: "127.0.0.1.", invalid: true},
		{in: "1.2.3.0x4", invalid: true},
		{in: "fe80::1%eth0", invalid: true},
		{in: "exa mple.com", invalid: true},
		{in: "bücher.de", invalid: true},
		{in: "-a.example", invalid: true},
		{in: "a..b", invalid: true},
		{in: ".", invalid: true},
		{in: "a:b", invalid: true},
		{in: strings.Repeat("a", 64) + ".com", invalid: true},
	} {
		got, _, err := CanonicalHost(tc.in)
		if tc.invalid {
			if err == nil {
				t.Errorf("CanonicalHost(%q) = %q, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("CanonicalHost(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestSplitNetAddress(t *testing.T) {
	for _, tc := range []struct {
		in   string
		host string
		port uint16
		ok   bool
	}{
		{"example.com:443", "example.com", 443, true},
		{"[::1]:80", "::1", 80, true},
		{"[::ffff:127.0.0.1]:80", "127.0.0.1", 80, true},
		{"127.0.0.1:0", "127.0.0.1", 0, true},
		{":80", "", 0, false},
		{"example.com", "", 0, false},
		{"example.com:http", "", 0, false},
		{"example.com:65536", "", 0, false},
		{"example.com:-1", "", 0, false},
		{"::1:80", "", 0, false},
		{"[127.0.0.1]:80", "", 0, false},
		{"[fe80::1%eth0]:80", "", 0, false},
		{"[::1]x:80", "", 0, false},
	} {
		h, _, p, err := SplitNetAddress(tc.in)
		if (err == nil) != tc.ok || h != tc.host || p != tc.port {
			t.Errorf("SplitNetAddress(%q) = %q, %d, %v; want %q, %d, ok=%v", tc.in, h, p, err, tc.host, tc.port, tc.ok)
		}
	}
}

func TestNetRuleErrors(t *testing.T) {
	for _, r := range []NetRule{
		{},
		{Host: "a.example", CIDR: "10.0.0.0/8"},
		{Host: "10.0.0.1"},
		{Host: "a.*.example"},
		{Host: "*"},
		{Host: "Example.com"},
		{Host: "127.1"},
		{CIDR: "10.0.0.1/8"},
		{CIDR: "::ffff:0:0/96"},
		{CIDR: "fe80::1%eth0"},
		{CIDR: "not-an-ip"},
		{Host: "a.example", Ports: []string{"http"}},
		{Host: "a.example", Ports: []string{"90-80"}},
		{Host: "a.example", Ports: []string{"70000"}},
		{Host: "a.example", Network: "sctp"},
		{Host: "a.example", Network: "unix"},
		{Path: "relative.sock", Network: "unix"},
		{Path: "/run/../x.sock", Network: "unix"},
	} {
		if _, err := New(Spec{Net: NetSpec{Rules: []NetRule{r}}}); err == nil {
			t.Errorf("rule %+v was accepted", r)
		} else if !strings.Contains(err.Error(), "net rule") {
			t.Errorf("rule %+v: error %q does not name the entry", r, err)
		}
	}
}

func TestCheckNet(t *testing.T) {
	p := netPolicy(t,
		NetRule{Host: "api.example.com", Ports: []string{"443"}, Source: "test:1"},
		NetRule{Host: "*.cdn.example", Ports: []string{"80", "8000-8999"}},
		NetRule{Host: "bad.cdn.example", Deny: true},
		NetRule{CIDR: "127.0.0.1", Ports: []string{"8080"}},
		NetRule{CIDR: "10.1.0.0/16"},
		NetRule{CIDR: "0.0.0.0/0", Ports: []string{"22"}},
		NetRule{CIDR: "169.254.0.0/16"},
		NetRule{CIDR: "203.0.113.0/24"},
		NetRule{CIDR: "198.51.100.7", Deny: true},
		NetRule{CIDR: "64:ff9b::7f00:1"},
		NetRule{CIDR: "127.0.0.1", Ports: []string{"9000"}, Listen: true},
		NetRule{Host: "dns.example", Network: "udp", Ports: []string{"53"}},
	)
	pub := "93.184.216.34"
	for _, tc := range []struct {
		name    string
		op      Op
		network string
		host    string
		port    uint16
		addrs   []netip.Addr
		allowed bool
		tier    Tier
		rule    string // substring of the deciding rule
	}{
		{"host rule", OpConnect, "tcp", "api.example.com", 443, addrs(pub), true, 0, "allow connect tcp api.example.com ports 443"},
		{"host rule wrong port", OpConnect, "tcp", "api.example.com", 80, addrs(pub), false, TierSoft, "need a net rule"},
		{"host rule unresolved", OpConnect, "tcp", "api.example.com", 443, nil, true, 0, "api.example.com"},
		{"host rule tcp6", OpConnect, "tcp6", "api.example.com", 443, addrs("2606:2800:220:1:248:1893:25c8:1946"), true, 0, "api.example.com"},
		{"host rule but private", OpConnect, "tcp", "api.example.com", 443, addrs(pub, "10.0.0.1"), false, TierHard, "private use"},
		{"host rule but loopback", OpConnect, "tcp", "api.example.com", 443, addrs("127.0.0.1"), false, TierHard, "loopback"},
		{"wildcard", OpConnect, "tcp", "img.cdn.example", 8443, addrs(pub), true, 0, "*.cdn.example"},
		{"wildcard deep", OpConnect, "tcp", "a.b.cdn.example", 80, addrs(pub), true, 0, "*.cdn.example"},
		{"wildcard not apex", OpConnect, "tcp", "cdn.example", 80, addrs(pub), false, TierSoft, ""},
		{"deny wins", OpConnect, "tcp", "bad.cdn.example", 80, addrs(pub), false, TierHard, "deny connect tcp bad.cdn.example"},
		{"unknown name", OpConnect, "tcp", "other.example", 443, addrs(pub), false, TierSoft, "need a net rule"},
		{"loopback literal unlocked", OpConnect, "tcp", "127.0.0.1", 8080, nil, true, 0, "127.0.0.1/32"},
		{"loopback literal other port", OpConnect, "tcp", "127.0.0.1", 8081, nil, false, TierHard, "loopback"},
		{"loopback other address", OpConnect, "tcp", "127.0.0.2", 8080, nil, false, TierHard, "loopback"},
		{"name into unlocked loopback", OpConnect, "tcp", "local.test", 8080, addrs("127.0.0.1"), true, 0, "127.0.0.1/32"},
		{"private unlocked by /16", OpConnect, "tcp", "10.1.2.3", 5432, nil, true, 0, "10.1.0.0/16"},
		{"private outside /16", OpConnect, "tcp", "10.2.0.1", 5432, nil, false, TierHard, "10.0.0.0/8"},
		{"catch-all allows public", OpConnect, "tcp", "8.8.8.8", 22, nil, true, 0, "0.0.0.0/0"},
		{"catch-all never unlocks", OpConnect, "tcp", "192.168.1.1", 22, nil, false, TierHard, "192.168.0.0/16"},
		{"metadata not unlocked by link-local rule", OpConnect, "tcp", "169.254.169.254", 80, nil, false, TierHard, "cloud metadata"},
		{"link-local unlocked", OpConnect, "tcp", "169.254.1.1", 80, nil, true, 0, "169.254.0.0/16"},
		{"documentation unlocked", OpConnect, "tcp", "203.0.113.5", 80, nil, true, 0, "203.0.113.0/24"},
		{"deny cidr", OpConnect, "tcp", "198.51.100.7", 22, nil, false, TierHard, "deny connect tcp 198.51.100.7/32"},
		{"azure wireserver is public but special", OpConnect, "tcp", "168.63.129.16", 22, nil, false, TierHard, "wireserver"},
		{"nat64 loopback unlocked by exact rule", OpConnect, "tcp", "64:ff9b::7f00:1", 80, nil, true, 0, "64:ff9b::7f00:1/128"},
		{"nat64 other loopback", OpConnect, "tcp", "64:ff9b::7f00:2", 80, nil, false, TierHard, "loopback"},
		{"nat64 public is still special", OpConnect, "tcp", "64:ff9b::808:808", 22, nil, false, TierHard, "NAT64 well-known prefix"},
		{"6to4 private", OpConnect, "tcp", "2002:a00:1::", 22, nil, false, TierHard, "private use"},
		{"teredo", OpConnect, "tcp", "2001:0:4136:e378:8000:63bf:3fff:fdd2", 22, nil, false, TierHard, ""},
		{"ula", OpConnect, "tcp", "fd12::1", 22, nil, false, TierHard, "unique local"},
		{"site local", OpConnect, "tcp", "fec0::1", 22, nil, false, TierHard, "site local"},
		{"outside 2000::/3", OpConnect, "tcp", "4000::1", 22, nil, false, TierHard, "outside global unicast"},
		{"unspecified v6", OpConnect, "tcp", "::", 22, nil, false, TierHard, "unspecified"},
		{"listen rule", OpListen, "tcp", "127.0.0.1", 9000, nil, true, 0, "allow listen tcp 127.0.0.1/32"},
		{"listen needs listen rule", OpListen, "tcp", "127.0.0.1", 8080, nil, false, TierHard, "loopback"},
		{"listen public no rule", OpListen, "tcp", "8.8.8.8", 22, nil, false, TierSoft, "listen rule"},
		{"connect rule is not listen", OpConnect, "tcp", "127.0.0.1", 9000, nil, false, TierHard, "loopback"},
		{"udp rule", OpConnect, "udp", "dns.example", 53, addrs(pub), true, 0, "allow connect udp dns.example"},
		{"udp needs udp rule", OpConnect, "udp", "api.example.com", 443, addrs(pub), false, TierSoft, ""},
		{"tcp rule is not udp", OpConnect, "tcp", "dns.example", 53, addrs(pub), false, TierSoft, ""},
		{"unknown network", OpConnect, "ip", "api.example.com", 443, addrs(pub), false, TierInvalid, ""},
		{"not canonical", OpConnect, "tcp", "API.example.com", 443, addrs(pub), false, TierInvalid, ""},
		{"numeric host", OpConnect, "tcp", "2130706433", 443, nil, false, TierInvalid, ""},
		{"mapped literal", OpConnect, "tcp", "::ffff:127.0.0.1", 80, nil, false, TierInvalid, ""},
		{"zoned answer", OpConnect, "tcp", "api.example.com", 443, addrs("fe80::1%eth0"), false, TierInvalid, ""},
		{"family mismatch", OpConnect, "tcp4", "api.example.com", 443, addrs("2606:2800:220:1::1"), false, TierInvalid, ""},
		{"not a net op", OpRead, "tcp", "api.example.com", 443, addrs(pub), false, TierInvalid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.CheckNet(tc.op, tc.network, tc.host, tc.port, tc.addrs)
			if d.Allowed != tc.allowed || d.Tier != tc.tier {
				t.Fatalf("CheckNet = allowed %v tier %v (%v: %s); want allowed %v tier %v", d.Allowed, d.Tier, d.Rule, d.Detail, tc.allowed, tc.tier)
			}
			if d.Rule == nil {
				t.Fatal("no deciding rule")
			}
			if !strings.Contains(d.Rule.String(), tc.rule) {
				t.Errorf("rule %q does not contain %q", d.Rule, tc.rule)
			}
		})
	}
}

func TestCheckNetSourceAndProvenance(t *testing.T) {
	p := netPolicy(t, NetRule{Host: "api.example.com", Source: "policy.toml:3"}, NetRule{CIDR: "10.0.0.0/8"})
	d := p.CheckNet(OpConnect, "tcp", "api.example.com", 443, addrs("93.184.216.34"))
	if !d.Allowed || d.Rule.Source != "policy.toml:3" || d.Rule.Kind != KindNet {
		t.Fatalf("got %+v", d)
	}
	d = p.CheckNet(OpConnect, "tcp", "10.0.0.1", 1, nil)
	if !d.Allowed || d.Rule.Source != "code" {
		t.Fatalf("got %+v", d)
	}
	d = p.CheckNet(OpConnect, "tcp", "127.0.0.1", 1, nil)
	if d.Rule.Kind != KindNet || !strings.HasPrefix(d.Rule.Source, "builtin: IANA IPv4 Special-Purpose") || !strings.Contains(d.Rule.Source, "RFC 1122") {
		t.Fatalf("special rule %+v", d.Rule)
	}
	if n := p.NetRuleCount(); n != 2 {
		t.Fatalf("NetRuleCount = %d", n)
	}
}

func TestCheckDial(t *testing.T) {
	p := netPolicy(t, NetRule{Host: "api.example.com"}, NetRule{CIDR: "127.0.0.1"})
	if d := p.CheckDial("tcp", "api.example.com", netip.MustParseAddr("93.184.216.34"), 443); !d.Allowed {
		t.Errorf("name dial: %+v", d)
	}
	if d := p.CheckDial("tcp", "api.example.com", netip.MustParseAddr("10.0.0.1"), 443); d.Tier != TierHard {
		t.Errorf("private: %+v", d)
	}
	if d := p.CheckDial("tcp", "", netip.MustParseAddr("::ffff:127.0.0.1"), 80); !d.Allowed {
		t.Errorf("mapped literal: %+v", d)
	}
	if d := p.CheckDial("tcp", "", netip.Addr{}, 80); d.Tier != TierInvalid {
		t.Errorf("invalid: %+v", d)
	}
	if d := p.CheckDial("unix", "", netip.MustParseAddr("127.0.0.1"), 80); d.Tier != TierInvalid {
		t.Errorf("unix: %+v", d)
	}
}

func TestCheckUnix(t *testing.T) {
	dir := t.TempDir()
	real, err := Resolve(OSFS{}, dir, "/", true)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Spec{WriteRoots: []string{real}, Net: NetSpec{Rules: []NetRule{
		{Path: real + "/app.sock", Network: "unix"},
		{Path: "/run/app.sock", Network: "unix"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.CheckNet(OpConnect, "unix", real+"/app.sock", 0, nil); !d.Allowed {
		t.Errorf("allowed socket: %+v", d)
	}
	if d := p.CheckNet(OpConnect, "unix", real+"/other.sock", 0, nil); d.Allowed || d.Tier != TierSoft {
		t.Errorf("no rule: %+v", d)
	}
	if d := p.CheckNet(OpConnect, "unix", "/run/app.sock", 0, nil); d.Allowed || d.Rule != ruleUnixRoot {
		t.Errorf("outside write roots: %+v", d)
	}
	if d := p.CheckNet(OpConnect, "unix", "@abstract", 0, nil); d.Tier != TierInvalid {
		t.Errorf("abstract: %+v", d)
	}
	if d := p.CheckNet(OpListen, "unix", real+"/app.sock", 0, nil); d.Allowed {
		t.Errorf("connect rule allowed listen: %+v", d)
	}
}

func TestSpecialRangesData(t *testing.T) {
	for _, s := range SpecialRanges() {
		if !s.Prefix.IsValid() || s.Prefix.Masked() != s.Prefix || s.Name == "" || s.Source == "" || s.rule == nil {
			t.Errorf("bad entry %+v", s)
		}
	}
	for _, a := range []string{"169.254.169.254", "fd00:ec2::254", "168.63.129.16", "100.100.100.200"} {
		r, ok := IsSpecial(netip.MustParseAddr(a))
		if !ok || !strings.Contains(r.Name, "cloud") {
			t.Errorf("%s: %v %v", a, r, ok)
		}
	}
	for _, a := range []string{"8.8.8.8", "2606:4700::1111", "2a00:1450::1"} {
		if r, ok := IsSpecial(netip.MustParseAddr(a)); ok {
			t.Errorf("%s is public, got %v", a, r.Name)
		}
	}
}

func TestCheckNetAllocs(t *testing.T) {
	p := netPolicy(t, NetRule{Host: "api.example.com"}, NetRule{Host: "*.example.org"}, NetRule{CIDR: "127.0.0.1"})
	as := addrs("93.184.216.34", "2606:2800:220:1::1")
	one := netip.MustParseAddr("93.184.216.34")
	n := testing.AllocsPerRun(100, func() {
		p.CheckNet(OpConnect, "tcp", "api.example.com", 443, as)
		p.CheckNet(OpConnect, "tcp", "a.b.example.org", 443, as)
		p.CheckNet(OpConnect, "tcp", "127.0.0.1", 80, nil)
		p.CheckNet(OpConnect, "tcp", "64:ff9b::7f00:1", 80, nil)
		p.CheckDial("tcp", "api.example.com", one, 443)
		p.CheckDial("tcp", "", one, 443)
	})
	if n != 0 {
		t.Fatalf("CheckNet allocates %v times", n)
	}
}

func BenchmarkCheckNet(b *testing.B) {
	p := netPolicy(b, NetRule{Host: "api.example.com"}, NetRule{Host: "*.example.org"}, NetRule{CIDR: "127.0.0.1"})
	as := addrs("93.184.216.34", "2606:2800:220:1::1")
	b.Run("name", func(b *testing.B) {
		for b.Loop() {
			p.CheckNet(OpConnect, "tcp", "a.b.example.org", 443, as)
		}
	})
	b.Run("literal", func(b *testing.B) {
		for b.Loop() {
			p.CheckNet(OpConnect, "tcp", "127.0.0.1", 80, nil)
		}
	})
}

// TestCompiledSpecialTables checks the compiled masks against
// netip.Prefix.Contains on each block's edges and on random addresses.
func TestCompiledSpecialTables(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var probes4, probes6 []netip.Addr
	for _, s := range SpecialRanges() {
		p := s.Prefix
		first := p.Addr()
		last := lastAddr(p)
		for _, a := range []netip.Addr{first, first.Prev(), last, last.Next()} {
			if a.IsValid() {
				if a.Is4() {
					probes4 = append(probes4, a)
				} else {
					probes6 = append(probes6, a)
				}
			}
		}
	}
	for range 2000 {
		var b4 [4]byte
		var b16 [16]byte
		binary.BigEndian.PutUint32(b4[:], rnd.Uint32())
		binary.BigEndian.PutUint64(b16[:8], rnd.Uint64())
		binary.BigEndian.PutUint64(b16[8:], rnd.Uint64())
		probes4 = append(probes4, netip.AddrFrom4(b4))
		probes6 = append(probes6, netip.AddrFrom16(b16))
	}
	for _, tab := range [][]match4{meta4, spec4} {
		for _, m := range tab {
			for _, a := range probes4 {
				b := a.As4()
				if got := binary.BigEndian.Uint32(b[:])&m.mask == m.base; got != m.r.Prefix.Contains(a) {
					t.Fatalf("%v contains %v: compiled %v", m.r.Prefix, a, got)
				}
			}
		}
	}
	for _, tab := range [][]match6{meta6, exact6, spec6, outside6m, emb6} {
		for _, m := range tab {
			var p netip.Prefix
			if m.r != nil {
				p = m.r.Prefix
			} else {
				p = m.e.Prefix
			}
			for _, a := range probes6 {
				b := a.As16()
				if got := m.contains(binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])); got != p.Contains(a) {
					t.Fatalf("%v contains %v: compiled %v", p, a, got)
				}
			}
		}
	}
	if len(meta4)+len(meta6) != len(cloudMetadata) || len(spec4) != len(special4) || len(exact6)+len(spec6) != len(special6) || len(outside6m) != len(outside6) {
		t.Fatal("a table entry was not compiled")
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
