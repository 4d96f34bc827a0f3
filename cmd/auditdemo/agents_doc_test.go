package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
)

// TestAgentsDocCheckOutput keeps the `auditdemo check` output shown in
// docs/agents.md true: the same profiles, expanded on this machine, print
// the same section. The page shows a machine with git's exec path in
// /usr/lib/git-core, Go in /usr/local/go on linux/amd64 and gcc 12 in
// /usr/bin (Debian 12); elsewhere the test says so and skips.
func TestAgentsDocCheckOutput(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "<!-- check-output -->\n```text\n")
	want, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/agents.md has no check-output block")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "agent.toml")
	text := "use = [\"git\", \"go\"]\n\n[fs]\nwrite_roots = [\"" + dir + "\"]\n\n[exec]\ncache_dir = \"" + dir + "/cache\"\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := policyfile.Load(file)
	if err != nil {
		t.Skipf("git or go missing: %v", err)
	}
	for _, it := range p.ProfileItems() {
		if it.Kind == policy.ProfileHelperDir && it.Value != "/usr/lib/git-core" && it.Value != "/usr/local/go/pkg/tool/linux_amd64" &&
			it.Value != "/usr/lib/gcc/x86_64-linux-gnu/12" {
			t.Skipf("docs/agents.md shows another layout (this machine: %s from %s)", it.Value, it.From)
		}
	}
	r := cli(t, "check", "--policy", file)
	if r.code != 0 {
		t.Fatalf("check: %v", r)
	}
	_, got, ok := strings.Cut(r.stdout, "toolchain profiles")
	got, _, _ = strings.Cut(got, "\n\n")
	got = strings.ReplaceAll("toolchain profiles"+got+"\n", dir, "/srv/agent")
	if got != want {
		t.Errorf("docs/agents.md check output is stale; this machine prints:\n%s\nthe page shows:\n%s", got, want)
	}
}
