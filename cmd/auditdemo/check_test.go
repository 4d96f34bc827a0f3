package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

func TestCheckExamplePolicy(t *testing.T) {
	work, pol := agentHome(t)
	r := cli(t, "check", "--policy", pol)
	if r.code != 0 {
		t.Fatalf("check of a valid policy: %v", r)
	}
	// Every configured rule is listed with its file:line.
	wantAll(t, "check output", r.stdout,
		pol+": valid",
		"fs    enforce", "exec  enforce", "net   enforce",
		`write root "~/work"`, "agent.toml:16",
		`protected "secrets" (runs)`, "agent.toml:17",
		".git/hooks", ".bashrc",
		"write roots (expanded, symbolic links resolved): "+work,
		`exec rule "echo"`, "agent.toml:24",
		`exec rule "deny rm -r"`, "agent.toml:37",
		`net rule "allow connect tcp 127.0.0.1/32 ports 1024-65535"`, "agent.toml:43",
		`net rule "deny connect tcp *.internal.example.com"`, "agent.toml:49",
		"path          /usr/bin:/bin", "timeout       30s",
	)
	for _, re := range []string{`exec rule "ls" +\S*agent\.toml:27`, `write root "~/work" +\S*agent\.toml:16`,
		`protected, runs: [a-z ,]+ \(\d+ entries\) +builtin`, `protected, credential: [a-z ,]+ \(\d+ entries\) +builtin\n.*\*\.pem`,
		`protected, git: [a-z. ]+ \(3 entries\) +builtin\n +\.git/config \.git/hooks \.git/commondir\n`,
		`dependency tree \(\d+ entries\) +builtin\n +node_modules`, `git metadata ".git" +builtin`} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("check output does not match %s:\n%s", re, r.stdout)
		}
	}
}

func TestCheckInvalidPolicy(t *testing.T) {
	agentHome(t)
	bad := filepath.Join(t.TempDir(), "bad.toml")
	data := "[modes]\nnet = \"warm\"\n\n[fs]\nwrite_root = [\"/srv/work\"]\n\n[[exec.allow]]\nprogam = \"ls\"\n"
	if err := os.WriteFile(bad, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "check", "--policy", bad)
	if r.code != 1 || r.stdout != "" {
		t.Fatalf("check of an invalid policy: %v", r)
	}
	wantAll(t, "check errors", r.stderr,
		bad+": 3 problems:",
		bad+`:2:7: modes.net: unknown mode "warm"`, `(did you mean "warn"?)`,
		bad+`:5:1: fs.write_root: unknown key (did you mean "write_roots"?)`,
		bad+`:8:1: exec.allow[0].progam: unknown key (did you mean "program"?)`,
	)

	if r := cli(t, "check", "--policy", filepath.Join(t.TempDir(), "missing.toml")); r.code != 1 {
		t.Errorf("check of a missing file: %v", r)
	}
	if r := cli(t, "check"); r.code != 2 {
		t.Errorf("check without --policy: %v", r)
	}
}
