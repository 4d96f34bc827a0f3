package policyfile

import (
	"strings"
	"testing"
)

// TestExecSandboxSwitches: the sandbox switches load from [exec], and a
// workspace layer may only make them stricter.
func TestExecSandboxSwitches(t *testing.T) {
	e := newLayerEnv(t, "[fs]\nwrite_roots = [\"$WORK\"]\n\n[exec]\nno_sandbox = true\nhost_network = true\n")
	f, err := e.load(t, "[exec]\nno_sandbox = false\nhost_network = false\nrequire_sandbox = true\n")
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Policy.Exec(); s.NoSandbox || s.HostNetwork || !s.RequireSandbox {
		t.Fatalf("narrowed: %+v", s)
	}
	e = newLayerEnv(t, "[fs]\nwrite_roots = [\"$WORK\"]\n\n[exec]\nrequire_sandbox = true\n")
	for _, widen := range []string{"no_sandbox = true", "host_network = true", "require_sandbox = false"} {
		_, err := e.load(t, "[exec]\n"+widen+"\n")
		key := "exec." + strings.Fields(widen)[0]
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: a workspace widened the sandbox: %v", widen, err)
		}
	}
}
