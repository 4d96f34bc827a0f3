package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/auditguard/auditguard/policy"
)

// sideLstat is the decision row's base: one raw lstat system call.
const sideLstat = "raw lstat"

// decisionRow is the pure decision on a 5-component path
// (Policy.CheckPath), for a write and for a read, with the checks-on fs
// policy: one write root, a read-deny path and a read-deny name pattern.
// The policy is built on names that need not exist (CheckPath touches
// nothing), so the path has 5 components wherever the temp dir is.
//
// Its base side is one raw lstat(2) of a real file whose absolute path
// also has 5 components where the temp dir allows it (more where the temp
// dir alone is deeper): what a decision is measured against is the
// cheapest system call a guarded file call makes, so the ratio says how
// much of a call the decision is on this machine.
func decisionRow(e *env) (*row, error) {
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
	lstat, err := lstatTarget(e)
	if err != nil {
		return nil, err
	}
	t := func(side string) []target {
		return []target{
			{side: side, maxNs: 60, hasAllocs: true, text: "<= 60 ns, 0 allocs"},
			{side: side, vs: sideLstat, maxRatio: 0.05, text: "<= 0.05x raw lstat"},
		}
	}
	return &row{
		group: "policy", call: "CheckPath, 5-component path", base: sideLstat,
		sides: []*side{
			rawLstat(lstat),
			{name: "write", op: check(policy.OpWrite), note: "pol.CheckPath(policy.OpWrite, " + path + "): one write root, read-deny \"~/.ssh\" and \"*.pem\""},
			{name: "read", op: check(policy.OpRead)},
		},
		maxN:    100000,
		targets: append(t("write"), t("read")...),
	}, nil
}

// lstatTarget makes a file under the temp dir whose absolute path has 5
// components, adding directories below the temp dir as needed (one file
// right below it when the temp dir alone has 4 or more), and returns its
// path.
func lstatTarget(e *env) (string, error) {
	dir := e.dir
	have := len(strings.Split(strings.Trim(e.dir, "/"), "/"))
	if have < 4 {
		// lstat, then d<k> until the file's path has 5 components.
		rel := []string{"lstat"}
		for k := have + 2; k < 5; k++ {
			rel = append(rel, fmt.Sprintf("d%d", k))
		}
		var err error
		if dir, err = e.mkdir(rel...); err != nil {
			return "", err
		}
	}
	name := filepath.Join(dir, "main.go")
	return name, os.WriteFile(name, nil, 0o644)
}
