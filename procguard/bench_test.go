package procguard_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

// BenchmarkRunTrue compares the raw exec.Command("/bin/true").Run() with the
// guarded one, with and without Landlock, in one run. guarded-landlock is
// the default (execute only allowed programs); guarded-landlock-execany is
// LandlockExecAny; guarded-landlock-rescued runs true without a rule,
// rescued by BeforeDeny, so its program is added to the domain per command.
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
		{"guarded-landlock-execany", policy.ExecSpec{Rules: allow("true"), LandlockExecAny: true}},
		{"guarded-landlock-rescued", policy.ExecSpec{Rules: allow("sh")}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := setup(b, bc.spec, audit.WithBeforeDeny(func(context.Context, *audit.Event) bool { return true }))
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

// BenchmarkRunTrueInterleaved alternates the raw and the guarded run in
// every iteration, so both see the same machine load, and reports their
// times and ratio as metrics (ns/op is the sum of both).
func BenchmarkRunTrueInterleaved(b *testing.B) {
	for _, bc := range []struct {
		name     string
		spec     policy.ExecSpec
		nocgroup bool
	}{
		{"nolandlock", policy.ExecSpec{Rules: allow("true"), NoLandlock: true}, false},
		{"landlock", policy.ExecSpec{Rules: allow("true")}, false},
		{"landlock-execany", policy.ExecSpec{Rules: allow("true"), LandlockExecAny: true}, false},
		{"nolandlock-nocgroup", policy.ExecSpec{Rules: allow("true"), NoLandlock: true}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.nocgroup {
				defer procguard.DisableCgroupsForTest()()
			}
			e := setup(b, bc.spec)
			var raw, guarded time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := exec.Command("/bin/true").Run(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				c := procguard.CommandContext(e.ctx, "/bin/true")
				c.Dir = e.dir
				if err := c.Run(); err != nil {
					b.Fatal(err)
				}
				raw += t1.Sub(t0)
				guarded += time.Since(t1)
			}
			b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "raw-ns/op")
			b.ReportMetric(float64(guarded.Nanoseconds())/float64(b.N), "guarded-ns/op")
			b.ReportMetric(float64(guarded)/float64(raw), "ratio")
		})
	}
}
