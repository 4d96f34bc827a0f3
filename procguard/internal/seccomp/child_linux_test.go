//go:build amd64 || arm64

package seccomp

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
)

// runChild starts cmd from a thread carrying filter f and waits for it
// there, with Serve deciding through rec. It returns when the child
// exited and Serve returned (the listener hung up).
//
// f must not trap exec: the child is forked with vfork, and the forking
// thread cannot answer the runtime until the child has exec'd, so a
// garbage collection that starts meanwhile would wait for a supervisor
// that waits for it. runExecChild runs such children.
func runChild(t *testing.T, f Filter, cmd *exec.Cmd, rec *recorder) (waitErr error) {
	t.Helper()
	if f.Exec {
		t.Fatal("runChild: a filter that traps exec needs runExecChild")
	}
	stop := newStopper()
	var startErr error
	listener, done := filtered(t, f, func() {
		if startErr = cmd.Start(); startErr == nil {
			waitErr = cmd.Wait()
		}
	})
	wait := serve(t, listener, stop, rec.decide)
	waitDone(t, done, stop)
	if err := wait(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if startErr != nil {
		t.Fatalf("start: %v", startErr)
	}
	return waitErr
}

// TestChildInherits runs a shell script that builds protected names out of
// variables and command substitutions: the child (and the commands it
// runs) carry the filter, and the denials hold.
func TestChildInherits(t *testing.T) {
	root := realTempDir(t)
	const script = `
d=$1
rc=".bash"; rc="${rc}rc"
hook="$(printf '%s/%s' "$d/a/.git/hooks" "pre-commit")"
echo x > "$d/$rc"; echo "bashrc=$?"
mkdir -p "$(dirname "$hook")"; echo "mkdir=$?"
echo '#!/bin/sh' > "$hook"; echo "hook=$?"
echo x > "$d/y"; echo "y=$?"
mv "$d/y" "$d/z"; echo "mv=$?"
mv "$d/z" "$d/$rc"; echo "mvrc=$?"
ln -s /etc/passwd "$d/$rc"; echo "lnrc=$?"
ln -s z "$d/lnz"; echo "ln=$?"
(cd "$d/a" && echo x > "./$rc"); echo "relrc=$?"
sh -c 'echo x > "$1/.bashrc"' sh "$d/a/.git"; echo "nested=$?"
`
	cmd, stdout, stderr := shell(t, script, root)
	rec := &recorder{}
	if err := runChild(t, Filter{}, cmd, rec); err != nil {
		t.Fatalf("sh: %v\n%s", err, stderr)
	}
	st := statuses(stdout.String())
	for _, k := range []string{"mkdir", "y", "mv", "ln"} {
		if st[k] != "0" {
			t.Errorf("%s: status %q, want 0", k, st[k])
		}
	}
	for _, k := range []string{"bashrc", "hook", "mvrc", "lnrc", "relrc", "nested"} {
		if st[k] == "0" || st[k] == "" {
			t.Errorf("%s: status %q, want a failure", k, st[k])
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	checkTree(t, root, []string{"a/.git/hooks/", "z", "lnz"},
		[]string{".bashrc", "a/.bashrc", "a/.git/.bashrc", "a/.git/hooks/pre-commit", "y"})

	var sawMove, sawRelative, sawChild bool
	for _, c := range rec.since(0) {
		if c.Pid != os.Getpid() {
			sawChild = true
		}
		if c.Op == policy.OpMove && len(c.Paths) == 2 && c.Paths[0].Name == root+"/y" && c.Paths[1].Name == root+"/z" {
			sawMove = true
		}
		if len(c.Paths) == 1 && c.Paths[0].Name == root+"/a/.bashrc" {
			sawRelative = true
		}
	}
	if !sawChild || !sawMove || !sawRelative {
		var calls []string
		for _, c := range rec.since(0) {
			calls = append(calls, c.String())
		}
		t.Errorf("child calls: child=%v move y->z=%v relative ./.bashrc=%v; calls:\n%s",
			sawChild, sawMove, sawRelative, strings.Join(calls, "\n"))
	}
}

// TestChildReads checks a read-deny name with Filter.Reads: cat cannot
// read it, and everything else (the loader's libraries too) reads fine.
func TestChildReads(t *testing.T) {
	root := realTempDir(t)
	makeTree(t, root, []string{"secret.txt", "public.txt"})
	cmd, stdout, stderr := shell(t, `cat "$1/secret.txt"; echo "secret=$?"; cat "$1/public.txt"; echo; echo "public=$?"`, root)
	rec := &recorder{}
	if err := runChild(t, Filter{Reads: true}, cmd, rec); err != nil {
		t.Fatalf("sh: %v\n%s", err, stderr)
	}
	st := statuses(stdout.String())
	if st["secret"] == "0" || st["public"] != "0" || !strings.Contains(stdout.String(), "\nx\n") {
		t.Errorf("stdout %q, stderr %q: want secret refused, public read", stdout, stderr)
	}
	reads := 0
	for _, c := range rec.since(0) {
		if c.Op == policy.OpRead {
			reads++
		}
	}
	if reads < 2 {
		t.Errorf("%d reads judged, want the loader's and cat's", reads)
	}
}

// TestChildTTY: /dev/tty is the caller's controlling terminal. A child in
// a session of its own with a pseudo-terminal as its terminal gets that
// terminal through the supervisor; without one it gets ENXIO, whatever
// terminal the supervisor's process has.
func TestChildTTY(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	const program = `
import os, fcntl, termios, errno
os.setsid()
try:
    os.open("/dev/tty", os.O_WRONLY)
    print("before=ok")
except OSError as e:
    print("before=" + errno.errorcode[e.errno])
m, s = os.openpty()
fcntl.ioctl(s, termios.TIOCSCTTY, 0)
fd = os.open("/dev/tty", os.O_WRONLY)
print("same=%s" % (os.fstat(fd).st_rdev == os.fstat(s).st_rdev))
`
	cmd, stdout, stderr := shell(t, `exec "$1" -c "$2"`, py, program)
	rec := &recorder{}
	if err := runChild(t, Filter{}, cmd, rec); err != nil {
		t.Fatalf("python: %v\n%s", err, stderr)
	}
	st := statuses(stdout.String())
	if st["before"] != "ENXIO" || st["same"] != "True" {
		t.Errorf("before=%q same=%q, want ENXIO and the child's own terminal\nstderr: %s", st["before"], st["same"], stderr)
	}
	var judged int
	for _, c := range rec.since(0) {
		if len(c.Paths) == 1 && c.Paths[0].Name == "/dev/tty" && c.Flags == unix.O_WRONLY|unix.O_CLOEXEC {
			judged++ // python's two opens
		}
	}
	if judged != 2 {
		var all []string
		for _, c := range rec.since(0) {
			all = append(all, c.String())
		}
		t.Errorf("%d opens of /dev/tty judged, want 2:\n%s", judged, strings.Join(all, "\n"))
	}
}

// runExecChild runs argv in a child that carries a filter trapping exec,
// with Serve deciding through rec in this process. The child is the test
// binary as the "exec" helper: it installs the filter itself and hands
// over the listener, so no thread of this process waits in a trapped
// exec. It returns the child's exit error once Serve has returned.
func runExecChild(t *testing.T, argv []string, stdout, stderr *strings.Builder, rec *recorder) error {
	t.Helper()
	cmd := runHelper(t, "exec")
	cmd.Args = append(append(cmd.Args, "--"), argv...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	readyR, readyW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer readyR.Close()
	gateR, gateW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer gateW.Close()
	cmd.ExtraFiles = []*os.File{readyW, gateR}
	err = cmd.Start()
	readyW.Close()
	gateR.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Bounded: runHelper's context kills the helper after bound, which
	// closes readyW.
	first, _ := bufio.NewReader(readyR).ReadString('\n')
	listener := takeListener(t, cmd, first, stderr)
	wait := serve(t, listener, newStopper(), rec.decide)
	if _, err := gateW.Write([]byte("g")); err != nil {
		t.Fatal(err)
	}
	waitErr := cmd.Wait()
	if err := wait(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	return waitErr
}
