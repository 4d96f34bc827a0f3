package procguard

// Exited reports, without reaping it, whether the program's sandbox has
// ended (a ready child that died waiting is not handed to a call).
func (h *HostProcess) Exited() bool { return h.sup.leaderExited() }
