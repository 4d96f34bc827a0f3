package shellguard_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/shellguard"
)

// The cost of a call that runs one program, and one that runs a loop of
// 100, through a session (the interpreter, procguard's decision and a
// sandbox per program), against the same script run raw by sh -c (fork
// and exec, nothing checked). The parts: procguard alone (no
// interpreter), the session without the namespace sandbox (Landlock and
// cgroups only), and a loop of 100 builtins (the interpreter alone). The
// package doc states the numbers and the command.

const (
	loop100        = "i=0; while [ $i -lt 100 ]; do /bin/true; i=$((i+1)); done"
	loop100Builtin = "i=0; while [ $i -lt 100 ]; do :; i=$((i+1)); done"
)

func BenchmarkRunOne(b *testing.B)              { benchSession(b, "/bin/true", false) }
func BenchmarkRunLoop100(b *testing.B)          { benchSession(b, loop100, false) }
func BenchmarkRunOneNoSandbox(b *testing.B)     { benchSession(b, "/bin/true", true) }
func BenchmarkRunLoop100NoSandbox(b *testing.B) { benchSession(b, loop100, true) }
func BenchmarkRunLoop100Builtin(b *testing.B)   { benchSession(b, loop100Builtin, false) }
func BenchmarkRawOne(b *testing.B)              { benchRaw(b, "/bin/true") }
func BenchmarkRawLoop100(b *testing.B)          { benchRaw(b, loop100) }
func BenchmarkProcguardOne(b *testing.B)        { benchProcguard(b) }

func benchSession(b *testing.B, script string, noSandbox bool) {
	e := setupWith(b, func(s *policy.Spec) { s.Exec.NoSandbox = noSandbox })
	s := e.session(b, shellguard.Options{})
	s.Run(context.Background(), script) // warm: the first sandbox start
	b.ResetTimer()
	for b.Loop() {
		res, err := s.Run(context.Background(), script)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v: %+v", err, res)
		}
	}
}

func benchProcguard(b *testing.B) {
	e := setup(b)
	procguard.CommandContext(e.ctx, "/bin/true").Run() // warm
	b.ResetTimer()
	for b.Loop() {
		c := procguard.CommandContext(e.ctx, "/bin/true")
		c.Dir = e.dir
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRaw(b *testing.B, script string) {
	dir := b.TempDir()
	for b.Loop() {
		c := exec.Command("sh", "-c", script)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}
