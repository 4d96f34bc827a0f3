package procguard_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// judgedTools allows the programs the scripts below start, and denies one
// inner command (git push) that no script spells out literally.
func judgedTools(bin string) policy.ExecSpec {
	rules := allow("sh", "bash", "cat", "echo", "printf", "ls", "true", "xargs", "find", "python3", "git", "wc")
	if out, err := exec.Command("git", "--exec-path").Output(); err == nil {
		// git's helpers (git-upload-pack...) run from its exec path.
		rules = append(rules, policy.ExecRule{Under: strings.TrimSpace(string(out))})
	}
	if _, err := exec.LookPath("make"); err == nil {
		rules = append(rules, allow("make")...)
	}
	return policy.ExecSpec{Rules: append(rules,
		policy.ExecRule{Program: "git", Args: []string{"push"}, Deny: true},
		policy.ExecRule{Under: bin})}
}

// judgedEnv is sandboxEnv without pastArgv: the static reading of the
// command line refuses what it refuses, so a test sees what exec-time
// judgement lets through.
func judgedEnv(t *testing.T, spec policy.Spec, opts ...audit.Option) *env {
	t.Helper()
	return newSandboxEnv(t, spec, opts...)
}

// execJudged runs script in the sandbox through sh -c (or argv when
// given) and returns its output, error and command.
func execJudged(t *testing.T, e *env, argv ...string) (string, error, *procguard.Cmd) {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	if ok, why := sandbox.ExecJudgeable(); !ok {
		t.Skipf("execs are not judged here: %s", why)
	}
	c := procguard.CommandContext(ctx, argv[0], argv[1:]...)
	c.Dir = e.dir
	out, err := c.CombinedOutput()
	if err == nil && !c.Confinement.ExecJudged {
		t.Fatalf("%q ran where its execs were not judged: %s %v", argv, c.Confinement.SandboxNote, c.Confinement.Sandbox)
	}
	return string(out), err, c
}

// TestScriptsJudgedAtExec: scripts the static reading of a command line
// cannot read ahead (loops, variables, command substitutions, set -e,
// computed redirection targets, xargs and find -exec under deny rules, a
// script file) run, because every program they start is judged when it
// starts; each program is in the command's Tree with its parent, and an
// inner git push, spelled nowhere in the command line, is refused at its
// exec (EACCES in the script) and recorded with its parent chain.
func TestScriptsJudgedAtExec(t *testing.T) {
	for _, p := range []string{"bash", "python3", "git", "xargs", "find"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
	bin, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	e := judgedEnv(t, policy.Spec{Exec: judgedTools(bin)})
	must(t, os.WriteFile(filepath.Join(e.dir, "run.sh"), []byte("for f in *.txt; do n=$(wc -l < \"$f\"); echo \"$f $n\"; done\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(e.dir, "a.txt"), []byte("1\n2\n"), 0o644))
	// A workspace script the policy allows (under bin), reached by a
	// relative name and through a link.
	must(t, os.WriteFile(filepath.Join(bin, "tool"), []byte("#!/bin/sh -e\necho tool \"$@\"\n"), 0o755))
	must(t, os.Symlink(filepath.Join(bin, "tool"), filepath.Join(e.dir, "tool")))
	must(t, os.Symlink("tool", filepath.Join(e.dir, "tool-link")))
	if out, err := exec.Command("git", "init", "-q", filepath.Join(e.dir, "repo")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	shBase := realBase(t, "sh")
	cases := []struct {
		name string
		argv []string
		want string   // in the output
		runs []string // base names of programs the tree must have started
	}{
		{"script file with a loop", []string{"sh", "run.sh"}, "a.txt 2", []string{"wc"}},
		{"set -euo pipefail and substitution", []string{"bash", "-c", `set -euo pipefail; for f in $(ls *.txt); do cat "$f"; done`}, "1\n2", []string{"ls", "cat"}},
		{"variable", []string{"sh", "-c", `echo "$HOME" | wc -c`}, "", []string{"wc"}},
		{"computed redirection", []string{"sh", "-c", `out=notes.txt; /usr/bin/printf 'hi\n' > "$out"; cat "$out"`}, "hi", []string{realBase(t, "printf"), "cat"}},
		{"xargs", []string{"sh", "-c", `ls *.txt | xargs cat`}, "1\n2", []string{"xargs", "cat"}},
		{"find -exec", []string{"find", ".", "-name", "a.txt", "-exec", "cat", "{}", ";"}, "1\n2", []string{"cat"}},
		{"wrappers with no rule of their own", []string{"sh", "-c", `f=a.txt; env timeout 5 cat "$f"`}, "1\n2", []string{realBase(t, "env"), realBase(t, "timeout"), "cat"}},
		{"nested sh -c", []string{"sh", "-c", `sh -c 'sh -c "/bin/echo deep"'`}, "deep", []string{shBase, shBase, realBase(t, "echo")}},
		{"#! script, relative and through a link", []string{"sh", "-c", `./tool one; ./tool-link two`}, "tool one\ntool two", []string{"tool", "tool"}},
		{"exec -a", []string{"bash", "-c", `exec -a renamed /bin/echo hello`}, "hello", []string{realBase(t, "echo")}},
		{"python subprocess", []string{"python3", "-c", `import subprocess; subprocess.run(["echo", "from-python"], check=True)`}, "from-python", []string{realBase(t, "echo")}},
		{"git starts its helpers", []string{"git", "ls-remote", "file://" + e.dir + "/repo"}, "", []string{"git"}},
	}
	if _, err := exec.LookPath("make"); err == nil {
		must(t, os.WriteFile(filepath.Join(e.dir, "Makefile"), []byte("all:\n\tfor i in 1 2; do echo step$$i; done\n"), 0o644))
		cases = append(cases, struct {
			name string
			argv []string
			want string
			runs []string
		}{"make recipe", []string{"make", "-s"}, "step1\nstep2", []string{shBase}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err, c := execJudged(t, e, tc.argv...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", tc.argv, err, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("output %q lacks %q", out, tc.want)
			}
			tree := c.Tree()
			if len(tree) == 0 || tree[0].PPid != 0 || tree[0].Pid != c.Confinement.Sandbox.Pid {
				t.Fatalf("the tree does not start with the command: %v", tree)
			}
			var ran []string
			for _, r := range tree[1:] {
				ran = append(ran, filepath.Base(r.Program))
				if r.Outcome != audit.Allowed {
					t.Errorf("%v", r)
				}
			}
			for _, want := range tc.runs {
				i := slices.Index(ran, want)
				if i < 0 {
					t.Errorf("the tree %q lacks %s:\n%v", ran, want, tree)
					continue
				}
				ran = slices.Delete(ran, i, i+1)
			}
		})
	}
}

// TestInnerScriptReadAhead: a script started inside the command is read
// ahead when it starts, as the command line was: a literal git push in
// it refuses the shell that would run it, so git never starts.
func TestInnerScriptReadAhead(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	e := judgedEnv(t, policy.Spec{Exec: judgedTools(t.TempDir())})
	out, err, c := execJudged(t, e, "sh", "-c", `x=1; sh -c "git push origin main"; echo "inner=$?"`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "inner=126") {
		t.Errorf("the inner shell ran: %q", out)
	}
	tree := c.Tree()
	for _, r := range tree {
		if filepath.Base(r.Program) == "git" {
			t.Errorf("git started: %v", tree)
		}
	}
	if last := tree[len(tree)-1]; last.Outcome != audit.Denied || last.Rule == nil || !strings.Contains(last.Rule.Pattern, "push") {
		t.Errorf("the inner shell's refusal: %v (rule %v)", last, last.Rule)
	}
}

// TestInnerExecDenied: a git push computed inside a script passes the
// static reading (it cannot read it) and is refused when git starts: the
// script sees EACCES (exit 126) and goes on, the record names the
// program, its argv, its parent and the tool call. A program no rule
// allows (a soft denial) is refused the same way, and in Warn mode it
// runs and is recorded as warned; the deny rule holds in both modes.
func TestInnerExecDenied(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, mode := range []audit.Mode{audit.Enforce, audit.Warn} {
		t.Run(mode.String(), func(t *testing.T) {
			spec := judgedTools(t.TempDir())
			// Landlock lets a child execute only the programs of allow
			// rules (and their interpreters): a program Warn lets through
			// must be executable to Landlock too.
			spec.LandlockExecAny = true
			e := judgedEnv(t, policy.Spec{Exec: spec}, audit.WithMode(audit.Exec, mode))
			if out, err := exec.Command("git", "init", "-q", e.dir).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v %s", err, out)
			}
			// A workspace script no rule allows (a soft denial).
			must(t, os.WriteFile(filepath.Join(e.dir, "unruled.sh"), []byte("#!/bin/sh\necho unruled-ran\n"), 0o755))
			ctx, done := audit.WithCall(e.ctx, "agent-shell", nil)
			defer done()
			saved := e.ctx
			e.ctx = ctx
			defer func() { e.ctx = saved }()
			e.rec.Reset()
			out, err, c := execJudged(t, e, "sh", "-c", `c=push; git $c origin main; echo "push=$?"; p=./unruled.sh; $p; echo "unruled=$?"`)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var push *procguard.ProgramRun
			tree := c.Tree()
			for i := range tree {
				if slices.Equal(tree[i].Argv, []string{"git", "push", "origin", "main"}) {
					push = &tree[i]
				}
			}
			if push == nil {
				t.Fatalf("the tree has no git push: %v", tree)
			}
			if push.PPid != tree[0].Pid {
				t.Errorf("git push's parent %d, want the shell %d", push.PPid, tree[0].Pid)
			}
			var rec *audit.Record
			for _, r := range e.rec.Records() {
				if r.Protocol == audit.Exec && slices.Equal(r.Argv, push.Argv) {
					rec = &r
				}
			}
			if rec == nil || rec.Tool != "agent-shell" || !strings.Contains(rec.Detail, "in the sandbox") {
				t.Fatalf("no record of the push attributed to the tool call: %+v", rec)
			}
			if !strings.Contains(out, "push=126") || push.Outcome != audit.Denied || rec.Outcome != audit.Denied {
				t.Errorf("want the push refused with EACCES (126) in every mode: %q %v %v", out, push.Outcome, rec.Outcome)
			}
			var unruled *procguard.ProgramRun
			for i := range tree {
				if filepath.Base(tree[i].Program) == "unruled.sh" {
					unruled = &tree[i]
				}
			}
			if unruled == nil {
				t.Fatalf("the tree has no unruled.sh: %v", tree)
			}
			switch mode {
			case audit.Enforce:
				if !strings.Contains(out, "unruled=126") || strings.Contains(out, "unruled-ran") || unruled.Outcome != audit.Denied {
					t.Errorf("enforce: want unruled.sh refused: %q %v", out, unruled.Outcome)
				}
			case audit.Warn:
				if !strings.Contains(out, "unruled-ran") || unruled.Outcome != audit.Warned {
					t.Errorf("warn: want unruled.sh run and recorded as warned: %q %v", out, unruled.Outcome)
				}
			}
		})
	}
}

// realBase is the base name of the real file a program name runs.
func realBase(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed", name)
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(r)
}

// TestLoaderJudgedAsItsProgram: the dynamic loader run as a program is
// judged as the program it maps: an allowed one runs, one no rule allows
// is refused, and a loader option that preloads code is a hard denial.
func TestLoaderJudgedAsItsProgram(t *testing.T) {
	loader, err := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	if err != nil {
		t.Skip("no x86-64 dynamic loader at /lib64")
	}
	e := judgedEnv(t, policy.Spec{Exec: judgedTools(t.TempDir())})
	idProg, err := exec.LookPath("id")
	if err != nil {
		t.Skip("id is not installed")
	}
	script := loader + ` /bin/cat a.txt; echo "cat=$?"; ` + loader + ` ` + idProg + ` -u; echo "id=$?"; ` +
		loader + ` --preload /nonexistent.so /bin/cat a.txt; echo "preload=$?"`
	must(t, os.WriteFile(filepath.Join(e.dir, "a.txt"), []byte("through the loader\n"), 0o644))
	out, err, c := execJudged(t, e, "sh", "-c", script)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"through the loader", "cat=0", "id=126", "preload=126"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var outcomes []string
	for _, r := range c.Tree()[1:] {
		outcomes = append(outcomes, filepath.Base(r.Program)+" "+r.Outcome.String())
	}
	want := []string{"cat allowed", "id denied", "cat denied"}
	if !slices.Equal(outcomes, want) {
		t.Errorf("judged %q, want %q (each as the program the loader maps)", outcomes, want)
	}
}

// TestRepeatedExecs: without OnCall, an exec the host allowed is let run
// again by the sandbox without a round trip, and still recorded each time;
// with OnCall, which sees every call, each one is asked.
func TestRepeatedExecs(t *testing.T) {
	for _, withOnCall := range []bool{false, true} {
		t.Run(map[bool]string{false: "policy alone", true: "OnCall"}[withOnCall], func(t *testing.T) {
			var mu sync.Mutex
			asked := 0
			opts := []audit.Option{audit.WithLogAllows()}
			if withOnCall {
				opts = append(opts, audit.WithOnCall(func(_ context.Context, ev *audit.Event) audit.Verdict {
					if ev.Protocol == audit.Exec && len(ev.Argv) > 0 && ev.Argv[0] == "/bin/true" {
						mu.Lock()
						asked++
						mu.Unlock()
					}
					return audit.Continue
				}))
			}
			e := judgedEnv(t, policy.Spec{Exec: judgedTools(t.TempDir())}, opts...)
			out, err, c := execJudged(t, e, "sh", "-c", `for i in 1 2 3 4 5; do /bin/true; done; echo done`)
			if err != nil || !strings.Contains(out, "done") {
				t.Fatalf("%v %q", err, out)
			}
			runs, repeats := 0, 0
			for _, r := range e.rec.Records() {
				if r.Protocol == audit.Exec && len(r.Argv) > 0 && r.Argv[0] == "/bin/true" {
					runs++
					if r.Outcome != audit.Allowed {
						t.Errorf("record %+v", r)
					}
					if strings.Contains(r.Detail, "a repeat of an allowed exec") {
						repeats++
					}
				}
			}
			tree := 0
			for _, r := range c.Tree() {
				if filepath.Base(r.Program) == "true" {
					tree++
				}
			}
			if runs != 5 || tree != 5 {
				t.Errorf("records %d, tree %d: want every run of /bin/true (5)", runs, tree)
			}
			switch {
			case withOnCall && (asked != 5 || repeats != 0):
				t.Errorf("with OnCall: asked %d times, %d repeats; want 5 and 0", asked, repeats)
			case !withOnCall && repeats != 4:
				t.Errorf("policy alone: %d repeats, want 4 (the first is asked)", repeats)
			}
		})
	}
}
