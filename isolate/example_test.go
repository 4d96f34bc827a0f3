package isolate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/isolate"
	"github.com/auditguard/auditguard/policy"
)

// wordCount stands for a host tool: registered in init (here as a
// package-level variable), so the re-executed binary has it too.
var wordCount = isolate.MustRegister("example-wc", func(ctx context.Context, path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, in := 0, false
	for _, c := range b {
		space := c == ' ' || c == '\n' || c == '\t'
		if !space && !in {
			n++
		}
		in = !space
	}
	return n, nil
})

// The tool runs in its own sandboxed process; a hang comes back as a
// value, and the host goes on.
func ExampleFunc_Call() {
	work, _ := os.MkdirTemp("", "example-isolate-")
	defer os.RemoveAll(work)
	_ = os.WriteFile(filepath.Join(work, "notes.txt"), []byte("three small words\n"), 0o644)

	pol, _ := policy.New(policy.Spec{WriteRoots: []string{work}})
	g, _ := audit.New(pol)
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	n, err := wordCount.Call(ctx, filepath.Join(work, "notes.txt"))
	fmt.Println(n, err)

	err = isolate.Call(ctx, "spin", struct{}{}, nil, isolate.Timeout(time.Second))
	fmt.Println(errors.Is(err, isolate.ErrTimeout), err)
	// Output:
	// 3 <nil>
	// true isolate: tool "spin" killed after 1s (timeout)
}
