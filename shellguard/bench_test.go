package shellguard_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/auditguard/auditguard/shellguard"
)

// The cost of a call: one program, and a loop of 100, through a session
// (the interpreter, procguard's decision and a sandbox per program)
// against the same script run raw by sh -c (fork and exec, nothing
// checked). The package doc states the numbers and the command.

const loop100 = "i=0; while [ $i -lt 100 ]; do /bin/true; i=$((i+1)); done"

func BenchmarkRunOne(b *testing.B) {
	benchSession(b, "/bin/true")
}

func BenchmarkRunLoop100(b *testing.B) {
	benchSession(b, loop100)
}

func BenchmarkRawOne(b *testing.B) {
	benchRaw(b, "/bin/true")
}

func BenchmarkRawLoop100(b *testing.B) {
	benchRaw(b, loop100)
}

func benchSession(b *testing.B, script string) {
	e := setup(b)
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
