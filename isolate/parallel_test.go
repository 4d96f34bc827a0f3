package isolate_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/auditguard/auditguard/isolate"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// TestParallelThenCancel: 50 calls at once all return their results; then
// 50 calls that would sleep a minute are canceled together: each returns
// Canceled, no process of any call survives, and the host is back to its
// descriptors and goroutines of before. The pools of ready trampolines
// and ready children are off here: an idle trampoline holds two
// descriptors and a goroutine, a ready child a few more, by design.
func TestParallelThenCancel(t *testing.T) {
	n := 50
	if raceEnabled {
		n = 8
	}
	e := setup(t)
	sandbox.SetPrewarm(false)
	defer sandbox.SetPrewarm(true)
	isolate.SetPool(false)
	defer isolate.SetPool(true)
	// Let what the first calls started for good (keeper threads, cgroup
	// discovery) settle before counting.
	if err := isolate.Call(e.callCtx(t), "echo", "warm", nil); err != nil {
		t.Fatal(err)
	}
	fds, gs := fdCount(t), runtime.NumGoroutine()

	var wg sync.WaitGroup
	errs := make([]error, n)
	outs := make([]string, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = isolate.Call(e.callCtx(t), "echo", "x", &outs[i], isolate.Timeout(2*time.Minute))
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || outs[i] != "echo: x" {
			t.Fatalf("call %d: %q %v", i, outs[i], errs[i])
		}
	}

	ctx, cancel := context.WithCancel(e.ctx)
	confs := make([]procguard.Confinement, n)
	started := make(chan struct{}, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = isolate.Call(ctx, "sleep", time.Minute, nil, isolate.ReportTo(&confs[i]),
				isolate.Timeout(3*time.Minute), isolate.Stdout(signalOnce(started)))
		})
	}
	// Cancel once every call is running (each child says so on stdout).
	deadline := time.After(2 * time.Minute)
	for range n {
		select {
		case <-started:
		case <-deadline:
			t.Fatal("the calls did not all start")
		}
	}
	cancel()
	wg.Wait()
	for i := range n {
		var ie *isolate.Error
		if !errors.As(errs[i], &ie) || ie.Kind != isolate.Canceled || !errors.Is(errs[i], context.Canceled) {
			t.Errorf("call %d: %v, want Canceled", i, errs[i])
		}
		noSurvivors(t, &confs[i])
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("children left: %v", kids)
	}
	if after := fdCount(t); after != fds {
		t.Errorf("descriptors: %d before, %d after", fds, after)
	}
	// Goroutines that ended may take a moment to be counted out.
	end := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > gs && time.Now().Before(end) {
		time.Sleep(20 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > gs {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after\n%s", gs, after, buf[:runtime.Stack(buf, true)])
	}
}

// signalOnce is a writer that signals c on its first write.
func signalOnce(c chan<- struct{}) *onceWriter { return &onceWriter{c: c} }

type onceWriter struct {
	once sync.Once
	c    chan<- struct{}
}

func (w *onceWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { w.c <- struct{}{} })
	return len(p), nil
}
