package policy

import (
	"fmt"
	"testing"
)

// BenchmarkCheckPath measures the decision on an already resolved path with
// 1, 100 and 10,000 write roots and as many extra protected names. The cost
// must not grow with the count: compare the three sub-benchmarks.
func BenchmarkCheckPath(b *testing.B) {
	for _, n := range []int{1, 100, 10000} {
		spec := Spec{}
		for i := range n {
			spec.WriteRoots = append(spec.WriteRoots, fmt.Sprintf("/srv/auditguard-bench/root-%05d", i))
			spec.Protected = append(spec.Protected, fmt.Sprintf("generated-%05d.lock", i))
		}
		p, err := New(spec)
		if err != nil {
			b.Fatal(err)
		}
		target := fmt.Sprintf("/srv/auditguard-bench/root-%05d/src/pkg/handler.go", n/2)
		b.Run(fmt.Sprintf("write/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d := p.CheckPath(OpWrite, target, ""); !d.Allowed {
					b.Fatal(d)
				}
			}
		})
		denied := fmt.Sprintf("/srv/auditguard-bench/root-%05d/.git/hooks/pre-commit", n/2)
		b.Run(fmt.Sprintf("protected/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d := p.CheckPath(OpWrite, denied, ""); d.Allowed {
					b.Fatal(d)
				}
			}
		})
	}
}
