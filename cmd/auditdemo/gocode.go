package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/isolate"
	"github.com/auditguard/auditguard/policy"
)

// eagerSource is the generated program the gocode scene builds and runs.
//
//go:embed eager/main.go
var eagerSource []byte

const gocodeUsage = "usage: auditdemo gocode [--cache DIR] [--dial METADATA,PUBLIC]"

// cmdGocode is the generated-code scene: it writes an over-eager Go
// program (cmd/auditdemo/eager) into a fresh module directory, builds and
// runs it with isolate.RunGo under a policy whose only write root is a
// workspace, and shows that the kernel refused every step too far while
// the program's own work landed. Exit status 0 when every forbidden step
// was refused and the files outside the workspace are unchanged.
func cmdGocode(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("auditdemo gocode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cache := fs.String("cache", "", "the Go build cache `DIR` (default: one under the temp directory)")
	dialTo := fs.String("dial", "169.254.169.254:80,1.1.1.1:443",
		"the `METADATA,PUBLIC` host:port pair the program dials as the cloud metadata service and a public host")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fmt.Fprintln(stderr, gocodeUsage)
		return 2
	}
	addrs := strings.Split(*dialTo, ",")
	if len(addrs) != 2 {
		fmt.Fprintln(stderr, "auditdemo gocode: --dial takes two host:port addresses, comma-separated")
		fmt.Fprintln(stderr, gocodeUsage)
		return 2
	}
	base, err := os.MkdirTemp("", "auditdemo-gocode-")
	if err != nil {
		fmt.Fprintln(stderr, "auditdemo gocode:", err)
		return 1
	}
	defer os.RemoveAll(base)
	base, _ = filepath.EvalSymlinks(base)
	work, home, mod := filepath.Join(base, "workspace"), filepath.Join(base, "home"), filepath.Join(base, "module")
	files := map[string]string{
		filepath.Join(work, ".git/hooks/pre-commit"): "#!/bin/sh\nexit 0\n",
		filepath.Join(home, ".bashrc"):               "# the user's own\n",
		filepath.Join(mod, "go.mod"):                 "module example.com/eager\n\ngo 1.24\n",
		filepath.Join(mod, "main.go"):                string(eagerSource),
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			fmt.Fprintln(stderr, "auditdemo gocode:", err)
			return 1
		}
	}
	pol, err := policy.New(policy.Spec{WriteRoots: []string{work}, Source: "gocode scene"})
	if err != nil {
		fmt.Fprintln(stderr, "auditdemo gocode:", err)
		return 1
	}
	g, err := audit.New(pol, audit.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Fprintln(stderr, "auditdemo gocode:", err)
		return 1
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		fmt.Fprintln(stderr, "auditdemo gocode:", err)
		return 1
	}
	defer release()

	fmt.Fprintf(stdout, "policy: write root %s; no exec rules; no net rules\n", work)
	fmt.Fprintf(stdout, "building and running the generated program (cmd/auditdemo/eager) in the sandbox...\n\n")
	t0 := time.Now()
	run := &isolate.GoRun{Dir: mod, Args: []string{work, home, addrs[0], addrs[1]}, Cache: *cache, Timeout: time.Minute, BuildTimeout: 5 * time.Minute}
	res, err := run.Run(ctx)
	if err != nil {
		var be *isolate.BuildError
		if errors.As(err, &be) {
			fmt.Fprintf(stderr, "auditdemo gocode: the build failed:\n%s\n", be.Output)
		} else {
			fmt.Fprintln(stderr, "auditdemo gocode:", err)
		}
		return 1
	}
	for _, line := range strings.SplitAfter(string(res.Stdout), "\n") {
		if line != "" {
			fmt.Fprint(stdout, "  program> ", line)
		}
	}
	fmt.Fprintf(stdout, "\nexit status %d after %v (build and run)\n", res.ExitCode, time.Since(t0).Round(time.Millisecond))
	ok := true
	check := func(what string, good bool) {
		mark := "ok  "
		if !good {
			mark, ok = "FAIL", false
		}
		fmt.Fprintf(stdout, "%s %s\n", mark, what)
	}
	fmt.Fprintln(stdout, "\nafterwards, on disk:")
	b, _ := os.ReadFile(filepath.Join(work, "report.txt"))
	check("the report landed in the workspace", string(b) == "all good\n")
	b, _ = os.ReadFile(filepath.Join(home, ".bashrc"))
	check("~/.bashrc is unchanged", string(b) == files[filepath.Join(home, ".bashrc")])
	b, _ = os.ReadFile(filepath.Join(work, ".git/hooks/pre-commit"))
	check(".git/hooks/pre-commit is unchanged", string(b) == files[filepath.Join(work, ".git/hooks/pre-commit")])
	for _, step := range []string{"write ~/.bashrc", "git hook", "rm -rf home", "run a shell", "cloud metadata", "dial out"} {
		check(step+" was refused", strings.Contains(string(res.Stdout), fmt.Sprintf("%-14s refused", step)))
	}
	if sb := res.Confinement.Sandbox; sb != nil {
		fmt.Fprintf(stdout, "\nconfinement: %s; landlock %s; cgroup %s\n", sb, res.Confinement.Landlock, res.Confinement.CgroupNote)
	}
	if !ok {
		return 1
	}
	return 0
}
