//go:build !linux

package procguard

// Exited: StartHost needs the sandbox, which is Linux-only.
func (h *HostProcess) Exited() bool { return true }
