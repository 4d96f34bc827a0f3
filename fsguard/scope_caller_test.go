package fsguard_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// TestScopeErrorNamesTheCaller: a call through a released scope's handle,
// made through an afero helper, names the code that called the helper.
func TestScopeErrorNamesTheCaller(t *testing.T) {
	dir := t.TempDir()
	p, err := policy.New(policy.Spec{WriteRoots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := audit.New(p, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fsys := fsguard.New(ctx, afero.NewOsFs())
	release()
	for _, write := range []func() error{
		func() error { return afero.WriteFile(fsys, filepath.Join(dir, "x"), nil, 0o644) },
		func() error { _, err := afero.ReadDir(fsys, dir); return err },
		func() error { return fsys.MkdirAll(filepath.Join(dir, "a", "b"), 0o755) },
	} {
		err := write()
		var de *audit.DenyError
		if !errors.As(err, &de) || !errors.Is(err, audit.ErrScopeClosed) {
			t.Fatalf("after release: %v", err)
		}
		if site := audit.FormatFrame(de.Caller); !strings.Contains(site, "scope_caller_test.go") {
			t.Errorf("the error names %q, want this test's line", site)
		}
	}
}
