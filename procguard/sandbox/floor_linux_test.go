//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/internal/benchhook"
)

// TestTrapFloor checks what the benchmark table's floor sides measure: a
// sandbox marked with benchhook.TrapFloor traps the same calls (the
// filter is installed, execs are trapped) and answers each at once,
// judging none: the protected name is created and the host's exec judge
// is never asked, where the same spec unmarked refuses the one and asks
// the other. A marked spec never shares a session's sandbox with an
// unmarked one.
func TestTrapFloor(t *testing.T) {
	for _, floor := range []bool{false, true} {
		dir := t.TempDir()
		spec := shSpec(t, dir, `echo x > .bashrc; /bin/true && echo ran > ran.txt`)
		var asked atomic.Int32
		spec.JudgeExec = func(ec *ExecCall) bool { asked.Add(1); return true }
		if floor {
			benchhook.TrapFloor(spec)
		}
		var out bytes.Buffer
		l, st, err := run(t, spec, Stdio{Stdout: &out, Stderr: &out})
		if err != nil || !st.Success() {
			t.Fatalf("floor=%v: %v %v: %s", floor, st, err, out.Bytes())
		}
		if !l.Report.Seccomp || !l.Report.Exec {
			t.Skipf("calls are not trapped here: %+v", l.Report)
		}
		if _, err := os.Stat(filepath.Join(dir, "ran.txt")); err != nil {
			t.Fatalf("floor=%v: the script did not run to its end: %v: %s", floor, err, out.Bytes())
		}
		_, err = os.Stat(filepath.Join(dir, ".bashrc"))
		if made := err == nil; made != floor {
			t.Errorf("floor=%v: .bashrc made: %v", floor, made)
		}
		if n := asked.Load(); (n == 0) != floor {
			t.Errorf("floor=%v: the exec judge was asked %d times", floor, n)
		}
	}
	// Init sets these at the target's first exec, which a floor lets go.
	limited := shSpec(t, t.TempDir(), "true")
	limited.Rlimits = []Rlimit{{Resource: unix.RLIMIT_NOFILE, Name: "nofile", Value: 64}}
	benchhook.TrapFloor(limited)
	if l, err := Start(t.Context(), limited, Stdio{}, nil, nil); err == nil {
		_, _ = l.Wait()
		t.Error("a floor sandbox with rlimits started")
	}
	// So does a session, for any of its commands.
	var s Session
	defer s.Close()
	if l, err := s.Start(t.Context(), limited, Stdio{}, nil); err == nil {
		_, _ = l.Wait()
		t.Error("a floor session command with rlimits started")
	}
	spec := shSpec(t, t.TempDir(), "true")
	plain, err := sessionKey(spec)
	if err != nil {
		t.Fatal(err)
	}
	benchhook.TrapFloor(spec)
	if marked, _ := sessionKey(spec); marked == plain {
		t.Error("a floor spec has the session key of a judged one")
	}
}
