package policyfile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
)

func ExampleParse() {
	doc := `
[fs]
write_roots = ["/srv/agent/work"]
protected = ["secrets"]
`
	f, err := policyfile.Parse("agent.toml", []byte(doc))
	if err != nil {
		fmt.Println(err)
		return
	}
	d := f.Policy.CheckPath(policy.OpWrite, "/srv/agent/work/secrets/token", "")
	fmt.Println(d.Allowed, d.Rule)
	d = f.Policy.CheckPath(policy.OpWrite, "/srv/agent/work/main.go", "")
	fmt.Println(d.Allowed, d.Rule)
	// Output:
	// false protected "secrets" (agent.toml:4)
	// true write root "/srv/agent/work" (agent.toml:3)
}

func ExampleParse_errors() {
	doc := `[fs]
write_root = ["/srv/agent/work"]
protected = ["secrets", 7]

[modes]
net = "warm"
`
	_, err := policyfile.Parse("agent.toml", []byte(doc))
	fmt.Println(err)
	// Output:
	// policy: 3 problems:
	// 	agent.toml:2:1: fs.write_root: unknown key (did you mean "write_roots"?)
	// 	agent.toml:3:25: fs.protected[1]: expected a string, got an integer
	// 	agent.toml:6:7: modes.net: unknown mode "warm": want "enforce", "warn" or "off" (did you mean "warn"?)
}

// swapTarget stands in for *audit.Guard, which implements policyfile.Swapper.
type swapTarget struct{ p atomic.Pointer[policy.Policy] }

func (s *swapTarget) SetPolicy(_ context.Context, p *policy.Policy) error {
	s.p.Store(p)
	return nil
}

func ExampleWatch() {
	dir, _ := os.MkdirTemp("", "policy-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "policy.toml")
	os.WriteFile(path, []byte("[fs]\nwrite_roots = [\"/srv/agent/work\"]\n"), 0o600)

	var guard swapTarget // an *audit.Guard in a real host
	w, err := policyfile.Watch(path, &guard,
		policyfile.WithOnError(func(err error) { fmt.Println("reload rejected:", err) }))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	fmt.Println(guard.p.Load().CheckPath(policy.OpWrite, "/srv/agent/work/x", "").Allowed)
	// Output:
	// true
}
