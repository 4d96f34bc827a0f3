package policy_test

import (
	"fmt"
	"path/filepath"

	"github.com/auditguard/auditguard/policy"
)

func ExamplePolicy_CheckExec() {
	p, err := policy.New(policy.Spec{Exec: policy.ExecSpec{Rules: []policy.ExecRule{
		{Program: "git", Args: []string{"status"}},
		{Program: "git", Args: []string{"push"}, Deny: true, Source: "team.toml:3"},
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	found, _ := policy.LookPath("git", p.ExecPath())
	git, _ := filepath.EvalSymlinks(found)
	for _, argv := range [][]string{{"git", "status", "-s"}, {"git", "-C", "repo", "push"}, {"git", "log"}} {
		d := p.CheckExec(git, argv)
		fmt.Println(argv, d.Allowed, d.Tier, d.Rule)
	}
	// Output:
	// [git status -s] true none exec rule "git status" (code)
	// [git -C repo push] false hard exec rule "deny git push" (team.toml:3)
	// [git log] false soft exec rule "programs need an exec rule" (builtin)
}
