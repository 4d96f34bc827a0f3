package policyfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
)

// TestCredentialsAndDependencyTrees: fs.credentials are protected outside
// dependency trees, fs.dependency_trees add to the built-in ones, and a
// workspace layer cannot add a dependency tree (it would widen the
// operator's).
func TestCredentialsAndDependencyTrees(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	op := filepath.Join(dir, "op.toml")
	text := "[fs]\nwrite_roots = [\"" + work + "\"]\ncredentials = [\"*.secret\"]\ndependency_trees = [\"third_party\"]\n"
	if err := os.WriteFile(op, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := policyfile.Load(op)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		allowed bool
	}{
		{"db.secret", false},
		{"third_party/lib/db.secret", true},
		{"node_modules/x/db.secret", true},
		{"third_party/.bashrc", false},
		{"third_party/key.pem", true},
		{"key.pem", false},
	}
	for _, tt := range tests {
		d := p.CheckPath(policy.OpWrite, filepath.Join(work, tt.path), "")
		if d.Allowed != tt.allowed {
			t.Errorf("%s: allowed=%v (%v), want %v", tt.path, d.Allowed, d.Rule, tt.allowed)
		}
		if !d.Allowed && tt.path == "db.secret" && (d.Rule.Class != policy.ClassCredential || !strings.HasSuffix(d.Rule.Source, "op.toml:3")) {
			t.Errorf("%s: rule %v class %v", tt.path, d.Rule, d.Rule.Class)
		}
	}
	ws := filepath.Join(dir, "ws.toml")
	if err := os.WriteFile(ws, []byte("[fs]\ncredentials = [\"*.token\"]\ndependency_trees = [\"src\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = policyfile.LoadLayers(op, ws)
	if err == nil || !strings.Contains(err.Error(), "cannot add dependency trees") {
		t.Fatalf("a workspace dependency tree: %v", err)
	}
	if err := os.WriteFile(ws, []byte("[fs]\ncredentials = [\"*.token\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := policyfile.LoadLayers(op, ws)
	if err != nil {
		t.Fatal(err)
	}
	if d := f.Policy.CheckPath(policy.OpWrite, filepath.Join(work, "a.token"), ""); d.Allowed || d.Rule.Class != policy.ClassCredential {
		t.Errorf("a workspace credential: %+v", d)
	}
}
