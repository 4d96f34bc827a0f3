package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
)

// TestDefaultPolicyToolOptions: every option the tool tables list for a
// program the default policy allows is either judged safe (allowed) or
// denied hard, in each of its spellings. Nothing runs.
func TestDefaultPolicyToolOptions(t *testing.T) {
	work := t.TempDir()
	doc := strings.NewReplacer("{{workspace}}", work, "{{demo_port}}", "8080").Replace(defaultPolicy)
	file, err := policyfile.Parse("default-policy.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	p := file.Policy
	checked, denied := 0, 0
	for _, r := range p.Exec().Rules {
		if r.Deny {
			continue
		}
		tool := policy.ToolNamed(r.Program)
		if tool == nil {
			t.Logf("%s: no option table", r.Program)
			continue
		}
		prog, err := policy.LookPath(r.Program, p.ExecPath())
		if err != nil {
			t.Skipf("%s not installed", r.Program)
		}
		prog, _ = filepath.EvalSymlinks(prog)
		for _, sec := range tool.AllSections() {
			// The section the rule's arguments select (git log, git diff);
			// the tool's own options for the others.
			prefix := r.Args
			switch {
			case tool.Style == policy.StyleGit && sec == tool.Main:
			case tool.Style == policy.StyleGit && (len(r.Args) == 0 || sec.Name != r.Args[0]):
				continue
			}
			for _, o := range sec.Options {
				for _, sp := range o.Spellings() {
					args := append([]string{r.Program}, prefix...)
					if tool.Style == policy.StyleGit && sec == tool.Main {
						args = []string{r.Program}
					}
					w := sp
					v := "v"
					if o.JudgesConfigKey() {
						v = "core.pager=v" // git -c is judged by its key: a key that runs a program
					}
					if o.Arg == policy.ArgRequired {
						args = append(args, w, v)
					} else {
						args = append(args, w)
					}
					if tool.Style == policy.StyleGit && sec == tool.Main {
						args = append(args, prefix...)
					}
					d := p.CheckExec(prog, args)
					checked++
					switch {
					case o.Risk == policy.RiskRuns || o.Risk == policy.RiskConfig:
						denied++
						if d.Allowed || d.Tier != policy.TierHard {
							t.Errorf("%q: %v allowed=%v tier %v, want a hard denial", args, o.Risk, d.Allowed, d.Tier)
						}
					case tool.Style == policy.StyleGit && sec == tool.Main:
						// git's global options come before the command, so
						// an allow rule for "git log" does not match them:
						// a soft "no rule" is right, a built-in denial not.
						if !d.Allowed && d.Tier != policy.TierSoft {
							t.Errorf("%q: safe option denied by %v", args, d.Rule)
						}
					case !d.Allowed:
						t.Errorf("%q: safe option denied by %v", args, d.Rule)
					}
				}
			}
		}
	}
	if checked < 100 || denied == 0 {
		t.Fatalf("checked %d spellings, %d denied: the default policy allows no tool with a table?", checked, denied)
	}
	t.Logf("checked %d spellings, %d denied", checked, denied)
}
