//go:build amd64 || arm64

package seccomp

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkTrappedOpen compares openat(O_CREAT|O_WRONLY) of an existing
// file made raw (an unfiltered thread) and trapped (a filtered thread,
// Serve answering with the test policy, or for "floor" answering every
// call at once with "go on", Handler.Floor: the round trip alone). Each
// iteration makes a block of each, alternating which goes first, so both
// see the same load; ns/op is the iteration (both blocks and two channel
// hand-offs). The metrics are per open.
func BenchmarkTrappedOpen(b *testing.B) {
	for _, floor := range []bool{false, true} {
		name := "supervised"
		if floor {
			name = "floor"
		}
		b.Run(name, func(b *testing.B) { benchTrappedOpen(b, floor) })
	}
}

func benchTrappedOpen(b *testing.B, floor bool) {
	const block = 64
	name := realTempDir(b) + "/f"
	if err := os.WriteFile(name, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	openBlock := func() (time.Duration, error) {
		start := time.Now()
		for range block {
			if err := openClose(unix.AT_FDCWD, name, unix.O_CREAT|unix.O_WRONLY); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	type result struct {
		d   time.Duration
		err error
	}
	reqs := make(chan struct{})
	res := make(chan result)
	listener, done := filtered(b, Filter{}, func() {
		for range reqs {
			d, err := openBlock()
			res <- result{d, err}
		}
	})
	stop := newStopper()
	wait := serveWith(b, listener, stop, Handler{Decide: protect, Floor: floor})
	defer func() {
		close(reqs)
		waitDone(b, done, stop)
		if err := wait(); err != nil {
			b.Error(err)
		}
	}()
	trapped := func() time.Duration {
		reqs <- struct{}{}
		r := <-res
		if r.err != nil {
			b.Fatal(r.err)
		}
		return r.d
	}
	raw := func() time.Duration {
		d, err := openBlock()
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	var rawT, trapT time.Duration
	n := 0
	for b.Loop() {
		if n%2 == 0 {
			rawT += raw()
			trapT += trapped()
		} else {
			trapT += trapped()
			rawT += raw()
		}
		n++
	}
	opens := float64(n * block)
	b.ReportMetric(float64(rawT.Nanoseconds())/opens, "raw-ns/open")
	b.ReportMetric(float64(trapT.Nanoseconds())/opens, "trapped-ns/open")
	b.ReportMetric(float64(trapT)/float64(rawT), "ratio")
}
