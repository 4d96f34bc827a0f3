package fsguard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// A host swaps afero.NewOsFs() for fsguard.New(ctx, afero.NewOsFs()); the
// generated code keeps using afero as before.
func Example() {
	tmp, _ := os.MkdirTemp("", "fsguard-example-")
	defer os.RemoveAll(tmp)
	tmp, _ = filepath.EvalSymlinks(tmp)
	work := filepath.Join(tmp, "work")
	os.Mkdir(work, 0o755)

	pol, _ := policy.New(policy.Spec{WriteRoots: []string{work}, Home: tmp})
	g, _ := audit.New(pol, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	fsys := fsguard.New(ctx, afero.NewOsFs(), fsguard.WithDir(work))

	err := afero.WriteFile(fsys, "notes.txt", []byte("hello"), 0o644)
	fmt.Println("write inside the root:", err)

	err = afero.WriteFile(fsys, "../escape.txt", []byte("x"), 0o644)
	var de *audit.DenyError
	fmt.Println("write outside:", errors.Is(err, fs.ErrPermission), errors.As(err, &de), de.Decision.Rule.Pattern)

	err = afero.WriteFile(fsys, ".git/hooks/pre-commit", []byte("x"), 0o755)
	errors.As(err, &de)
	fmt.Println("protected name:", de.Decision.Rule.Pattern, de.Decision.Tier)
	// Output:
	// write inside the root: <nil>
	// write outside: true true writes need a write root
	// protected name: .git/hooks hard
}
