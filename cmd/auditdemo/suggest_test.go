package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/netguard"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
	"github.com/auditguard/auditguard/procguard"
)

// TestSuggestFromWarnRun runs a warn-mode guard over real fs, exec and net
// operations (real files, real processes, a loopback server) with a
// JSON-lines log, merges the suggestions into the policy with suggest
// --policy and checks that the result allows exactly the logged operations:
// each of them is allowed, each neighbour stays denied, and hard denials
// stay denied.
func TestSuggestFromWarnRun(t *testing.T) {
	work, _ := agentHome(t)
	base, err := os.ReadFile(filepath.Join("testdata", "warn.toml"))
	if err != nil {
		t.Fatal(err)
	}
	polPath := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(polPath, base, 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	otherPort := port + 1
	if port == 65535 {
		otherPort = port - 1
	}

	build := filepath.Join(work, "build")
	// A file's write root is the directory holding it: notes.txt lives in
	// docs, so the suggestion stays narrower than the whole workspace.
	docs := filepath.Join(work, "docs")
	if err := os.Mkdir(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(docs, "notes.txt")
	old := filepath.Join(build, "old.txt")
	hook := filepath.Join(build, ".git", "hooks", "pre-commit")

	// The warn-mode session.
	func() {
		logger, closeLog, err := openLog(logPath)
		if err != nil {
			t.Fatal(err)
		}
		defer closeLog()
		f, err := policyfile.LoadFile(polPath)
		if err != nil {
			t.Fatal(err)
		}
		g, err := audit.New(f.Policy, audit.WithLogger(logger), audit.WithLogAllows())
		if err != nil {
			t.Fatal(err)
		}
		if err := g.SetModes(context.Background(), f.Modes); err != nil {
			t.Fatal(err)
		}
		ctx, release, err := g.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		gfs := fsguard.New(ctx, afero.NewOsFs())

		steps := []struct {
			name string
			do   func() error
		}{
			{"mkdir build", func() error { return gfs.Mkdir(build, 0o755) }},
			{"write build/out.txt", func() error { return afero.WriteFile(gfs, filepath.Join(build, "out.txt"), []byte("out"), 0o644) }},
			{"write it again", func() error { return afero.WriteFile(gfs, filepath.Join(build, "out.txt"), []byte("out"), 0o644) }},
			{"write notes.txt", func() error { return afero.WriteFile(gfs, notes, []byte("notes"), 0o644) }},
			{"delete build/old.txt", func() error {
				if err := os.WriteFile(old, nil, 0o644); err != nil { // set-up, not guarded
					return err
				}
				return gfs.Remove(old)
			}},
			{"write a git hook", func() error {
				if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil { // set-up, not guarded
					return err
				}
				return afero.WriteFile(gfs, hook, []byte("#!/bin/sh\n"), 0o755)
			}},
			{"exec echo hello", func() error { return execIn(ctx, build, "echo", "hello") }},
			{"exec echo hello again", func() error { return execIn(ctx, build, "echo", "hello") }},
			{"exec a script", func() error { return execIn(ctx, build, "sh", "-c", "echo a && ls -a") }},
			{"dial the loopback server", func() error {
				c, err := (&netguard.Dialer{}).DialContext(ctx, "tcp", addr)
				if err == nil {
					c.Close()
				}
				return err
			}},
			{"ask for cloud metadata (checked only, never dialed)", func() error {
				const meta = "169.254.169.254:80"
				req, err := policy.ParseNetRequest(policy.OpConnect, "tcp", meta)
				if err != nil {
					return err
				}
				return audit.Check(ctx, &audit.Event{Protocol: audit.Net, Op: policy.OpConnect, Target: meta, Resolved: "169.254.169.254", Detail: "tcp"}, req)
			}},
		}
		// Warn mode carries out soft denials; hard-tier ones (the
		// protected hook, loopback and metadata addresses) are refused.
		hard := map[string]bool{"write a git hook": true, "dial the loopback server": true,
			"ask for cloud metadata (checked only, never dialed)": true}
		for _, s := range steps {
			err := s.do()
			if hard[s.name] {
				if !errors.Is(err, iofs.ErrPermission) {
					t.Fatalf("%s in warn mode: %v, want a hard-tier denial", s.name, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s in warn mode: %v", s.name, err)
			}
		}
	}()

	// With --policy, suggest prints the policy merged with its additions.
	r := cli(t, "suggest", "--log", logPath, "--policy", polPath)
	if r.code != 0 {
		t.Fatalf("suggest: %v", r)
	}
	out := r.stdout
	t.Logf("suggest output:\n%s", out)
	// Where every exec is judged when it happens, the script's ls is a
	// would-deny of its own when it starts (the same addition allows it).
	events := 11
	if b, err := os.ReadFile(logPath); err == nil && strings.Contains(string(b), "in the sandbox of") {
		events++
	}
	wantAll(t, "suggest summary", r.stderr, fmt.Sprintf("# auditdemo suggest: %d would-deny events", events))
	wantAll(t, "suggest output", out,
		"# A policy for a dry run", // the file it merged into
		"fs   = \"enforce\"",       // its warn modes, now enforced
		"[fs]\nwrite_roots = [\n  "+strconv.Quote(build)+", # allows fs create "+build,
		strconv.Quote(docs)+", # allows fs write "+notes+" (its nearest existing directory "+docs+": a write root is a directory)",
		"[[exec.allow]]\nprogram = ",
		"args = [\"hello\"]\nmatch = [[\"hello\"]]",
		"args = [\"-a\"]", // echo a is a shell builtin: no rule for it
		"[[net.allow]]\ncidr = \"127.0.0.1\"\nports = ["+strconv.Itoa(port)+"]\nmatch = [\"127.0.0.1:"+strconv.Itoa(port)+"\"]",
		"# note: unlocks the special-purpose address 127.0.0.1 (loopback, 127.0.0.0/8) for port "+strconv.Itoa(port)+" only",
		"# fs write "+hook+"\n#   denied by protected \".git/hooks\" (builtin), hard\n#   no addition can allow it: protected names stay read-only",
		"# net connect 169.254.169.254:80", "cloud metadata",
	)
	// Deduplicated: one entry per addition, the covered file folded into
	// its directory's entry.
	for s, n := range map[string]int{`args = ["hello"]`: 1, strconv.Quote(build) + ",": 1, "cidr = \"127.0.0.1\"": 1,
		strconv.Quote(filepath.Join(build, "out.txt")): 0, strconv.Quote(old): 0, "# fs write " + hook: 1} {
		if got := strings.Count(out, s); got != n {
			t.Errorf("%q appears %d times, want %d", s, got, n)
		}
	}

	// The protected hook is the only hard fs denial; warn mode did not
	// write it.
	if _, err := os.Stat(hook); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("warn mode wrote the protected hook: %v", err)
	}

	// Save the merged policy and load it: enforce mode.
	if err := os.WriteFile(polPath, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := policyfile.LoadFile(polPath)
	if err != nil {
		t.Fatalf("the merged policy does not load: %v", err)
	}
	if want := (policy.Modes{FS: policy.ModeEnforce, Exec: policy.ModeEnforce, Net: policy.ModeEnforce}); loaded.Modes != want {
		t.Errorf("merged modes %+v, want %+v", loaded.Modes, want)
	}
	g, err := audit.New(loaded.Policy, audit.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	p := loaded.Policy

	for _, tc := range []struct {
		op    policy.Op
		path  string
		allow bool
		tier  policy.Tier
	}{
		{policy.OpCreate, build, true, 0},
		{policy.OpWrite, filepath.Join(build, "out.txt"), true, 0},
		{policy.OpWrite, notes, true, 0},
		{policy.OpDelete, old, true, 0},
		{policy.OpWrite, hook, false, policy.TierHard},
		// Neighbours.
		{policy.OpWrite, filepath.Join(work, "other.txt"), false, policy.TierSoft},
		{policy.OpCreate, filepath.Join(work, "build2"), false, policy.TierSoft},
		{policy.OpDelete, notes, true, 0},               // a file in a root
		{policy.OpDelete, docs, false, policy.TierHard}, // a root itself cannot be removed
		{policy.OpWrite, filepath.Join(work, "notes.txt"), false, policy.TierSoft},
		{policy.OpWrite, filepath.Join(filepath.Dir(work), "notes.txt"), false, policy.TierSoft},
	} {
		d := p.CheckPath(tc.op, tc.path, "")
		if d.Allowed != tc.allow || (!tc.allow && d.Tier != tc.tier) {
			t.Errorf("%v %s: %+v (rule %v), want allowed=%v tier %v", tc.op, tc.path, d, d.Rule, tc.allow, tc.tier)
		}
	}

	// And through a guarded handle, for real.
	gfs := fsguard.New(ctx, afero.NewOsFs())
	if err := afero.WriteFile(gfs, filepath.Join(build, "out.txt"), []byte("again"), 0o644); err != nil {
		t.Errorf("write build/out.txt under the new policy: %v", err)
	}
	if err := afero.WriteFile(gfs, filepath.Join(work, "other.txt"), nil, 0o644); !errors.Is(err, iofs.ErrPermission) {
		t.Errorf("write other.txt under the new policy: %v, want a denial", err)
	}

	for _, tc := range []struct {
		dir   string
		argv  []string
		allow bool
	}{
		{build, []string{"echo", "hello"}, true},
		{build, []string{"sh", "-c", "echo a && ls -a"}, true},
		{build, []string{"echo", "bye"}, false},
		{build, []string{"ls"}, false},
		{build, []string{"sh", "-c", "echo a && ls -a && echo b"}, true}, // echo: builtins
		{build, []string{"sh", "-c", "echo a && ls -a && ls"}, false},
		{work, []string{"echo", "hello"}, false}, // not in a write root
	} {
		cmd := procguard.CommandContext(ctx, tc.argv[0], tc.argv[1:]...)
		cmd.Dir = tc.dir
		if d := cmd.Check(); d.Allowed != tc.allow {
			t.Errorf("exec %q in %s: allowed=%v (%v, %s), want %v", tc.argv, tc.dir, d.Allowed, d.Rule, d.Detail, tc.allow)
		}
	}
	// The allowed command really runs, in enforce mode.
	if err := execIn(ctx, build, "echo", "hello"); err != nil {
		t.Errorf("echo hello under the new policy: %v", err)
	}

	for _, tc := range []struct {
		addr  string
		allow bool
	}{
		{addr, true},
		{"127.0.0.1:" + strconv.Itoa(otherPort), false},
		{"127.0.0.2:" + strconv.Itoa(port), false},
		{"169.254.169.254:80", false},
	} {
		if d := netguard.Check(ctx, "tcp", tc.addr); d.Allowed != tc.allow {
			t.Errorf("dial %s: %+v (rule %v), want allowed=%v", tc.addr, d, d.Rule, tc.allow)
		}
	}
	c, err := (&netguard.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial %s under the new policy: %v", addr, err)
	}
	c.Close()
}

func execIn(ctx context.Context, dir, name string, args ...string) error {
	cmd := procguard.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	_, err := cmd.Output()
	return err
}
