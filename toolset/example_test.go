package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/toolset"
)

// A host gives its agent the tool set: the model's tool calls arrive as
// a name, an id and JSON; results and errors go back as text.
func Example() {
	tmp, _ := os.MkdirTemp("", "toolset-example-")
	defer os.RemoveAll(tmp)
	ws, _ := filepath.EvalSymlinks(tmp)
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n// main greets.\nfunc main() { println(\"hi\") }\n"), 0o644)

	pol, _ := policy.New(policy.Spec{WriteRoots: []string{ws}, Home: ws})
	rec := audit.NewRecorder()
	g, _ := audit.New(pol, audit.WithRecorder(rec), audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	set, _ := toolset.New(ctx, toolset.Options{Workspace: ws})
	defer set.Close()

	// What the model's tool calls would be.
	calls := []struct{ id, tool, input string }{
		{"toolu_1", "edit", `{"path": "main.go", "old_string": "\"hi\"", "new_string": "\"hello\""}`},
		{"toolu_2", "read", `{"path": "main.go", "offset": 3}`},
		{"toolu_3", "edit", `{"path": "main.go", "old_string": "goodbye", "new_string": "x"}`},
		{"toolu_4", "write", `{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh"}`},
	}
	for _, c := range calls {
		res, err := set.Call(toolset.WithCallID(ctx, c.id), c.tool, json.RawMessage(c.input))
		var te *toolset.Error
		switch {
		case errors.As(err, &te) && te.Kind == toolset.KindDenied:
			var de *audit.DenyError
			errors.As(err, &de)
			fmt.Printf("%s: refused: rule %q, tier %s\n", c.id, de.Decision.Rule.Pattern, de.Decision.Tier)
		case err != nil:
			fmt.Printf("%s: error: %s\n", c.id, err)
		default:
			fmt.Printf("%s: %s\n", c.id, res.Text)
		}
	}
	for _, r := range rec.Records() {
		fmt.Println("record:", r.Outcome, r.Op, filepath.Base(r.Target), "by", r.Tool)
	}
	// Output:
	// toolu_1: edited main.go: 1 replacement(s), the first at line 3
	//      1	package main
	//      2	// main greets.
	//      3	func main() { println("hello") }
	//
	// toolu_2:      3	func main() { println("hello") }
	//
	// toolu_3: error: old_string was not found in main.go; nothing was changed. Read the file again and copy the text exactly, whitespace and indentation included, without the line-number prefix
	// toolu_4: refused: rule ".git/hooks", tier hard
	// record: denied write pre-commit by write#toolu_4
}
