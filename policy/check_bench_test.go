package policy

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkCheckPath measures the decision on an already resolved path with
// 1, 100 and 10,000 write roots and as many extra protected names. The cost
// must not grow with the count: compare the sub-benchmarks of one kind.
//
//   - write: a write inside a root, six components deep;
//   - depth5: the same, five components deep (the decision issue 16 sets a
//     target for);
//   - protected: a write denied by a protected name two components long.
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
			benchCheck(b, p, target, true)
		})
		depth5 := fmt.Sprintf("/srv/auditguard-bench/root-%05d/src/handler.go", n/2)
		b.Run(fmt.Sprintf("depth5/n=%d", n), func(b *testing.B) {
			benchCheck(b, p, depth5, true)
		})
		denied := fmt.Sprintf("/srv/auditguard-bench/root-%05d/.git/hooks/pre-commit", n/2)
		b.Run(fmt.Sprintf("protected/n=%d", n), func(b *testing.B) {
			benchCheck(b, p, denied, false)
		})
	}
	// Glob-heavy policies: prefix and suffix globs whose literals have
	// 1, 8 and 64 distinct lengths, all sharing the first (or last) bytes
	// of the path's long final component so that no byte filter skips
	// them. None matches; the cost must not grow with the lengths.
	const comp = "handler_generated_by_the_protocol_compiler_for_the_bench.pb.go"
	for _, lengths := range []int{1, 8, 64} {
		spec := Spec{WriteRoots: []string{"/srv/auditguard-bench/root"}}
		for l := range lengths {
			spec.Protected = append(spec.Protected,
				"*"+strings.Repeat("z", l+1)+".go",
				"handler_"+strings.Repeat("z", l+1)+"*")
		}
		p, err := New(spec)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("globs/lengths=%d", lengths), func(b *testing.B) {
			benchCheck(b, p, "/srv/auditguard-bench/root/gen/"+comp, true)
		})
	}
}

// benchCheck decides a write on path, which must come out as allowed says.
// Besides the wall time it reports cpu-ns/op, the thread's CPU time per
// decision: on a shared machine the wall time also counts the time the
// benchmark waited for a core, the CPU time does not.
func benchCheck(b *testing.B, p *Policy, path string, allowed bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	start := threadCPU(b)
	for b.Loop() {
		if d := p.CheckPath(OpWrite, path, ""); d.Allowed != allowed {
			b.Fatal(d)
		}
	}
	b.ReportMetric(float64(threadCPU(b)-start)/float64(b.N), "cpu-ns/op")
}
