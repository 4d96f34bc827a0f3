package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy/policyfile"
)

//go:embed default-policy.toml
var defaultPolicy string

func cmdDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("auditdemo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	logPath := fs.String("log", "", "write audit records as JSON lines to `FILE`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := demo(stdout, *logPath); err != nil {
		fmt.Fprintln(stderr, "auditdemo:", err)
		return 1
	}
	return 0
}

// step is one thing the generated code tries.
type step struct {
	what string
	do   func() error
}

func demo(out io.Writer, logPath string) error {
	logger, closeLog, err := openLog(logPath)
	if err != nil {
		return err
	}
	defer closeLog()

	tmp, err := os.MkdirTemp("", "auditdemo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tmp, err = filepath.EvalSymlinks(tmp)
	if err != nil {
		return err
	}
	work, home := filepath.Join(tmp, "workspace"), filepath.Join(tmp, "home")
	if err := setUp(work, home); err != nil {
		return err
	}
	homeBefore, err := snapshot(home)
	if err != nil {
		return err
	}

	// The demo server generated code may reach: loopback, one port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from the demo server\n")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	// The host: an embedded policy, a recorder, and a BeforeDeny that lets
	// the host's own search tool run what generated code may not.
	doc := strings.NewReplacer("{{workspace}}", work, "{{demo_port}}", port).Replace(defaultPolicy)
	file, err := policyfile.Parse("default-policy.toml", []byte(doc))
	if err != nil {
		return err
	}
	rec := audit.NewRecorder()
	g, err := audit.New(file.Policy, audit.WithRecorder(rec), audit.WithLogger(logger), audit.WithLogAllows(),
		audit.WithBeforeDeny(func(ctx context.Context, ev *audit.Event) bool {
			return ev.Call != nil && ev.Call.Name == "search" && ev.Protocol == audit.Exec
		}))
	if err != nil {
		return err
	}
	if err := g.SetModes(context.Background(), file.Modes); err != nil {
		return err
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		return err
	}
	defer release()

	h := handles{ctx: ctx, fs: fsguard.New(ctx, afero.NewOsFs(), fsguard.WithDir(work)), work: work, home: home}
	steps := []step{
		{"write a plan in the workspace", func() error { return writePlan(h) }},
		{"list the workspace with ls", func() error { return listWorkspace(h) }},
		{"tidy up a file in the home dir", func() error { return cleanUpHome(h) }},
		{"rm -rf the home dir", func() error { return removeEverything(h) }},
		{"ls && rm -rf through sh -c", func() error { return chainedShell(h) }},
		{"ask the cloud metadata endpoint", func() error { return askCloudMetadata(h) }},
		{"fetch from the demo server", func() error { return fetchFromDemoServer(h, "http://127.0.0.1:"+port+"/") }},
		{"install a git pre-commit hook", func() error { return installGitHook(h) }},
		{"write through a symlink to home", func() error { return writeThroughSymlink(h) }},
		{"host's trusted search tool runs grep", func() error {
			toolCtx, done := audit.WithCall(ctx, "search", []string{"refactor"})
			defer done()
			return searchTool(toolCtx, work)
		}},
	}
	for _, s := range steps {
		err := s.do()
		var de *audit.DenyError
		if err != nil && !errors.As(err, &de) {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}

	counts := printTable(out, rec.Records(), tmp)
	homeAfter, err := snapshot(home)
	if err != nil {
		return err
	}
	if homeAfter != homeBefore {
		return fmt.Errorf("the fake home changed:\nbefore:\n%s\nafter:\n%s", homeBefore, homeAfter)
	}
	fmt.Fprintf(out, "\n%d guarded calls: %d allowed, %d denied, %d rescued by BeforeDeny.\n",
		counts[0]+counts[1]+counts[2], counts[0], counts[1], counts[2])
	fmt.Fprintf(out, "The fake home is unchanged; everything happened under %s, now removed.\n", tmp)
	return nil
}

// setUp makes the workspace (a git repository with a symbolic link to the
// home dir in it) and the fake home.
func setUp(work, home string) error {
	for _, d := range []string{filepath.Join(work, ".git", "hooks"), home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(home, "notes.txt"), []byte("keep me\n"), 0o644); err != nil {
		return err
	}
	return os.Symlink(home, filepath.Join(work, "shared"))
}

// snapshot lists a tree with sizes, to tell whether it changed.
func snapshot(dir string) (string, error) {
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d\n", p, fi.Mode(), fi.Size())
		return nil
	})
	return b.String(), err
}

// printTable prints one row per record and returns the allowed, denied and
// rescued counts.
func printTable(out io.Writer, recs []audit.Record, tmp string) [3]int {
	var counts [3]int
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION\tTARGET\tDECISION\tRULE\tCALLER")
	for _, r := range recs {
		target := r.Target
		if len(r.Argv) > 0 {
			target = strings.Join(r.Argv, " ")
		}
		target = shorten(strings.ReplaceAll(target, tmp+"/", ""), 36)
		rule := shorten(strings.ReplaceAll(r.Rule, tmp+"/", ""), 48)
		if r.Source != "" {
			rule += " (" + filepath.Base(r.Source) + ")"
		}
		switch r.Outcome {
		case audit.Allowed:
			counts[0]++
		case audit.Denied:
			counts[1]++
		case audit.Rescued:
			counts[2]++
			rule = "BeforeDeny: tool " + strconv.Quote(r.Tool) + " over " + rule
		}
		op := r.Protocol.String() + " " + r.Op.String()
		if r.Protocol.String() == r.Op.String() {
			op = r.Op.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", op, target, r.Outcome, rule, r.Caller)
	}
	tw.Flush()
	return counts
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
