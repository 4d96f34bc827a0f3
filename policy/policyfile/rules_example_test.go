package policyfile_test

import (
	"fmt"
	"net/netip"

	"github.com/auditguard/auditguard/policy/policyfile"
)

// A net rule loaded from a file keeps the file and line it is written on,
// and decides like the same rule built in code.
func ExampleParse_netRules() {
	f, err := policyfile.Parse("agent.toml", []byte(`
[[net.allow]]
host = "api.example.com"
ports = [443]
match = ["api.example.com:443"]

[[net.deny]]
host = "*.internal.example.com"
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	pub := netip.MustParseAddr("93.184.215.14")
	for _, host := range []string{"api.example.com", "db.internal.example.com", "www.example.com"} {
		d := f.Policy.CheckDial("tcp", host, pub, 443)
		fmt.Printf("%s: allowed=%v %s (%s)\n", host, d.Allowed, d.Rule.Pattern, d.Rule.Source)
	}

	// A typo is an error with its position and a suggestion.
	_, err = policyfile.Parse("agent.toml", []byte("[[net.allow]]\nhost = \"api.example.com\"\nport = [443]\n"))
	fmt.Println(err)
	// Output:
	// api.example.com: allowed=true allow connect tcp api.example.com ports 443 (agent.toml:2)
	// db.internal.example.com: allowed=false deny connect tcp *.internal.example.com (agent.toml:7)
	// www.example.com: allowed=false connections need a net rule (builtin)
	// policy: agent.toml:3:1: net.allow[0].port: unknown key (did you mean "ports"?)
}
