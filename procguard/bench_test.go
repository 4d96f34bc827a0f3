package procguard_test

import (
	"os/exec"
	"testing"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

// BenchmarkRunTrue compares the raw exec.Command("/bin/true").Run() with the
// guarded one, with and without Landlock, in one run.
func BenchmarkRunTrue(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, bc := range []struct {
		name string
		spec policy.ExecSpec
	}{
		{"guarded-nolandlock", policy.ExecSpec{Rules: allow("true"), NoLandlock: true}},
		{"guarded-landlock", policy.ExecSpec{Rules: allow("true")}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := setup(b, bc.spec)
			for b.Loop() {
				c := procguard.CommandContext(e.ctx, "/bin/true")
				c.Dir = e.dir
				if err := c.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("guarded-nolandlock-nocgroup", func(b *testing.B) {
		defer procguard.DisableCgroupsForTest()()
		e := setup(b, policy.ExecSpec{Rules: allow("true"), NoLandlock: true})
		for b.Loop() {
			c := procguard.CommandContext(e.ctx, "/bin/true")
			c.Dir = e.dir
			if err := c.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check-only", func(b *testing.B) {
		e := setup(b, policy.ExecSpec{Rules: allow("true")})
		for b.Loop() {
			c := procguard.CommandContext(e.ctx, "/bin/true")
			c.Dir = e.dir
			if d := c.Check(); !d.Allowed {
				b.Fatal(d.Err)
			}
		}
	})
}
