package procguard

import (
	"os"
	"testing"
)

// cgroupHostMain, when set (cgroup_linux_test.go), runs this test binary
// as a tiny host instead of the tests when the environment asks for it:
// it returns the exit code, or -1 when the binary is not such a host.
var cgroupHostMain func() int

// TestMain: this test binary is a host that runs commands, so it calls
// Shutdown once the tests are done and leaves no pooled cgroup behind.
func TestMain(m *testing.M) {
	if cgroupHostMain != nil {
		if code := cgroupHostMain(); code >= 0 {
			os.Exit(code)
		}
	}
	code := m.Run()
	Shutdown()
	os.Exit(code)
}
