//go:build linux

package sandbox

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/policy"
)

// These tests are a hostile child: a Python program in the sandbox that
// tries to reach a protected or read-denied object by another name (a
// /proc alias, a link, openat2's RESOLVE_IN_ROOT), by another thread
// rewriting the name while the supervisor reads it, or through a call the
// supervisor does not trap. Each checks the real effect on disk or at a
// listener, and that the child ran and tried (its control attempts
// succeed, its report line is there).

// attacker runs a Python program in a sandbox whose write root is dir,
// with the policy spec given, and returns its stdout (one "key=value" line
// per attempt). The program gets dir as sys.argv[1] and extra as the rest.
func attacker(t *testing.T, dir string, files policy.Spec, program string, extra ...string) map[string]string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	py, _ = filepath.EvalSymlinks(py)
	files.WriteRoots = append(files.WriteRoots, dir)
	spec := &Spec{
		Path:  py,
		Args:  append([]string{"python3", "-c", program, dir}, extra...),
		Env:   []string{"PYTHONDONTWRITEBYTECODE=1"},
		Dir:   dir,
		Files: []policy.Spec{files},
	}
	var stdout, stderr bytes.Buffer
	l, state, err := run(t, spec, Stdio{Stdout: &stdout, Stderr: &stderr})
	if err != nil || !state.Success() {
		t.Fatalf("attacker: %v %v\nstdout:\n%s\nstderr:\n%s", err, state, &stdout, &stderr)
	}
	if l.Report == nil || !l.Report.Seccomp {
		t.Skipf("no supervisor here: %v", l.Report)
	}
	out := map[string]string{}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	if out["done"] != "1" {
		t.Fatalf("the attacker did not finish:\nstdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	}
	t.Logf("attacker:\n%s", &stdout)
	return out
}

// pyTry is a Python helper the programs share: try_(key, fn) prints
// key=ok or key=<errno name>.
const pyTry = `
import os, sys, errno, ctypes, threading, time, socket
def try_(key, fn):
    try:
        fn()
        print(key + "=ok", flush=True)
    except OSError as e:
        print(key + "=" + errno.errorcode.get(e.errno, str(e.errno)), flush=True)
def write(path):
    def f():
        with open(path, "w") as fh:
            fh.write("evil")
    return f
d = sys.argv[1]
`

// TestAttackProcAliases creates protected names through every /proc alias
// of the working directory and root, at depth, and through a link into
// /proc: all refused, while the same aliases work for an ordinary name.
func TestAttackProcAliases(t *testing.T) {
	dir := realDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "a/b/.git/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := attacker(t, dir, policy.Spec{}, pyTry+`
fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
try_("control_cwd", write("/proc/self/cwd/ok1"))
try_("control_fd", write("/proc/self/fd/%d/ok2" % fd))
try_("cwd", write("/proc/self/cwd/.bashrc"))
try_("thread_self", write("/proc/thread-self/cwd/.bashrc"))
try_("root", write("/proc/self/root" + d + "/.env"))
try_("fd", write("/proc/self/fd/%d/.bashrc" % fd))
try_("pid", write("/proc/%d/cwd/a/b/.git/ORIG_HEAD" % os.getpid()))
try_("hook", write("/proc/self/cwd/a/b/.git/hooks/pre-commit"))
os.symlink("/proc/self/cwd", "lnk")
try_("symlink", write("lnk/.bashrc"))
try_("symlink_deep", write(d + "/lnk/a/b/.git/hooks/pre-commit"))
print("done=1")
`)
	for _, k := range []string{"control_cwd", "control_fd", "pid"} {
		if out[k] != "ok" {
			t.Errorf("%s = %q, want ok (the alias must work for an ordinary name)", k, out[k])
		}
	}
	for _, k := range []string{"cwd", "thread_self", "root", "fd", "hook", "symlink", "symlink_deep"} {
		if out[k] != "EACCES" {
			t.Errorf("%s = %q, want EACCES", k, out[k])
		}
	}
	for _, p := range []string{".bashrc", ".env", "a/b/.git/hooks/pre-commit"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}

// TestAttackRaceName has a second thread rewrite the name the first passes
// to open(O_CREAT), between an allowed name and .bashrc, for 2 seconds:
// the supervisor reads the name once and acts on what it read, so
// .bashrc never appears, while the allowed name is created.
func TestAttackRaceName(t *testing.T) {
	dir := realDir(t)
	out := attacker(t, dir, policy.Spec{}, pyTry+`
libc = ctypes.CDLL(None, use_errno=True)
good = (d + "/zbashrc").encode()
bad = (d + "/.bashrc").encode()
buf = ctypes.create_string_buffer(good, len(good) + 1)
stop = False
def flip():
    while not stop:
        ctypes.memmove(buf, bad, len(bad))
        ctypes.memmove(buf, good, len(good))
th = threading.Thread(target=flip)
th.start()
tries = created = refused = 0
end = time.time() + 2.0
while time.time() < end:
    fd = libc.open(buf, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644)
    tries += 1
    if fd >= 0:
        created += 1
        os.close(fd)
    else:
        refused += 1
stop = True
th.join()
print("tries=%d" % tries)
print("created=%d" % created)
print("refused=%d" % refused)
print("bashrc=%s" % os.path.exists(bad))
print("done=1")
`)
	tries, _ := strconv.Atoi(out["tries"])
	created, _ := strconv.Atoi(out["created"])
	refused, _ := strconv.Atoi(out["refused"])
	if tries < 100 || created == 0 || refused == 0 {
		t.Errorf("tries=%d created=%d refused=%d: the race did not run both ways", tries, created, refused)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".bashrc")); err == nil || out["bashrc"] != "False" {
		t.Fatalf(".bashrc was created by the race (after %d tries)", tries)
	}
}

// TestAttackReadDeny reads a read-denied file by other names: a hard link
// made before the command, /proc/self/root, openat2 with RESOLVE_IN_ROOT,
// one below the scan's depth; and tries to give it a new name (link,
// rename). All refused; an ordinary file reads.
func TestAttackReadDeny(t *testing.T) {
	dir := realDir(t)
	deep := filepath.Join(dir, "a/b/c/d/e/f/g/h")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "top.key"), filepath.Join(deep, "deep.key")} {
		if err := os.WriteFile(p, []byte("SECRET"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "public.txt"), []byte("public"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "top.key"), filepath.Join(dir, "innocent")); err != nil {
		t.Fatal(err)
	}
	out := attacker(t, dir, policy.Spec{ReadDeny: []string{"*.key"}}, pyTry+`
deep = sys.argv[2]
def read(path):
    def f():
        with open(path) as fh:
            if "SECRET" in fh.read():
                print("leak=" + path, flush=True)
    return f
def openat2_in_root(path):
    def f():
        libc = ctypes.CDLL(None, use_errno=True)
        how = (ctypes.c_uint64 * 3)(os.O_RDONLY, 0, 0x10)  # RESOLVE_IN_ROOT
        root = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
        fd = libc.syscall(437, root, path.encode(), how, 24)
        if fd < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
        data = os.read(fd, 100)
        os.close(fd)
        if b"SECRET" in data:
            print("leak=openat2", flush=True)
    return f
try_("control", read(d + "/public.txt"))
try_("direct", read(d + "/top.key"))
try_("hardlink", read(d + "/innocent"))
try_("proc_root", read("/proc/self/root" + deep + "/deep.key"))
try_("deep", read(deep + "/deep.key"))
try_("in_root", openat2_in_root(deep + "/deep.key"))
try_("link", lambda: os.link(deep + "/deep.key", d + "/copy"))
try_("rename", lambda: os.rename(deep + "/deep.key", d + "/moved"))
try_("symlink_read", lambda: (os.symlink(deep + "/deep.key", d + "/sl"), read(d + "/sl")()))
print("done=1")
`, deep)
	if out["control"] != "ok" {
		t.Errorf("control = %q, want ok", out["control"])
	}
	if v, ok := out["leak"]; ok {
		t.Errorf("the secret leaked through %s", v)
	}
	for _, k := range []string{"direct", "hardlink", "proc_root", "deep", "in_root", "link", "rename", "symlink_read"} {
		if v := out[k]; v == "ok" || v == "" {
			t.Errorf("%s = %q, want a refusal", k, v)
		}
	}
	for _, p := range []string{"copy", "moved"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was made", p)
		}
	}
	if _, err := os.Stat(filepath.Join(deep, "deep.key")); err != nil {
		t.Errorf("deep.key was moved: %v", err)
	}
}

// TestAttackMetadataOutsideRoots changes mode, times and extended
// attributes of a file outside every write root, by its name, through
// /proc/self/root and through a descriptor: the read-only root refuses
// each, and the file on disk is unchanged; inside the root they work.
func TestAttackMetadataOutsideRoots(t *testing.T) {
	dir := realDir(t)
	outside := filepath.Join(realDir(t), "victim")
	if err := os.WriteFile(outside, []byte("v"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(outside, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine"), []byte("m"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := attacker(t, dir, policy.Spec{}, pyTry+`
v = sys.argv[2]
try_("control_chmod", lambda: os.chmod(d + "/mine", 0o600))
try_("chmod", lambda: os.chmod(v, 0o777))
try_("chmod_alias", lambda: os.chmod("/proc/self/root" + v, 0o777))
try_("utime_alias", lambda: os.utime("/proc/self/root" + v, (0, 0)))
fd = os.open(v, os.O_RDONLY)
try_("fchmod", lambda: os.fchmod(fd, 0o777))
try_("futime", lambda: os.utime(fd, (0, 0)))
try_("fsetxattr", lambda: os.setxattr(fd, "user.evil", b"1"))
print("done=1")
`, outside)
	if out["control_chmod"] != "ok" {
		t.Errorf("control_chmod = %q, want ok", out["control_chmod"])
	}
	for _, k := range []string{"chmod", "chmod_alias", "utime_alias", "fchmod", "futime", "fsetxattr"} {
		if v := out[k]; v == "ok" || v == "" {
			t.Errorf("%s = %q, want a refusal", k, v)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(outside, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o777 != 0o644 || st.Mtim.Sec != old.Unix() {
		t.Errorf("the file outside the roots changed: mode %o, mtime %d", st.Mode&0o777, st.Mtim.Sec)
	}
	if n, _ := unix.Getxattr(outside, "user.evil", nil); n > 0 {
		t.Errorf("the file outside the roots has the child's xattr")
	}
}

// TestAttackUnixSocketAlias connects to a host socket outside the write
// roots through /proc/self/root: refused, and the host's listener sees no
// connection; a socket inside the root connects and its bytes arrive.
func TestAttackUnixSocketAlias(t *testing.T) {
	dir := realDir(t)
	outsidePath := filepath.Join(realDir(t), "host.sock")
	insidePath := filepath.Join(dir, "in.sock")
	var got [2]chan string
	for i, p := range []string{outsidePath, insidePath} {
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		ch := make(chan string, 4)
		got[i] = ch
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.SetDeadline(time.Now().Add(testTimeout))
				b := make([]byte, 64)
				n, _ := c.Read(b)
				ch <- string(b[:n])
				c.Close()
			}
		}()
	}
	out := attacker(t, dir, policy.Spec{}, pyTry+`
def conn(path, msg):
    def f():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.sendall(msg)
        s.close()
    return f
try_("control", conn(sys.argv[3], b"inside"))
try_("direct", conn(sys.argv[2], b"direct"))
try_("alias", conn("/proc/self/root" + sys.argv[2], b"alias"))
print("done=1")
`, outsidePath, insidePath)
	if out["control"] != "ok" {
		t.Errorf("control = %q, want ok", out["control"])
	}
	select {
	case m := <-got[1]:
		if m != "inside" {
			t.Errorf("the inside listener read %q", m)
		}
	case <-time.After(testTimeout):
		t.Error("the inside listener got nothing")
	}
	for _, k := range []string{"direct", "alias"} {
		if v := out[k]; v == "ok" || v == "" {
			t.Errorf("%s = %q, want a refusal", k, v)
		}
	}
	select {
	case m := <-got[0]:
		t.Errorf("the host listener outside the roots got a connection: %q", m)
	default:
	}
}

// realDir is t.TempDir with links resolved, as the sandbox names it.
func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestAttackInitThroughProc reaches the sandbox's init (pid 1, which holds
// the seccomp listener, the control socket and the status pipe to the
// host) through /proc/1: its descriptors, root, memory. The supervisor,
// which is init, must not open for the task what the task could not open
// itself; the task's own /proc entries still open.
func TestAttackInitThroughProc(t *testing.T) {
	dir := realDir(t)
	out := attacker(t, dir, policy.Spec{}, pyTry+`
def opened(path, flags):
    def f():
        os.close(os.open(path, flags))
    return f
try_("control_self", opened("/proc/self/status", os.O_RDONLY))
try_("control_self_fd", opened("/proc/self/fd/1", os.O_WRONLY))
for n in range(3, 12):
    try_("init_fd_%d" % n, opened("/proc/1/fd/%d" % n, os.O_WRONLY))
try_("init_root", write("/proc/1/root" + d + "/.bashrc"))
try_("init_cwd", opened("/proc/1/cwd/x", os.O_WRONLY | os.O_CREAT))
try_("init_mem", opened("/proc/1/mem", os.O_RDWR))
try_("init_task", opened("/proc/1/task/1/fd/3", os.O_WRONLY))
try_("tty", opened("/dev/tty", os.O_WRONLY))
print("done=1")
`)
	// The command runs in a session of its own, with no terminal: /dev/tty
	// is the caller's, never the supervisor's (which may be the host's).
	if out["tty"] != "ENXIO" {
		t.Errorf("tty = %q, want ENXIO", out["tty"])
	}
	for _, k := range []string{"control_self", "control_self_fd"} {
		if out[k] != "ok" {
			t.Errorf("%s = %q, want ok", k, out[k])
		}
	}
	for k, v := range out {
		if strings.HasPrefix(k, "init_") && v == "ok" {
			t.Errorf("%s = ok: the task opened init's object through the supervisor", k)
		}
	}
}

// TestAbsoluteCredentialBoundReadOnly: an absolute credential path a
// host lists inside a write root is bound read-only (the scan takes the
// policy's credential entries as it takes its protected ones): with the
// supervisor off, the mount alone refuses a write; the report names it.
func TestAbsoluteCredentialBoundReadOnly(t *testing.T) {
	dir := realDir(t)
	// Below the scan's depth, and no built-in pattern names it: only the
	// policy's own entry can make it bound.
	deep := filepath.Join(dir, "a/b/c/d/e/f/g")
	cred := filepath.Join(deep, "deploy-token.dat")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cred, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := shSpec(t, dir, `echo x >> a/b/c/d/e/f/g/deploy-token.dat; echo "append=$?"`)
	spec.Files[0].Credentials = []string{cred}
	spec.NoSeccomp = true // the mount alone must hold it
	var stdout bytes.Buffer
	l, _, err := run(t, spec, Stdio{Stdout: &stdout, Stderr: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "append=") || strings.Contains(stdout.String(), "append=0") {
		t.Errorf("output %q: want the append refused", &stdout)
	}
	if b, _ := os.ReadFile(cred); string(b) != "{}" {
		t.Errorf("the credential changed: %q", b)
	}
	if !slices.Contains(l.Report.ReadOnly, cred) {
		t.Errorf("report read-only %v, want %s", l.Report.ReadOnly, cred)
	}
}

// TestAttackNestedUserNamespace: a process of the sandbox tries to regain
// capabilities in a user namespace of its own (unshare, and a clone with
// CLONE_NEWUSER from a child), then to chroot into the write root: it can
// do neither, so its names keep meaning what the supervisor resolves them
// against.
func TestAttackNestedUserNamespace(t *testing.T) {
	dir := realDir(t)
	out := attacker(t, dir, policy.Spec{}, pyTry+`
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
def call(fn, *args):
    def f():
        if fn(*args) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
    return f
try_("control", write(d + "/ok"))
pid = os.fork()
if pid == 0:
    try:
        call(libc.unshare, CLONE_NEWUSER)()
        os._exit(0)
    except OSError as e:
        os._exit(e.errno)
_, st = os.waitpid(pid, 0)
print("child_unshare=" + ("ok" if os.waitstatus_to_exitcode(st) == 0 else errno.errorcode[os.waitstatus_to_exitcode(st)]), flush=True)
try_("unshare", call(libc.unshare, CLONE_NEWUSER | CLONE_NEWNS))
try_("chroot", call(libc.chroot, d.encode()))
print("done=1")
`)
	if out["control"] != "ok" {
		t.Errorf("control = %q, want ok", out["control"])
	}
	for _, k := range []string{"unshare", "child_unshare"} {
		if out[k] != "ENOSPC" && out[k] != "EPERM" {
			t.Errorf("%s = %q, want ENOSPC or EPERM (no user namespace inside the sandbox)", k, out[k])
		}
	}
	if out["chroot"] != "EPERM" {
		t.Errorf("chroot = %q, want EPERM", out["chroot"])
	}
	if _, err := os.Stat(filepath.Join(dir, "ok")); err != nil {
		t.Errorf("the control write did not happen: %v", err)
	}
}
