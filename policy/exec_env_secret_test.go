package policy_test

import (
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// TestSecretHeuristic: names holding a secret word are secret-looking,
// ignoring case; identities whose name holds "AUTHOR" are not.
func TestSecretHeuristic(t *testing.T) {
	tests := []struct {
		name   string
		secret bool
	}{
		{"GIT_AUTHOR_NAME", false},
		{"GIT_AUTHOR_EMAIL", false},
		{"GIT_AUTHOR_DATE", false},
		{"GIT_COMMITTER_NAME", false},
		{"GIT_COMMITTER_EMAIL", false},
		{"git_author_name", false},
		{"HG_AUTHOR_NAME", false},
		{"PKG_AUTHOR_EMAIL", false},
		{"AUTHOR", false},
		{"CI", false},
		{"LANG", false},
		{"GIT_AUTHOR_TOKEN", true},   // a secret word besides AUTHOR
		{"AUTHOR_AUTH_HEADER", true}, // AUTH on its own after AUTHOR
		{"GH_TOKEN", true},
		{"OAUTH_CLIENT", true},
		{"BASIC_AUTH", true},
		{"AUTHORIZATION", true}, // an HTTP credential, not an author
		{"aws_secret_access_key", true},
		{"API_KEY", true},
		{"DB_PASSWORD", true},
		{"SESSION_ID", true},
	}
	for _, tc := range tests {
		if got := policy.IsSecretVar(tc.name); got != tc.secret {
			t.Errorf("IsSecretVar(%s) = %v, want %v", tc.name, got, tc.secret)
		}
	}
}

// TestExecEnvIdentityPasses: a commit identity set in Cmd.Env or named by
// a prefix pattern reaches git; a secret named only by a prefix pattern is
// dropped and reported by name.
func TestExecEnvIdentityPasses(t *testing.T) {
	p, err := policy.New(policy.Spec{Exec: policy.ExecSpec{Env: []string{"GIT_AUTHOR_*", "GIT_COMMITTER_*", "MY_*"}}})
	if err != nil {
		t.Fatal(err)
	}
	host := []string{"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=C", "MY_TOKEN=t", "MY_DIR=d"}
	env, dropped := p.ExecEnv(policy.ExecEnvInput{Host: host, Home: "/h", Tmp: "/t"})
	got := strings.Join(env, " ")
	for _, want := range []string{"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=C", "MY_DIR=d"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s missing from %s", want, got)
		}
	}
	if strings.Contains(got, "MY_TOKEN") || strings.Join(dropped, ",") != "MY_TOKEN" {
		t.Errorf("env %s, dropped %v: want MY_TOKEN dropped and reported", got, dropped)
	}
	set := []string{"GIT_AUTHOR_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.com"}
	env, dropped = p.ExecEnv(policy.ExecEnvInput{Host: nil, Set: set, Home: "/h", Tmp: "/t"})
	if got := strings.Join(env, " "); !strings.Contains(got, "GIT_AUTHOR_NAME=Agent") || !strings.Contains(got, "GIT_COMMITTER_EMAIL=agent@example.com") || len(dropped) != 0 {
		t.Errorf("set identity: env %s, dropped %v", got, dropped)
	}
}
