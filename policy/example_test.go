package policy_test

import (
	"fmt"

	"github.com/auditguard/auditguard/policy"
)

func ExamplePolicy_CheckPath() {
	p, err := policy.New(policy.Spec{
		WriteRoots: []string{"/srv/agent/work"},
		Protected:  []string{"deploy.yaml"}, // added to the built-in list
	})
	if err != nil {
		panic(err)
	}
	for _, path := range []string{
		"/srv/agent/work/src/main.go",
		"/srv/agent/work_evil/x",
		"/srv/agent/work/.GIT/hooks/pre-push",
		"/srv/agent/work/k8s/Deploy.yaml",
	} {
		d := p.CheckPath(policy.OpWrite, path, "")
		fmt.Printf("%-36s allowed=%-5v %v\n", path, d.Allowed, d.Rule)
	}
	// Output:
	// /srv/agent/work/src/main.go          allowed=true  write root "/srv/agent/work" (code)
	// /srv/agent/work_evil/x               allowed=false default "writes need a write root" (builtin)
	// /srv/agent/work/.GIT/hooks/pre-push  allowed=false protected ".git/hooks" (builtin)
	// /srv/agent/work/k8s/Deploy.yaml      allowed=false protected "deploy.yaml" (code)
}

func ExampleResolve() {
	// Resolution happens on the filesystem being guarded; a path that does
	// not exist resolves to its deepest existing ancestor plus the rest.
	p, err := policy.Resolve(policy.OSFS{}, "/nonexistent-example/a/../b", "/", true)
	fmt.Println(p, err)
	// Output: /nonexistent-example/b <nil>
}
