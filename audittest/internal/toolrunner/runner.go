// Package toolrunner is a small agent tool runner, written the way a host
// would write one, for audittest's own tests and examples: it runs
// commands with procguard, fetches URLs and speaks a line protocol with
// netguard, and saves files with fsguard. Nothing in it knows about
// tests; the call sites it holds are the ones the firewall must name.
package toolrunner

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/netguard"
	"github.com/auditguard/auditguard/procguard"
)

// Runner runs tool calls in Dir.
type Runner struct {
	Dir string
}

// Shell runs argv in the runner's directory and returns its standard
// output.
func (r *Runner) Shell(ctx context.Context, argv ...string) (string, error) {
	cmd := procguard.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = r.Dir
	out, err := cmd.Output()
	return string(out), err
}

// Commit commits the staged changes with msg, given on standard input.
func (r *Runner) Commit(ctx context.Context, msg string) error {
	cmd := procguard.CommandContext(ctx, "git", "commit", "-F", "-")
	cmd.Dir = r.Dir
	cmd.Stdin = strings.NewReader(msg)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git commit: %w: %s", err, out)
	}
	return nil
}

// Fetch GETs url and returns the body.
func (r *Runner) Fetch(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := netguard.NewClient(ctx).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("fetch %s: %s", url, resp.Status)
	}
	return string(b), nil
}

// Ping sends "PING\n" to addr and returns the line it answers.
func (r *Runner) Ping(ctx context.Context, addr string) (string, error) {
	var d netguard.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := io.WriteString(c, "PING\n"); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}

// Save writes data to name, relative to the runner's directory.
func (r *Runner) Save(ctx context.Context, name, data string) error {
	fsys := fsguard.New(ctx, afero.NewOsFs())
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.Dir, name)
	}
	return afero.WriteFile(fsys, p, []byte(data), 0o644)
}

// Report runs `git status --short` and saves its output to status.txt:
// one tool call that execs and writes.
func (r *Runner) Report(ctx context.Context) error {
	out, err := r.Shell(ctx, "git", "status", "--short")
	if err != nil {
		return err
	}
	return r.Save(ctx, "status.txt", out)
}

// Later runs argv once start is closed, on its own goroutine, and sends
// the error to the returned channel: work that may outlive its caller.
func (r *Runner) Later(ctx context.Context, start <-chan struct{}, argv ...string) <-chan error {
	done := make(chan error, 1)
	go func() {
		<-start
		_, err := r.Shell(ctx, argv...)
		done <- err
	}()
	return done
}
