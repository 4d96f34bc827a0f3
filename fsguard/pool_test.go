package fsguard_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// TestKeptEventsStay checks that an event an OnCall callback keeps is not
// changed by later calls: Stat, Lstat and OpenFile recycle their calls,
// so the pipeline must be shown an event of its own (handing it the
// call's would fail this test: the kept event would name a later file).
func TestKeptEventsStay(t *testing.T) {
	dir := tempDir(t)
	names := []string{"a.txt", "b.txt", "c.txt"}
	for _, n := range names {
		write(t, filepath.Join(dir, n), n)
	}
	var kept []*audit.Event
	ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{dir}, Home: dir, ReadDeny: []string{"*.pem"}},
		audit.WithOnCall(func(_ context.Context, ev *audit.Event) audit.Verdict {
			kept = append(kept, ev)
			return audit.Continue
		}))
	f := fsguard.New(ctx, afero.NewOsFs())
	defer f.Close()
	var want []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := f.Stat(p); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.LstatIfPossible(p); err != nil {
			t.Fatal(err)
		}
		fl, err := f.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		fl.Close()
		want = append(want, p, p, p)
	}
	if len(kept) != len(want) {
		t.Fatalf("OnCall saw %d events, want %d", len(kept), len(want))
	}
	for i, ev := range kept {
		if ev.Target != want[i] || ev.Resolved != want[i] {
			t.Errorf("kept event %d names %q (resolved %q), want %q", i, ev.Target, ev.Resolved, want[i])
		}
	}
}
