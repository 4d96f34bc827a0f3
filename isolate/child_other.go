//go:build !linux

package isolate

// Outside Linux there is no sandbox, so no child: Call fails with Setup.

const childArg0 = "auditguard-isolate-call"

var child struct {
	active bool
	name   string
}

func serve(*entry) int { return 3 }
