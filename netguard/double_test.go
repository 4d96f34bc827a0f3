package netguard

import (
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// BenchmarkDoubleLookup is what the test-double hook adds to every dial
// of a guard without doubles: one context lookup and a nil map check.
func BenchmarkDoubleLookup(b *testing.B) {
	ctx := benchScope(b, []policy.NetRule{{CIDR: "127.0.0.1"}})
	for b.Loop() {
		if doubleOf(ctx) != nil {
			b.Fatal("a double")
		}
	}
}
