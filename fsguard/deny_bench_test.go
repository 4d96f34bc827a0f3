package fsguard_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// BenchmarkDeniedCreate measures what a denied Create costs the code that
// made it, beside a raw os.Create of an allowed file for scale. Each
// iteration runs a block of each side, the first side rotating from one
// iteration to the next, so both see the same machine load. The guard's
// logger is off at the denial's level and no Recorder is set, so nothing
// is logged: what remains is the decision, the error and its caller.
//
// Metrics: denied-ns and raw-ns are the per-call medians of the blocks;
// denied/raw is the median of the per-block ratios; denied-allocs and
// raw-allocs are each side's mean allocations per call.
func BenchmarkDeniedCreate(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	outside, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		b.Fatal(err)
	}
	pol, err := policy.New(policy.Spec{WriteRoots: []string{root}, Home: root})
	if err != nil {
		b.Fatal(err)
	}
	g, err := audit.New(pol, audit.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(release)
	gfs := fsguard.New(ctx, afero.NewOsFs())
	b.Cleanup(func() { gfs.Close() })
	allowed := filepath.Join(root, "allowed.txt")

	for _, bc := range []struct{ name, path string }{
		// No rule allows it: a soft denial, decided on the slow path.
		{"outside-root", filepath.Join(outside, "denied.txt")},
		// A protected name inside a write root: a hard denial the fast
		// path sees first.
		{"protected", filepath.Join(root, ".git", "config")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if _, err := gfs.Create(bc.path); !errors.Is(err, fs.ErrPermission) {
				b.Fatalf("Create(%s) = %v, want a denial", bc.path, err)
			}
			const block = 64
			sides := []*denySide{
				{name: "raw", call: func() {
					f, err := os.Create(allowed)
					if err != nil {
						b.Fatal(err)
					}
					f.Close()
				}},
				{name: "denied", call: func() {
					if _, err := gfs.Create(bc.path); err == nil {
						b.Fatal("denied create went ahead")
					}
				}},
			}
			var ms runtime.MemStats
			for i := 0; b.Loop(); i++ {
				for j := range sides {
					s := sides[(i+j)%len(sides)]
					runtime.ReadMemStats(&ms)
					before := ms.Mallocs
					t0 := time.Now()
					for range block {
						s.call()
					}
					d := time.Since(t0)
					runtime.ReadMemStats(&ms)
					s.mallocs += ms.Mallocs - before
					s.ns = append(s.ns, float64(d.Nanoseconds())/block)
				}
			}
			b.StopTimer()
			n := len(sides[0].ns)
			if n == 0 {
				return
			}
			for _, s := range sides {
				b.ReportMetric(denyMedian(s.ns), s.name+"-ns")
				b.ReportMetric(float64(s.mallocs)/float64(n*block), s.name+"-allocs")
			}
			r := make([]float64, n)
			for i := range r {
				r[i] = sides[1].ns[i] / sides[0].ns[i]
			}
			b.ReportMetric(denyMedian(r), "denied/raw")
		})
	}
}

type denySide struct {
	name    string
	call    func()
	ns      []float64 // per-call time of each block
	mallocs uint64
}

// denyMedian is the middle value of s (the mean of the two middle ones for
// an even count); s is left as it is.
func denyMedian(s []float64) float64 {
	s = slices.Clone(s)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
