//go:build amd64 || arm64

package seccomp

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestExecJudged runs a shell that starts programs every way a child can:
// a "#!" script (with an interpreter argument), a symbolic link, a
// relative name, the dynamic loader run as a program, a memfd through
// execveat and through /proc/self/fd. decide sees each exec once, with the
// program resolved, the argv and environment as passed, the interpreter
// chain and the program the loader maps; a denied exec fails with EACCES
// in the child and runs nothing.
func TestExecJudged(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("python3 is needed for the memfd exec")
	}
	dir := realTempDir(t)
	script := filepath.Join(dir, "hello.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh -e\necho script \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/echo", filepath.Join(dir, "link-echo")); err != nil {
		t.Fatal(err)
	}
	denied := filepath.Join(dir, "denied-prog")
	if err := os.WriteFile(denied, []byte("#!/bin/sh\necho RAN-DENIED\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	loader, err := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	if err != nil && runtimeLoader == "" {
		t.Skip("no dynamic loader at the usual path")
	}
	if runtimeLoader != "" {
		loader = runtimeLoader
	}
	const memfdExec = `
import os, sys
fd = os.memfd_create("x", 0)
os.write(fd, open("/bin/true", "rb").read())
try:
    os.execve(fd, ["memfd"], {})
except OSError as e:
    print("fexecve", e.errno)
try:
    os.execv("/proc/self/fd/%d" % fd, ["memfd"])
except OSError as e:
    print("procfd", e.errno)
`
	sh := `
cd "$1"
./hello.sh a "b c"; echo "script=$?"
./link-echo linked; echo "link=$?"
FOO=bar ./denied-prog; echo "denied=$?"
` + loader + ` /bin/echo loaded; echo "loader=$?"
python3 -c '` + memfdExec + `'
`
	var stdout, stderr strings.Builder
	rec := &recorder{hook: func(c *Call) unix.Errno {
		if c.Exec != nil && filepath.Base(c.Paths[0].Name) == "denied-prog" {
			return unix.EACCES
		}
		return 0
	}}
	if err := runExecChild(t, []string{"/bin/sh", "-c", sh, "sh", dir}, &stdout, &stderr, rec); err != nil {
		t.Fatalf("child: %v\n%s\n%s", err, &stdout, &stderr)
	}
	out := stdout.String()
	for _, want := range []string{"script a b c", "script=0", "linked", "link=0", "denied=126", "loaded", "loader=0", "fexecve 13", "procfd 13"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, out, &stderr)
		}
	}
	if strings.Contains(out, "RAN-DENIED") {
		t.Errorf("the denied program ran:\n%s", out)
	}
	var execs []*Call
	for _, c := range rec.since(0) {
		if c.Exec != nil {
			execs = append(execs, c)
		}
	}
	find := func(base string) *Call {
		for _, c := range execs {
			if filepath.Base(c.Paths[0].Name) == base {
				return c
			}
		}
		t.Fatalf("no exec of %s among %d", base, len(execs))
		return nil
	}
	c := find("hello.sh")
	if c.Paths[0].Name != script || !slices.Equal(c.Exec.Argv, []string{"./hello.sh", "a", "b c"}) || c.Exec.Dir != dir {
		t.Errorf("script exec: %s argv %q dir %q", c.Paths[0].Name, c.Exec.Argv, c.Exec.Dir)
	}
	if len(c.Exec.Interp) != 1 || c.Exec.Interp[0].Name != "/bin/sh" || c.Exec.Interp[0].Arg != "-e" {
		t.Errorf("script interpreters: %+v", c.Exec.Interp)
	}
	if got, want := c.Exec.KernelArgv(), []string{"/bin/sh", "-e", "./hello.sh", "a", "b c"}; !slices.Equal(got, want) {
		t.Errorf("KernelArgv = %q, want %q", got, want)
	}
	echo, _ := filepath.EvalSymlinks("/bin/echo")
	if c := find(filepath.Base(echo)); c.Paths[0].Name != echo {
		t.Errorf("link exec resolved to %s, want %s", c.Paths[0].Name, echo)
	}
	c = find("denied-prog")
	if !slices.Contains(c.Exec.Env, "FOO=bar") {
		t.Errorf("denied exec's environment lacks FOO=bar: %q", c.Exec.Env)
	}
	c = find(filepath.Base(loader))
	if c.Exec.Loaded == nil || c.Exec.Loaded.Path.Name != echo || !slices.Equal(c.Exec.Loaded.Argv, []string{"/bin/echo", "loaded"}) {
		t.Errorf("loader exec: Loaded = %+v", c.Exec.Loaded)
	}
	for _, c := range execs {
		if c.Paths[0].Name == "" || strings.HasPrefix(c.Paths[0].Name, "/memfd") {
			t.Errorf("an anonymous file reached decide: %s", c)
		}
	}
}

// runtimeLoader is set where the loader is not at the amd64 path.
var runtimeLoader = func() string {
	for _, p := range []string{"/lib/ld-linux-aarch64.so.1"} {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
	}
	return ""
}()
