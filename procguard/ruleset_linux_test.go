package procguard

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// BenchmarkStartParts measures what a confined start works out before it
// spawns anything: the decision (prepare), the child's Landlock ruleset
// (most of it cached per policy snapshot) and the sandbox's spec. Together
// they are a small share of a start (BenchmarkSandboxStart); this shows
// where a regression in them comes from.
func BenchmarkStartParts(b *testing.B) {
	dir := b.TempDir()
	pol, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Home: dir, ReadDeny: []string{"~/.ssh"}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: "true"}, {Program: "sh"}, {Program: "git"}}}})
	if err != nil {
		b.Fatal(err)
	}
	g, err := audit.New(pol)
	if err != nil {
		b.Fatal(err)
	}
	ctx, rel, err := g.Enter(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer rel()
	b.Run("prepare", func(b *testing.B) {
		for b.Loop() {
			c := CommandContext(ctx, "/bin/true")
			c.Dir = dir
			c.prepare()
		}
	})
	c := CommandContext(ctx, "/bin/true")
	c.Dir = dir
	pr := c.prepare()
	b.Run("ruleset", func(b *testing.B) {
		for b.Loop() {
			c.landlockRuleset(pr)
		}
	})
	rs, _, err := c.landlockRuleset(pr)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("spec", func(b *testing.B) {
		for b.Loop() {
			c.sandboxSpec(pr, nil, rs, policy.ExecLimits{})
		}
	})
}

// TestLandlockBaseFollowsPolicy: the per-policy part of a ruleset belongs
// to its policy snapshot only. Policies made and dropped in turn (the
// collector may hand a new one an old one's address) each get their own
// programs and none of the previous one's.
func TestLandlockBaseFollowsPolicy(t *testing.T) {
	dir := t.TempDir()
	progs := []string{"true", "false"}
	for i := range 40 {
		mine, other := progs[i%2], progs[(i+1)%2]
		pol, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: mine}}}})
		if err != nil {
			t.Fatal(err)
		}
		g, err := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			t.Fatal(err)
		}
		ctx, release, err := g.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c := CommandContext(ctx, "/bin/echo")
		c.Dir = dir
		pr := c.prepare()
		base := buildBase(pr)
		got := baseFor(pr)
		if !slices.Equal(got.programs, base.programs) {
			t.Fatalf("policy %d allowing %s: cached programs %v, want %v", i, mine, got.programs, base.programs)
		}
		mineReal, _ := policy.LookPath(mine, pol.ExecPath())
		otherReal, _ := policy.LookPath(other, pol.ExecPath())
		if mineReal, _ = filepath.EvalSymlinks(mineReal); !got.programSet[mineReal] {
			t.Fatalf("policy %d: its program %s is not in %v", i, mineReal, got.programs)
		}
		if otherReal, _ = filepath.EvalSymlinks(otherReal); got.programSet[otherReal] {
			t.Fatalf("policy %d: the previous policy's %s is in %v", i, otherReal, got.programs)
		}
		release()
		runtime.GC()
	}
}
