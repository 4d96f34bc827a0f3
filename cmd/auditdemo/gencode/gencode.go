// Package gencode stands for tool code an LLM wrote that runs inside the
// host: it gets guarded handles from the host and must reach files,
// programs and the network only through them. `make reach` proves that
// with capslock (docs/reach.md).
package gencode

import (
	"context"
	"io"
	"path/filepath"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/netguard"
	"github.com/auditguard/auditguard/procguard"
)

// Report writes a summary file, lists the workspace and fetches a page,
// all through the handles it was given.
func Report(ctx context.Context, fsys afero.Fs, work, url string) error {
	if err := afero.WriteFile(fsys, filepath.Join(work, "report.txt"), []byte("ok\n"), 0o644); err != nil {
		return err
	}
	cmd := procguard.CommandContext(ctx, "ls", "-a")
	cmd.Dir = work
	if err := cmd.Run(); err != nil {
		return err
	}
	resp, err := netguard.NewHTTPClient(ctx).Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
