package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestTable runs the whole table with one round of two ops per side (the
// exec rows: one start per side, then one op of 30 starts and one of 80)
// and 100 write roots instead of 10,000 (building that policy takes
// seconds under the race detector), so a change that breaks a side, a
// row's set-up or the printing fails here. It asserts nothing about the
// times: performance targets live only in the table.
func TestTable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and servers; -short skips it")
	}
	parent := t.TempDir()
	var out bytes.Buffer
	// The whole table, workload rows included (a go build, a shell loop
	// of short programs), took about two minutes under -race on the
	// loaded 2-core VM, two and a half to three and a half with the
	// exec batch rows: the bound leaves room for that, well inside go
	// test's own 10 minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	err := runTable(ctx, &out, options{cfg: config{N: 2, Rounds: 1}, parent: parent, roots: 100})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	table := out.String()
	for _, want := range []string{
		"fs Create+Write+Close", "fs Open+Read+Close", "fs Stat", "fs Remove", "fs Rename",
		"fs Mkdir", "fs ReadDir", "fs denied Create", "fs Create+Write+Close, 100 write roots",
		"policy CheckPath, 5-component path", "net loopback TCP dial+close", "net HTTP GET",
		"exec /bin/true", "exec /bin/true, 30 back to back", "exec /bin/true, 8 in parallel", "<= 4x raw", "<= 0.67x bwrap",
		"checks on", "BasePathFs", "os.Root", "<= 1.10x raw", "<= 0.75x bwrap",
		// Issue 27's in-process targets, each against its own base side.
		"<= 1.25x floor", "raw create+write+close", "<= 0.35x raw", "raw lstat", "<= 0.05x raw lstat",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the table has no %q", want)
		}
	}
	if strings.Contains(table, "ERROR") {
		t.Error("a row failed")
	}
	// The rows were measured as asked: one round of two ops.
	if !strings.Contains(table, "1x2") {
		t.Error("no row ran the round of two ops asked for")
	}
	left, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("the table left %d entries in its temp dir's parent: %v", len(left), left)
	}
}

// TestOnly runs one group, fast, and checks the others are left out.
func TestOnly(t *testing.T) {
	var out bytes.Buffer
	if err := runTable(context.Background(), &out, options{cfg: config{N: 2, Rounds: 2}, parent: t.TempDir(), only: []string{"policy"}}); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "policy CheckPath") || strings.Contains(s, "fs Stat") || strings.Contains(s, "exec /bin/true") {
		t.Errorf("-only policy printed:\n%s", s)
	}
}

// TestMeasureRotates checks the interleaving itself: every side gets one
// sample per round, and the first side of a round rotates.
func TestMeasureRotates(t *testing.T) {
	var order []string
	mk := func(name string) *side {
		return &side{name: name, prep: func(int) error { order = append(order, name); return nil }, op: func(int) error { return nil }}
	}
	sides := []*side{mk("a"), mk("b"), mk("c")}
	n, rounds, err := measure(context.Background(), config{Rounds: 3}.withDefaults(), sides, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 || rounds != 3 {
		t.Fatalf("n, rounds = %d, %d; want 4, 3", n, rounds)
	}
	// One warm-up block each, then rounds starting at a, b, c.
	want := "a b c | a b c b c a c a b"
	if got := strings.Join(order[:3], " ") + " | " + strings.Join(order[3:], " "); got != want {
		t.Errorf("block order %q, want %q", got, want)
	}
	for _, s := range sides {
		if len(s.ns) != 3 || s.ops != 12 {
			t.Errorf("side %s: %d samples, %d ops; want 3, 12", s.name, len(s.ns), s.ops)
		}
	}
}

func TestMedianAndRatio(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	// Ratios pair the blocks of one round: a round where both sides were
	// slowed (the second) gives the same ratio as a calm one.
	g := &side{ns: []float64{2, 20, 2.2}}
	r := &side{ns: []float64{1, 10, 2}}
	if got := ratio(g, r); got != 2 {
		t.Errorf("ratio = %v, want 2", got)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{7: "7", 100: "100", 1000: "1,000", 10000: "10,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFmtDur(t *testing.T) {
	for _, tc := range []struct {
		ns   float64
		want string
	}{
		{42.4, "42.4 ns"}, {3110, "3.11 µs"}, {17000, "17.0 µs"}, {158000, "158 µs"},
		{5.36e6, "5.36 ms"}, {1.05e9, "1.05 s"},
	} {
		if got := fmtDur(tc.ns); got != tc.want {
			t.Errorf("fmtDur(%v) = %q, want %q", tc.ns, got, tc.want)
		}
	}
}

// TestLstatTarget checks the decision row's base: a real file whose
// absolute path has 5 components, below a shallow temp dir (os.MkdirTemp,
// /tmp/x) and a deeper one (t.TempDir), or one below a temp dir that has
// 4 or more already.
func TestLstatTarget(t *testing.T) {
	shallow, err := os.MkdirTemp("", "benchtable-lstat-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shallow) })
	for _, dir := range []string{shallow, t.TempDir()} {
		e := &env{dir: dir}
		name, err := lstatTarget(e)
		if err != nil {
			t.Fatal(err)
		}
		have := len(strings.Split(strings.Trim(dir, "/"), "/"))
		got := len(strings.Split(strings.Trim(name, "/"), "/"))
		if want := max(5, have+1); got != want {
			t.Errorf("lstatTarget under %s = %s: %d components, want %d", dir, name, got, want)
		}
		if _, err := os.Lstat(name); err != nil {
			t.Error(err)
		}
	}
}
