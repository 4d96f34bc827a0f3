package policy_test

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
)

// TestPolicyJSONRoundTrip: a policy encoded and rebuilt decides every
// question the same way and names the same rule with the same provenance,
// for code-built and file-loaded policies alike.
func TestPolicyJSONRoundTrip(t *testing.T) {
	home := t.TempDir()
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "repo/.git/hooks"), 0o755))
	code, err := policy.New(policy.Spec{
		WriteRoots: []string{root, "~/work", "."},
		ReadDeny:   []string{"~/.ssh", "*.pem"},
		Protected:  []string{"secrets"},
		Home:       home,
		Exec:       policy.ExecSpec{Rules: []policy.ExecRule{{Program: "/bin/sh"}, {Program: "/bin/rm", Deny: true}}},
		Net:        policy.NetSpec{Rules: []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{"8080"}, Source: "net.toml:3"}}},
	})
	must(err)
	toml := "[fs]\nwrite_roots = [\"" + root + "\"]\nprotected = [\"deploy.key\"]\n[[exec.allow]]\nprogram = \"/bin/sh\"\n"
	f, err := policyfile.Parse("policy.toml", []byte(toml))
	must(err)

	for name, p := range map[string]*policy.Policy{"code": code, "file": f.Policy} {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(p)
			must(err)
			var q *policy.Policy
			must(json.Unmarshal(b, &q))
			cwd := filepath.Join(root, "repo")
			paths := []string{filepath.Join(root, "x"), filepath.Join(root, "repo/.git/hooks/pre-push"),
				filepath.Join(home, ".ssh/id_rsa"), filepath.Join(root, "k.pem"), filepath.Join(home, "work/a"),
				filepath.Join(root, "secrets"), filepath.Join(root, "deploy.key"), "/etc/passwd", filepath.Join(cwd, "y")}
			for _, path := range paths {
				for _, op := range []policy.Op{policy.OpRead, policy.OpWrite} {
					a, b := p.CheckPath(op, path, cwd), q.CheckPath(op, path, cwd)
					if a.Allowed != b.Allowed || a.Rule.String() != b.Rule.String() || a.Tier != b.Tier {
						t.Errorf("%v %s: %v (%v) before, %v (%v) after", op, path, a.Allowed, a.Rule, b.Allowed, b.Rule)
					}
					// Hints keep the terms the policy was written in.
					if ha, hb := p.HintFor(a.Rule), q.HintFor(b.Rule); ha != hb {
						t.Errorf("%v %s: hint %q before, %q after", op, path, ha, hb)
					}
				}
			}
			for _, prog := range []string{"/bin/sh", "/bin/rm", "/bin/cat"} {
				a, b := p.CheckExec(prog, []string{prog}), q.CheckExec(prog, []string{prog})
				if a.Allowed != b.Allowed || a.Rule.String() != b.Rule.String() {
					t.Errorf("exec %s: %v (%v) before, %v (%v) after", prog, a.Allowed, a.Rule, b.Allowed, b.Rule)
				}
			}
			ip := netip.MustParseAddr("127.0.0.1")
			for _, port := range []uint16{8080, 9090} {
				a, b := p.CheckDial("tcp", "127.0.0.1", ip, port), q.CheckDial("tcp", "127.0.0.1", ip, port)
				if a.Allowed != b.Allowed || a.Rule.String() != b.Rule.String() {
					t.Errorf("dial :%d: %v (%v) before, %v (%v) after", port, a.Allowed, a.Rule, b.Allowed, b.Rule)
				}
			}
			if len(p.Rules()) != len(q.Rules()) {
				t.Errorf("%d rules before, %d after", len(p.Rules()), len(q.Rules()))
			}
		})
	}
}

func TestPolicyJSONRejectsUnknownKind(t *testing.T) {
	var p policy.Policy
	err := json.Unmarshal([]byte(`{"entries":[{"kind":200,"value":"/x"}]}`), &p)
	if err == nil {
		t.Fatal("an unknown entry kind was accepted")
	}
}
