package procguard_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

type env struct {
	ctx context.Context
	dir string // the write root; commands run here
	rec *audit.Recorder
	pol *policy.Policy
}

// setup enters a guard whose only write root is a temp dir, with the given
// exec spec. HOME is a temp dir so nothing touches the real one.
func setup(t testing.TB, spec policy.ExecSpec, opts ...audit.Option) *env {
	t.Helper()
	if tt, ok := t.(*testing.T); ok {
		tt.Setenv("HOME", t.TempDir())
	}
	dir := t.TempDir()
	pol, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Exec: spec})
	if err != nil {
		t.Fatal(err)
	}
	rec := audit.NewRecorder()
	base := []audit.Option{audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), audit.WithRecorder(rec)}
	if _, ok := t.(*testing.B); !ok {
		base = append(base, audit.WithLogAllows())
	}
	opts = append(base, opts...)
	g, err := audit.New(pol, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &env{ctx: ctx, dir: real, rec: rec, pol: pol}
}

// pastArgv lets scripts that hide their targets from the argv rules
// (computed redirections, opaque words) through to the kernel layer, so a
// test can show what the sandbox and Landlock hold on their own. Other
// hard denials stay.
func pastArgv() []audit.Option {
	return []audit.Option{audit.WithRescueHard(), audit.WithBeforeDeny(func(_ context.Context, ev *audit.Event) bool {
		p := ev.Decision.Rule.Pattern
		return strings.HasPrefix(p, "computed redirection") || strings.HasPrefix(p, "scripts that cannot be read whole")
	})}
}

func allow(progs ...string) []policy.ExecRule {
	var rs []policy.ExecRule
	for _, p := range progs {
		f := strings.Fields(p)
		rs = append(rs, policy.ExecRule{Program: f[0], Args: f[1:]})
	}
	return rs
}

// groupMembers lists the live (non-zombie) processes of process group pgid.
func groupMembers(t testing.TB, pgid int) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, pg, ok := procStat(pid)
		if ok && pg == pgid && state != "Z" && state != "X" {
			out = append(out, e.Name()+" "+state)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z" && state != "X"
}

func procStat(pid int) (state string, pgid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return "", 0, false
	}
	pg, err := strconv.Atoi(f[2])
	if err != nil {
		return "", 0, false
	}
	return f[0], pg, true
}

// hostPid maps a pid a sandboxed child printed (a pid in the sandbox's pid
// namespace ns) to the host's pid of the same process; 0 when none.
func hostPid(ns string, nspid int) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err != nil || l != ns {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f, ok := strings.CutPrefix(line, "NSpid:"); ok {
				fs := strings.Fields(f)
				if len(fs) > 0 && fs[len(fs)-1] == strconv.Itoa(nspid) {
					return pid
				}
			}
		}
	}
	return 0
}

// namespaceMembers lists the live processes of pid namespace ns, whose
// init has host pid initPid (0: not known). A freed namespace's inode
// number is soon reused by another one (the next sandbox, a pooled
// trampoline): when the namespace now named ns has another init, it is
// not the one the caller means, and its processes are not listed (its own
// init being gone, the kernel has ended every process of the old one).
func namespaceMembers(ns string, initPid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err != nil || l != ns || !alive(pid) {
			continue
		}
		if initPid > 0 && pid != initPid && nsPid(pid) == 1 {
			return nil // another namespace under the same inode number
		}
		out = append(out, pid)
	}
	return out
}

// nsPid is pid's pid in its own (innermost) pid namespace, 0 if unknown.
func nsPid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f, ok := strings.CutPrefix(line, "NSpid:"); ok {
			fs := strings.Fields(f)
			if len(fs) > 0 {
				n, _ := strconv.Atoi(fs[len(fs)-1])
				return n
			}
		}
	}
	return 0
}
