package main

import (
	"fmt"

	"github.com/auditguard/auditguard/policy"
)

// decisionRow is the pure decision on a 5-component path
// (Policy.CheckPath), for a write and for a read, with the checks-on fs
// policy: one write root, a read-deny path and a read-deny name pattern.
// The policy is built on names that need not exist (CheckPath touches
// nothing), so the path has 5 components wherever the temp dir is.
func decisionRow() (*row, error) {
	const (
		root = "/srv/bench/project"
		path = root + "/src/main.go" // srv, bench, project, src, main.go
	)
	pol, err := policy.New(policy.Spec{
		WriteRoots: []string{root}, Home: "/srv/bench",
		ReadDeny: []string{"~/.ssh", "*.pem"},
	})
	if err != nil {
		return nil, err
	}
	check := func(op policy.Op) func(int) error {
		return func(int) error {
			if d := pol.CheckPath(op, path, root); !d.Allowed {
				return fmt.Errorf("%s %s denied: %v", op, path, d.Rule)
			}
			return nil
		}
	}
	t := func(side string) target {
		return target{side: side, maxNs: 60, hasAllocs: true, text: "<= 60 ns, 0 allocs"}
	}
	return &row{
		group: "policy", call: "CheckPath, 5-component path",
		sides: []*side{
			{name: "write", op: check(policy.OpWrite), note: "pol.CheckPath(policy.OpWrite, " + path + "): one write root, read-deny \"~/.ssh\" and \"*.pem\""},
			{name: "read", op: check(policy.OpRead)},
		},
		maxN:    100000,
		targets: []target{t("write"), t("read")},
	}, nil
}
