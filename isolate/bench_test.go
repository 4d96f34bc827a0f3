package isolate_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/auditguard/auditguard/isolate"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// jeevesagent documents 100-300 ms per call for its SubprocessSandbox (a
// fresh Python interpreter per tool call; jeevesagent docs, "Sandboxing").
const jeevesLow, jeevesHigh = 100 * time.Millisecond, 300 * time.Millisecond

func echo(_ context.Context, s string) (string, error) { return "echo: " + s, nil }

// BenchmarkCall compares a direct call of a trivial function with the
// same function isolated (a sandboxed child ready in isolate's pool, the
// steady state of a host whose calls are not all made at once), and, as the floor of any sandboxed start on this machine,
// procguard running /bin/true in the same sandbox, in one loop: each
// iteration makes one of each, the first side rotating. Metrics are
// medians: direct-ns, isolated-ms, sandbox-true-ms, isolated/direct
// (ratio), isolated over the sandboxed /bin/true, and the isolated call as
// a fraction of jeevesagent's documented 100 ms and 300 ms. ns/op is the
// sum of the sides.
func BenchmarkCall(b *testing.B) {
	e := setup(b)
	ctx := context.Background()
	var direct, isolated, sbTrue []time.Duration
	i := 0
	for b.Loop() {
		sides := []func(){
			func() {
				t0 := time.Now()
				out, err := echo(ctx, "x")
				direct = append(direct, time.Since(t0))
				if err != nil || out != "echo: x" {
					b.Fatal(out, err)
				}
			},
			func() {
				var out string
				t0 := time.Now()
				err := isolate.Call(e.ctx, "echo", "x", &out)
				isolated = append(isolated, time.Since(t0))
				if err != nil || out != "echo: x" {
					b.Fatal(out, err)
				}
			},
			func() {
				c := procguard.CommandContext(e.ctx, "/bin/true")
				c.Dir = e.dir
				t0 := time.Now()
				err := c.Run()
				sbTrue = append(sbTrue, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
			},
		}
		// Between sides, untimed: let the pools' next trampoline and
		// child start outside the timed calls.
		for k := range sides {
			sides[(k+i)%len(sides)]()
			_ = sandbox.Prewarm(false)
			if err := isolate.Prewarm(e.ctx, "echo"); err != nil {
				b.Fatal(err)
			}
		}
		i++
	}
	d, iso, st := median(direct), median(isolated), median(sbTrue)
	b.ReportMetric(float64(st.Microseconds())/1000, "sandbox-true-ms")
	b.ReportMetric(float64(iso)/float64(max(st, 1)), "isolated/sandbox-true")
	b.ReportMetric(float64(d.Nanoseconds()), "direct-ns")
	b.ReportMetric(float64(iso.Microseconds())/1000, "isolated-ms")
	b.ReportMetric(float64(iso)/float64(max(d, 1)), "ratio")
	b.ReportMetric(float64(iso)/float64(jeevesLow), "of-jeeves-100ms")
	b.ReportMetric(float64(iso)/float64(jeevesHigh), "of-jeeves-300ms")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkCallBackToBack makes calls one right after the other, so each
// waits for the child the previous one left starting: the cost of a host
// that calls without pause. cold is the same with the pool of ready
// children off: a sandbox and a start of the binary per call.
func BenchmarkCallBackToBack(b *testing.B) {
	e := setup(b)
	for _, pooled := range []bool{true, false} {
		name := "pooled"
		if !pooled {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			isolate.SetPool(pooled)
			defer isolate.SetPool(true)
			var ds []time.Duration
			for b.Loop() {
				var out string
				t0 := time.Now()
				if err := isolate.Call(e.ctx, "echo", "x", &out); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			b.ReportMetric(float64(median(ds).Microseconds())/1000, "median-ms")
		})
	}
}
