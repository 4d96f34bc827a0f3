package audit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/netguard"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

// Example_quickstart is the README's quickstart; TestReadmeQuickstart keeps
// the two identical.
func Example_quickstart() {
	work, _ := os.MkdirTemp("", "agent-work-")
	defer os.RemoveAll(work)
	quickstart(work)
	// Output:
	// write inside: <nil>
	// git hook denied: true
	// rm denied: true
	// metadata denied: true
}

func quickstart(work string) {
	// quickstart:begin
	pol, _ := policy.New(policy.Spec{WriteRoots: []string{work}})
	g, _ := audit.New(pol, audit.WithBeforeDeny(func(ctx context.Context, ev *audit.Event) bool {
		return ev.Call != nil && ev.Call.Name == "search" // rescue the host's trusted tool
	}))
	ctx, release, _ := g.Enter(context.Background())
	defer release() // waits for calls in flight, then closes the files and connections and kills the children made from ctx

	fsys := fsguard.New(ctx, afero.NewOsFs()) // a drop-in afero.Fs
	fmt.Println("write inside:", afero.WriteFile(fsys, filepath.Join(work, "out.txt"), []byte("ok"), 0o644))
	err := afero.WriteFile(fsys, filepath.Join(work, ".git/hooks/pre-commit"), []byte("#!/bin/sh"), 0o755)
	fmt.Println("git hook denied:", errors.Is(err, fs.ErrPermission))
	err = procguard.CommandContext(ctx, "rm", "-rf", work).Run() // no exec rule allows rm
	fmt.Println("rm denied:", errors.Is(err, fs.ErrPermission))
	_, err = (&netguard.Dialer{}).DialContext(ctx, "tcp", "169.254.169.254:80")
	fmt.Println("metadata denied:", errors.Is(err, fs.ErrPermission))
	// quickstart:end
}

// TestReadmeQuickstart checks that the README shows exactly the code above.
func TestReadmeQuickstart(t *testing.T) {
	src, err := os.ReadFile("quickstart_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := bytes.Cut(src, []byte("// quickstart:begin\n"))
	body, _, _ := bytes.Cut(rest, []byte("\t// quickstart:end"))
	var want strings.Builder
	for _, line := range strings.Split(strings.TrimRight(string(body), "\n"), "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t") + "\n")
	}
	if !strings.Contains(string(readme), "```go\n"+want.String()+"```") {
		t.Fatalf("README.md's quickstart differs from Example_quickstart; it should read:\n```go\n%s```", want.String())
	}
}
