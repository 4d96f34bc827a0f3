package policy_test

import (
	"fmt"

	"github.com/auditguard/auditguard/policy"
)

// A facade that keeps one handle per write root finds the handle for an
// allowed call by Decision.Root, the deepest root containing the path.
func ExampleDecision_Root() {
	p, err := policy.New(policy.Spec{WriteRoots: []string{"/srv/agent/work", "/srv/agent/work/cache"}})
	if err != nil {
		panic(err)
	}
	for _, path := range []string{
		"/srv/agent/work/src/main.go",
		"/srv/agent/work/cache/objects/ab",
		"/srv/agent/elsewhere",
	} {
		d := p.CheckPath(policy.OpWrite, path, "")
		fmt.Printf("%-33s allowed=%-5v root=%q\n", path, d.Allowed, d.Root)
	}
	// Output:
	// /srv/agent/work/src/main.go       allowed=true  root="/srv/agent/work"
	// /srv/agent/work/cache/objects/ab  allowed=true  root="/srv/agent/work/cache"
	// /srv/agent/elsewhere              allowed=false root=""
}
