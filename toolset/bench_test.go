package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The cost of a tool call over the plain work it wraps: a read of a
// 100-line file through the JSON tool (decode, nested scope, audit.Call,
// guarded open, numbering) against os.ReadFile, and a grep over 50 files
// against reading them raw.
func BenchmarkReadTool(b *testing.B) {
	f := newFixture(b)
	benchFixtureFiles(b, f.ws, 1)
	input := json.RawMessage(`{"path":"d/f0.txt"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.set.Call(context.Background(), "read", input); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadRaw(b *testing.B) {
	dir := b.TempDir()
	benchFixtureFiles(b, dir, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := os.ReadFile(filepath.Join(dir, "d/f0.txt")); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGrepTool50(b *testing.B) {
	f := newFixture(b)
	benchFixtureFiles(b, f.ws, 50)
	input := json.RawMessage(`{"pattern":"line 9[0-9]","path":"d"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.set.Call(context.Background(), "grep", input); err != nil {
			b.Fatal(err)
		}
	}
}

func benchFixtureFiles(b *testing.B, root string, n int) {
	b.Helper()
	if err := os.MkdirAll(filepath.Join(root, "d"), 0o755); err != nil {
		b.Fatal(err)
	}
	var content []byte
	for i := range 100 {
		content = fmt.Appendf(content, "line %d of some text\n", i)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(root, "d", fmt.Sprintf("f%d.txt", i)), content, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
