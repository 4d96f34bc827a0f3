//go:build amd64 || arm64

package seccomp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMain lets the test binary act as a helper child: SECCOMP_TEST_HELPER
// names what it does (see helper).
func TestMain(m *testing.M) {
	if h := os.Getenv("SECCOMP_TEST_HELPER"); h != "" {
		helper(h)
		os.Exit(3) // helpers exit by themselves
	}
	os.Exit(m.Run())
}

// helper runs in a child test binary, on its locked main thread (the
// process ends with it, so the thread need not be discarded).
func helper(name string) {
	runtime.LockOSThread()
	fail := func(err error) {
		os.Stderr.WriteString(name + ": " + err.Error() + "\n")
		os.Exit(4)
	}
	if name == "chroot" {
		if err := unix.Chroot(os.Getenv("SECCOMP_TEST_DIR")); err != nil {
			fail(err)
		}
		if err := unix.Chdir("/"); err != nil {
			fail(err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail(err)
	}
	f := Filter{}
	if name == "exec" {
		f.Exec = true
	}
	fd, err := Install(f)
	if err != nil {
		fail(err)
	}
	switch name {
	case "exec":
		// Hand the listener's number to the test on fd 3, wait on fd 4
		// for its supervisor, then exec the arguments after "--": that
		// first exec is trapped too.
		ready, gate := os.NewFile(3, "ready"), os.NewFile(4, "gate")
		if _, err := ready.WriteString(strconv.Itoa(fd) + "\n"); err != nil {
			fail(err)
		}
		var b [1]byte
		if _, err := gate.Read(b[:]); err != nil {
			fail(err)
		}
		unix.Close(fd)
		ready.Close()
		gate.Close()
		i := slices.Index(os.Args, "--")
		if i < 0 || i == len(os.Args)-1 {
			fail(errors.New("no argv after --"))
		}
		argv := os.Args[i+1:]
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "SECCOMP_TEST_") })
		fail(unix.Exec(argv[0], argv, env))
	case "native":
		unix.Syscall(unix.SYS_GETPID, 0, 0, 0)
		os.Exit(0)
	case "x32":
		// An x32 call: killed by the filter (ENOSYS without it, on a
		// kernel without x32 support).
		unix.Syscall(x32Bit|unix.SYS_GETPID, 0, 0, 0)
		os.Exit(0)
	case "chroot":
		// Hand the listener's number to the test, wait for its
		// supervisor, then create two names in the new root.
		os.Stdout.WriteString(strconv.Itoa(fd) + "\n")
		var b [1]byte
		os.Stdin.Read(b[:])
		errs := []error{create("/ok"), create("/.bashrc")}
		for _, err := range errs {
			os.Stdout.WriteString(strconv.Quote(errString(err)) + "\n")
		}
		os.Exit(0)
	}
	fail(errors.New("unknown helper"))
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// runHelper starts the test binary as helper name, bounded.
func runHelper(t *testing.T, name string, env ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, "SECCOMP_TEST_HELPER="+name)...)
	cmd.WaitDelay = bound / 5
	t.Cleanup(func() {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
	})
	return cmd
}

func TestProgramLinks(t *testing.T) {
	for _, f := range []Filter{{}, {Reads: true}, {UnixConnect: true}, {Reads: true, UnixConnect: true}} {
		prog, err := f.program()
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		if len(prog) < len(commonCalls) {
			t.Fatalf("%+v: %d instructions", f, len(prog))
		}
	}
}

// TestInstall checks the listener is close-on-exec and that a second
// listener on the same thread's filter chain is refused (EBUSY).
func TestInstall(t *testing.T) {
	var again error
	stop := newStopper()
	listener, done := filtered(t, Filter{}, func() {
		_, again = Install(Filter{})
	})
	waitDone(t, done, stop)
	flags, fdErr := unix.FcntlInt(uintptr(listener), unix.F_GETFD, 0)
	if fdErr != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("listener fd flags %#x, %v: want FD_CLOEXEC", flags, fdErr)
	}
	if !errors.Is(again, unix.EBUSY) {
		t.Errorf("second Install: %v, want EBUSY", again)
	}
	if err := serve(t, listener, stop, protect)(); err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestForeignABIKills runs an x32 call in a filtered child: the filter
// kills the process with SIGSYS. The native call beside it runs.
func TestForeignABIKills(t *testing.T) {
	if x32Bit == 0 {
		t.Skip("no x32 ABI on " + runtime.GOARCH)
	}
	if err := runHelper(t, "native").Run(); err != nil {
		t.Fatalf("native helper: %v", err)
	}
	cmd := runHelper(t, "x32")
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("x32 helper: %v, want killed", err)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != unix.SIGSYS {
		t.Errorf("x32 helper: %v, want killed by SIGSYS", err)
	}
}

// TestChrootedTask checks absolute names of a chrooted task are put under
// its root. The helper child chroots itself, installs the filter and
// prints the listener's number; the test takes the listener with
// pidfd_getfd(2) and serves it.
func TestChrootedTask(t *testing.T) {
	root := realTempDir(t)
	cmd := runHelper(t, "chroot", "SECCOMP_TEST_DIR="+root)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	first, _ := r.ReadString('\n') // bounded: the helper is killed after bound
	listener := takeListener(t, cmd, first, &stderr)
	rec := &recorder{}
	wait := serve(t, listener, newStopper(), rec.decide)
	stdin.Write([]byte("g"))
	b, _ := io.ReadAll(r)
	rest := string(b)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v; stderr %s", err, stderr.String())
	}
	if err := wait(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if want := "\"ok\"\n\"permission denied\"\n"; rest != want {
		t.Errorf("helper results %q, want %q", rest, want)
	}
	var got []string
	for _, c := range rec.since(0) {
		got = append(got, render(c, root, "/nowhere"))
	}
	want := []string{"openat write D/ok", "openat write D/.bashrc"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls %q, want %q", got, want)
	}
	checkTree(t, root, []string{"ok"}, []string{".bashrc"})
}

// takeListener takes the seccomp listener whose number a helper child
// said in line (see helper), with pidfd_getfd(2); it skips the test where
// the kernel cannot.
func takeListener(t *testing.T, cmd *exec.Cmd, line string, stderr fmt.Stringer) int {
	t.Helper()
	childFd, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("helper said %q (%v); stderr %s", line, err, stderr)
	}
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		t.Skipf("pidfd_open: %v", err)
	}
	defer unix.Close(pidfd)
	listener, err := unix.PidfdGetfd(pidfd, childFd, 0)
	if err != nil {
		t.Skipf("pidfd_getfd: %v", err)
	}
	return listener
}
