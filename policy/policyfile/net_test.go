package policyfile

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

const netOperator = `# operator layer
[fs]
write_roots = ["$WORK"]

[[net.allow]]
host = "*.example.com"
ports = [443, "8000-8999"]

[[net.allow]]
host = "api.example.org"
ports = [443]

[[net.allow]]
host = "api.example.org"
ports = [8443]

[[net.allow]]
cidr = "10.1.0.0/16"
ports = [5432]

[[net.allow]]
cidr = "0.0.0.0/0"
ports = [443]

[[net.allow]]
cidr = "127.0.0.0/8"
listen = true

[[net.allow]]
path = "$WORK/run"
network = "unix"

[[net.deny]]
host = "evil.example.com"
`

func TestLayersNetNarrow(t *testing.T) {
	e := newLayerEnv(t, netOperator)
	f, err := e.load(t, `# workspace layer
[[net.allow]]
host = "api.example.com"
ports = [443]

[[net.allow]]
host = "*.cdn.example.com"
ports = ["8000-8100"]

[[net.allow]]
host = "api.example.org"
ports = [443, 8443]

[[net.allow]]
cidr = "10.1.2.0/24"
ports = [5432]

[[net.allow]]
cidr = "127.0.0.1"
ports = [8080]
listen = true

[[net.allow]]
path = "$WORK/run/db"
network = "unix"

[[net.deny]]
cidr = "10.1.2.3"
`)
	if err != nil {
		t.Fatal(err)
	}
	p := f.Policy
	pub := []netip.Addr{netip.MustParseAddr("93.184.215.14")}
	ws := func(line string) string { return e.ws + ":" + line }
	tests := []struct {
		op      policy.Op
		network string
		host    string
		port    uint16
		addrs   []netip.Addr
		allowed bool
		tier    policy.Tier
		source  string
	}{
		{policy.OpConnect, "tcp", "api.example.com", 443, pub, true, policy.TierNone, ws("2")},
		{policy.OpConnect, "tcp", "www.example.com", 443, pub, false, policy.TierSoft, "builtin"}, // the operator's allows are replaced
		{policy.OpConnect, "tcp", "a.cdn.example.com", 8080, pub, true, policy.TierNone, ws("6")},
		{policy.OpConnect, "tcp", "a.cdn.example.com", 8200, pub, false, policy.TierSoft, "builtin"},
		{policy.OpConnect, "tcp", "api.example.org", 8443, pub, true, policy.TierNone, ws("10")},
		{policy.OpConnect, "tcp", "10.1.2.4", 5432, nil, true, policy.TierNone, ws("14")},
		{policy.OpConnect, "tcp", "10.1.3.4", 5432, nil, false, policy.TierHard, "builtin"},
		{policy.OpConnect, "tcp", "10.1.2.3", 5432, nil, false, policy.TierHard, ws("27")},
		{policy.OpConnect, "tcp", "evil.example.com", 443, pub, false, policy.TierHard, e.op + ":33"},
		{policy.OpListen, "tcp", "127.0.0.1", 8080, nil, true, policy.TierNone, ws("18")},
		{policy.OpListen, "tcp", "127.0.0.2", 8080, nil, false, policy.TierHard, "builtin"},
		{policy.OpConnect, "unix", e.work + "/run/db/s.sock", 0, nil, true, policy.TierNone, ws("23")},
		{policy.OpConnect, "unix", e.work + "/run/s.sock", 0, nil, false, policy.TierSoft, "builtin"},
	}
	for _, tt := range tests {
		d := p.CheckNet(tt.op, tt.network, tt.host, tt.port, tt.addrs)
		if d.Allowed != tt.allowed || d.Tier != tt.tier || !strings.HasPrefix(d.Rule.Source, tt.source) {
			t.Errorf("%v %s %s:%d: %+v by %v, want allowed=%v tier %v source %s", tt.op, tt.network, tt.host, tt.port, d, d.Rule, tt.allowed, tt.tier, tt.source)
		}
	}

	// Without [[net.allow]] the operator's allow rules stay; denies add.
	f, err = e.load(t, "[[net.deny]]\nhost = \"old.example.com\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if d := f.Policy.CheckNet(policy.OpConnect, "tcp", "www.example.com", 443, pub); !d.Allowed || d.Rule.Source != e.op+":5" {
		t.Errorf("operator allow lost: %+v %v", d, d.Rule)
	}
	if d := f.Policy.CheckNet(policy.OpConnect, "tcp", "old.example.com", 443, pub); d.Tier != policy.TierHard || d.Rule.Source != e.ws+":1" {
		t.Errorf("workspace deny: %+v %v", d, d.Rule)
	}
}

func TestLayersNetRejectWidening(t *testing.T) {
	tests := []struct {
		name      string
		workspace string
		line      int
		key, msg  string
	}{
		{"host outside", "[[net.allow]]\nhost = \"api.other.com\"\nports = [443]\n", 1, "net.allow[0]",
			`"allow connect tcp api.other.com ports 443" is not within any operator allow rule ("allow connect tcp *.example.com ports 443,8000-8999" at $OP:5, `},
		{"wildcard over an exact host", "\n\n[[net.allow]]\nhost = \"*.example.org\"\nports = [443]\n", 3, "net.allow[0]", "is not within any operator allow rule"},
		{"parent of a wildcard", "[[net.allow]]\nhost = \"example.com\"\nports = [443]\n", 1, "net.allow[0]", "is not within any operator allow rule"},
		{"more ports", "[[net.allow]]\nhost = \"*.example.com\"\nports = [443, 80]\n", 1, "net.allow[0]",
			`"allow connect tcp *.example.com ports 443,80": ports 80 are not all allowed by the operator rules covering it ("allow connect tcp *.example.com ports 443,8000-8999" at $OP:5)`},
		{"every port", "[[net.allow]]\nhost = \"api.example.org\"\n", 1, "net.allow[0]", "ports (every port) are not all allowed"},
		{"wider port range", "[[net.allow]]\nhost = \"a.example.com\"\nports = [\"8000-9000\"]\n", 1, "net.allow[0]", "ports 8000-9000 are not all allowed"},
		{"cidr outside", "[[net.allow]]\ncidr = \"11.0.0.0/16\"\nports = [5432]\n", 1, "net.allow[0]",
			`ports 5432 are not all allowed by the operator rules covering it ("allow connect tcp 0.0.0.0/0 ports 443" at $OP:21)`},
		{"cidr wider", "[[net.allow]]\ncidr = \"10.0.0.0/8\"\nports = [5432]\n", 1, "net.allow[0]",
			"it would unlock special-purpose addresses (private use, 10.0.0.0/8) that the operator range 0.0.0.0/0 does not unlock"},
		{"ipv6 outside", "[[net.allow]]\ncidr = \"2606:4700::/32\"\nports = [443]\n", 1, "net.allow[0]",
			`"allow connect tcp 2606:4700::/32 ports 443" is not within any operator allow rule ("allow connect tcp 10.1.0.0/16 ports 5432" at $OP:17, "allow connect tcp 0.0.0.0/0 ports 443" at $OP:21)`},
		{"unlock loopback", "[[net.allow]]\ncidr = \"127.0.0.1\"\nports = [443]\n", 1, "net.allow[0]",
			"it would unlock special-purpose addresses (loopback, 127.0.0.0/8) that the operator range 0.0.0.0/0 does not unlock"},
		{"unlock metadata", "[[net.allow]]\ncidr = \"169.254.169.254\"\nports = [443]\n", 1, "net.allow[0]", "would unlock special-purpose addresses (cloud metadata"},
		{"unlock private", "[[net.allow]]\ncidr = \"192.168.0.0/16\"\nports = [443]\n", 1, "net.allow[0]", "would unlock special-purpose addresses (private use, 192.168.0.0/16)"},
		{"listen instead of connect", "[[net.allow]]\ncidr = \"10.1.2.0/24\"\nports = [5432]\nlisten = true\n", 1, "net.allow[0]", "is not within any operator allow rule"},
		{"udp instead of tcp", "[[net.allow]]\nhost = \"api.example.com\"\nports = [443]\nnetwork = \"udp\"\n", 1, "net.allow[0]", "is not within any operator allow rule"},
		{"host instead of address", "[[net.allow]]\nhost = \"db.example.net\"\nports = [5432]\n", 1, "net.allow[0]", "is not within any operator allow rule"},
		{"socket outside", "[[net.allow]]\npath = \"$DIR/other\"\nnetwork = \"unix\"\n", 1, "net.allow[0]", `work/run" at $OP:29)`},
		{"no rule of the kind", "[[net.allow]]\nhost = \"a.example.com\"\nlisten = true\n", 1, "net.allow[0]", "the operator layer has no allow rule of this kind"},
		{"second rule", "[[net.allow]]\nhost = \"api.example.com\"\nports = [443]\n\n[[net.allow]]\ncidr = \"8.8.8.8\"\nports = [53]\nnetwork = \"udp\"\n", 5, "net.allow[1]", "is not within any operator allow rule"},
		{"invalid workspace rule", "[[net.deny]]\ncidr = \"10.0.0.1/8\"\n", 1, "net.deny[0]", "host bits are set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newLayerEnv(t, netOperator)
			e.rejects(t, tt.workspace, tt.line, tt.key, strings.ReplaceAll(tt.msg, "$OP", e.op))
		})
	}
}

// TestWatchNetRules reloads net rules: an edit changes decisions, and a
// widening workspace edit is rejected while the last good policy stays.
func TestWatchNetRules(t *testing.T) {
	e := newLayerEnv(t, netOperator)
	writeInPlace(t, e.ws, "[[net.allow]]\nhost = \"a.example.com\"\nports = [443]\n")
	pub := []netip.Addr{netip.MustParseAddr("93.184.215.14")}
	dials := func(host string) func(WatchEvent) bool {
		return func(ev WatchEvent) bool {
			return ev.File.Policy.CheckNet(policy.OpConnect, "tcp", host, 443, pub).Allowed
		}
	}
	h := newHarness(t)
	var tg fakeTarget
	h.watch(e.op, &tg, dials("a.example.com"), e.watchOpts()...)

	writeAtomic(t, e.ws, "[[net.allow]]\nhost = \"b.example.com\"\nports = [443]\n")
	h.wait(WatchReloaded, dials("b.example.com"))
	if d := tg.p.Load().CheckNet(policy.OpConnect, "tcp", "a.example.com", 443, pub); d.Allowed {
		t.Fatal("the old workspace rule still allows")
	}

	writeAtomic(t, e.ws, "[[net.allow]]\nhost = \"b.example.com\"\nports = [443, 22]\n")
	ev := h.wait(WatchRejected, nil)
	if ev.Err == nil || !strings.Contains(ev.Err.Error(), "ports 22 are not all allowed") {
		t.Fatalf("rejection: %v", ev.Err)
	}
	if d := tg.p.Load().CheckNet(policy.OpConnect, "tcp", "b.example.com", 443, pub); !d.Allowed || d.Rule.Source != e.ws+":1" {
		t.Fatalf("last good policy not in force: %+v", d)
	}
}

// A wildcard over a public suffix is refused from a file too, at its line.
func TestHostWildcardPublicSuffixFile(t *testing.T) {
	_, err := Parse("policy.toml", []byte("[[net.allow]]\nhost = \"*.co.uk\"\nports = [443]\n"))
	if err == nil {
		t.Fatal("a wildcard over co.uk was accepted from a file")
	}
	if msg := err.Error(); !strings.Contains(msg, "policy.toml:") || !strings.Contains(msg, `"*.example.co.uk"`) {
		t.Errorf("message lacks the position or the hint: %s", msg)
	}
}
