package policy

import (
	"net/netip"
	"strings"
	"testing"
)

var hostSeeds = []string{
	"127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0.0.0.0", "::", "::1",
	"::ffff:127.0.0.1", "::ffff:7f00:1", "169.254.169.254", "fd00:ec2::254", "100.64.0.1",
	"fe80::1%eth0", "64:ff9b::7f00:1", "2002:7f00:1::", "", "Example.COM.", "a..b", "xn--bcher-kva.de",
	"1.2.3.0x4", "0X7F.1", "_srv._tcp.example.com", "-x.example", "a.b-", "127.0.0.1.", "[::1]",
}

// FuzzCanonicalHost: no panics, and everything accepted is canonical: it
// canonicalises to itself, an IP literal is netip's spelling without zone
// or IPv4 mapping, and a name is lower case, not numeric, and not an IP.
func FuzzCanonicalHost(f *testing.F) {
	for _, s := range hostSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		canon, ip, err := CanonicalHost(host)
		if err != nil {
			if _, ok := err.(*NetInputError); !ok {
				t.Fatalf("error type %T", err)
			}
			return
		}
		again, ip2, err := CanonicalHost(canon)
		if err != nil || again != canon || ip2 != ip {
			t.Fatalf("%q -> %q -> %q, %v: not stable", host, canon, again, err)
		}
		if ip.IsValid() {
			if ip.Zone() != "" || ip.Is4In6() || ip.String() != canon {
				t.Fatalf("%q -> %q (%v): not canonical", host, canon, ip)
			}
			return
		}
		if canon != strings.ToLower(canon) || strings.HasSuffix(canon, ".") || canon == "" {
			t.Fatalf("%q -> %q: name not canonical", host, canon)
		}
		if _, err := netip.ParseAddr(canon); err == nil {
			t.Fatalf("%q -> %q: a name that parses as an address", host, canon)
		}
		last := canon[strings.LastIndexByte(canon, '.')+1:]
		if numericLabel(last) {
			t.Fatalf("%q -> %q: numeric last label", host, canon)
		}
		for _, c := range canon {
			if c > 0x7f || c == '%' || c == ':' || c == '/' || c == ' ' {
				t.Fatalf("%q -> %q: bad byte %q", host, canon, c)
			}
		}
	})
}

// FuzzNetRequest: parsing an address and deciding on it never panics, and
// invalid input always decides TierInvalid.
func FuzzNetRequest(f *testing.F) {
	for _, s := range hostSeeds {
		f.Add("tcp", s+":80")
		f.Add("tcp", "["+s+"]:443")
	}
	f.Add("udp", "example.com:53")
	f.Add("unix", "/run/x.sock")
	f.Add("tcp4", ":80")
	p, err := New(Spec{Net: NetSpec{Rules: []NetRule{{Host: "example.com"}, {Host: "*.example.org"},
		{CIDR: "127.0.0.1"}, {CIDR: "0.0.0.0/0"}, {CIDR: "::/0"}, {CIDR: "10.0.0.0/8", Deny: true}}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, network, address string) {
		req, err := ParseNetRequest(OpConnect, network, address)
		d := req.Decide(p)
		if d.Rule == nil {
			t.Fatal("no deciding rule")
		}
		if err != nil {
			if d.Tier != TierInvalid {
				t.Fatalf("invalid %q decided %+v", address, d)
			}
			return
		}
		if req.IP.IsValid() {
			if req.Host != req.IP.String() || req.IP.Is4In6() || req.IP.Zone() != "" {
				t.Fatalf("%q: literal not canonical: %q", address, req.Host)
			}
		}
		// Deciding again with the canonical host gives the same answer.
		if !strings.HasPrefix(network, "unix") {
			if d2 := p.CheckNet(OpConnect, network, req.Host, req.Port, req.Addrs); d2 != d {
				t.Fatalf("%q: %+v then %+v", address, d, d2)
			}
		}
	})
}
