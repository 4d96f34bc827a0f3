package landlock_test

import (
	"fmt"

	"github.com/auditguard/auditguard/procguard/landlock"
)

// The rights a ruleset grants, rendered as procguard reports them.
func ExampleAccessString() {
	fmt.Println(landlock.AccessString(landlock.ReadExec))
	fmt.Println(landlock.AccessString(landlock.ReadFile | landlock.WriteFile))
	// Output:
	// rx
	// rw
}

// Which rights an ABI can restrict: newer kernels handle more, and a
// ruleset built for them must not ask an older kernel for rights it lacks.
func ExampleHandledFS() {
	for _, abi := range []int{0, 1, 3} {
		h := landlock.HandledFS(abi)
		fmt.Printf("ABI %d: truncate handled %v, refer handled %v\n",
			abi, h&landlock.Truncate != 0, h&landlock.Refer != 0)
	}
	// Output:
	// ABI 0: truncate handled false, refer handled false
	// ABI 1: truncate handled false, refer handled false
	// ABI 3: truncate handled true, refer handled true
}
