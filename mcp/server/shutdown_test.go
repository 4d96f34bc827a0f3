package server_test

import (
	"os"
	"testing"

	"github.com/auditguard/auditguard/procguard"
)

// TestMain removes the cgroups this test binary's commands used once the
// tests are done (procguard.Shutdown), so a run leaves none behind.
func TestMain(m *testing.M) {
	code := m.Run()
	procguard.Shutdown()
	os.Exit(code)
}
