package audit

import (
	"strconv"
	"strings"
)

// Child is what the kernel will hold a child process to, as procguard
// plans it before the start is decided (Event.Child, Record.Child): the
// facts a host can branch on, say to rescue a command in BeforeDeny only
// when it will run in the sandbox. procguard's Cmd.Confinement reports
// what was applied once the child started. nil on events that start no
// process.
type Child struct {
	// Dir is the resolved working directory the child starts in.
	Dir string
	// Sandbox: the namespace sandbox (its own mounts with read-deny masked
	// and protected names read-only, pid and network namespaces, seccomp
	// on file calls).
	Sandbox bool
	// Landlock is the Landlock domain the child gets; LandlockABI its ABI
	// version (0 with LandlockNone).
	Landlock    ChildLandlock
	LandlockABI int
	// Network is what network the child can reach.
	Network ChildNetwork
	// ExecJudged: every program the child's processes start is judged
	// when it starts (the sandbox traps exec and checks at the exec stop
	// that what ran is what was judged). Landlock's execute right is then
	// open (LandlockExecAny): it would only refuse what that judgement
	// allows.
	ExecJudged bool
	// Note says, for people, why a layer is missing or what it cannot
	// cover ("landlock=none (kernel without Landlock)").
	Note string
}

// ChildLandlock is the kind of Landlock domain a child runs in.
type ChildLandlock uint8

const (
	// LandlockNone: no domain (the policy turned it off, or the kernel
	// has none).
	LandlockNone ChildLandlock = iota
	// LandlockExecAllowed: writes only in the write roots, execute only
	// the programs the policy allows and this command was approved to run
	// (and their interpreters). The default.
	LandlockExecAllowed
	// LandlockExecAny: writes only in the write roots, execute anywhere
	// (ExecSpec.LandlockExecAny).
	LandlockExecAny
)

var childLandlockNames = [...]string{"none", "exec-allowed", "exec-any"}

func (l ChildLandlock) String() string {
	if int(l) < len(childLandlockNames) {
		return childLandlockNames[l]
	}
	return "landlock(" + strconv.Itoa(int(l)) + ")"
}

// ChildNetwork is the network a child can reach.
type ChildNetwork uint8

const (
	// NetworkHost: the host's network, which the kernel does not filter:
	// the policy's net rules bind the guarded dialer, not this child
	// (ExecSpec.HostNetwork, or no sandbox on this host).
	NetworkHost ChildNetwork = iota
	// NetworkHostNoTCP: the host's network with TCP connect and bind
	// refused by Landlock (ExecSpec.DenyNetwork without the sandbox); UDP
	// and unix sockets are not covered.
	NetworkHostNoTCP
	// NetworkNone: an empty network namespace, loopback only.
	NetworkNone
	// NetworkForwarded: its own namespace where the loopback ports the
	// policy's net rules allow are forwarded to the host, each connection
	// decided; with any net rule, egress goes only through the guard's
	// proxy, which decides every request (HTTP_PROXY and friends).
	NetworkForwarded
)

var childNetworkNames = [...]string{"host", "host-no-tcp", "none", "forwarded"}

func (n ChildNetwork) String() string {
	if int(n) < len(childNetworkNames) {
		return childNetworkNames[n]
	}
	return "network(" + strconv.Itoa(int(n)) + ")"
}

// String renders the facts for records and logs:
// "sandbox; landlock=exec-allowed (abi 7); network=forwarded".
func (c *Child) String() string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	if c.Sandbox {
		b.WriteString("sandbox; ")
	} else {
		b.WriteString("no sandbox; ")
	}
	b.WriteString("landlock=" + c.Landlock.String())
	if c.Landlock != LandlockNone {
		b.WriteString(" (abi " + strconv.Itoa(c.LandlockABI) + ")")
	}
	b.WriteString("; network=" + c.Network.String())
	if c.ExecJudged {
		b.WriteString("; exec=judged")
	}
	return b.String()
}
