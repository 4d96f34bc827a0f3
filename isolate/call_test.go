package isolate_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/isolate"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

// TestOutcomes: each way a function can end gives its documented result,
// and nothing of the call survives it.
func TestOutcomes(t *testing.T) {
	e := setup(t)
	cases := []struct {
		name, fn string
		in       any
		opts     []isolate.Option
		want     string // the result, when it succeeds
		kind     isolate.Kind
		msg      string // a part of the error message
		check    func(t *testing.T, err *isolate.Error)
	}{
		{name: "returns", fn: "echo", in: "hi", want: "echo: hi"},
		{name: "errors", fn: "fail", in: "x", kind: isolate.Failed, msg: `tool "fail" failed: no luck with x`},
		{name: "panics", fn: "panic", in: "x", kind: isolate.Panicked, msg: "panicked: boom: x",
			check: func(t *testing.T, err *isolate.Error) {
				if !strings.Contains(err.Stack, "isolate_test.init") {
					t.Errorf("the child's stack does not show the function: %s", err.Stack)
				}
			}},
		{name: "panics in a goroutine", fn: "panic-goroutine", in: "x", kind: isolate.Panicked, msg: "background boom",
			check: func(t *testing.T, err *isolate.Error) {
				if !strings.Contains(err.Stack, "goroutine") {
					t.Errorf("no stack: %q", err.Stack)
				}
			}},
		{name: "loops forever", fn: "spin", in: struct{}{}, opts: []isolate.Option{isolate.Timeout(time.Second)},
			kind: isolate.TimedOut, msg: `tool "spin" killed after 1s (timeout)`},
		{name: "exits", fn: "exit", in: 7, kind: isolate.Crashed, msg: "exited with code 7 without a result"},
		{name: "killed by a signal", fn: "kill-self", in: struct{}{}, kind: isolate.Crashed, msg: "killed by signal SIGKILL",
			check: func(t *testing.T, err *isolate.Error) {
				if err.Signal != syscall.SIGKILL {
					t.Errorf("signal %v", err.Signal)
				}
			}},
		{name: "result is not JSON", fn: "nan", in: struct{}{}, kind: isolate.BadResult, msg: "unsupported value: NaN"},
		{name: "input is not the function's", fn: "echo", in: 42, kind: isolate.BadInput, msg: "cannot unmarshal number"},
		{name: "unknown name", fn: "nope", in: 1, kind: isolate.Unknown, msg: `tool "nope" is not registered`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var conf procguard.Confinement
			var out string
			opts := append([]isolate.Option{isolate.ReportTo(&conf), isolate.Timeout(time.Minute)}, tc.opts...)
			var err error
			if tc.want != "" {
				err = isolate.Call(e.callCtx(t), tc.fn, tc.in, &out, opts...)
			} else {
				err = isolate.Call(e.callCtx(t), tc.fn, tc.in, nil, opts...)
			}
			if tc.kind == 0 {
				if err != nil || out != tc.want {
					t.Fatalf("got %q, %v; want %q", out, err, tc.want)
				}
			} else {
				var ie *isolate.Error
				if !errors.As(err, &ie) || ie.Kind != tc.kind {
					t.Fatalf("got %v (%#v); want kind %v", err, err, tc.kind)
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("message %q lacks %q", err.Error(), tc.msg)
				}
				if tc.check != nil {
					tc.check(t, ie)
				}
			}
			if tc.kind != isolate.Unknown {
				noSurvivors(t, &conf)
			}
		})
	}
}

// TestSentinels: errors.Is matches the kind's sentinel, and a denial in the
// child reads as a permission error in the host.
func TestSentinels(t *testing.T) {
	e := setup(t)
	err := isolate.Call(e.callCtx(t), "spin", struct{}{}, nil, isolate.Timeout(500*time.Millisecond))
	if !errors.Is(err, isolate.ErrTimeout) || errors.Is(err, isolate.ErrPanicked) {
		t.Errorf("timeout: %v", err)
	}
	err = isolate.Call(e.callCtx(t), "denied", "/etc/isolate-denied", nil)
	if !errors.Is(err, fs.ErrPermission) || !errors.Is(err, audit.ErrDenied) || !errors.Is(err, isolate.ErrFailed) {
		t.Errorf("denial: %v", err)
	}
}

// TestMemoryLimit: a function that allocates past its memory limit is
// killed and reported as out of memory.
func TestMemoryLimit(t *testing.T) {
	e := setup(t)
	var conf procguard.Confinement
	err := isolate.Call(e.callCtx(t), "hog", 1024, nil, isolate.MemoryLimit(64<<20), isolate.ReportTo(&conf), isolate.Timeout(time.Minute))
	if !strings.Contains(conf.CgroupNote, "memory=64MiB") {
		t.Skipf("no memory controller here: %s (call: %v)", conf.CgroupNote, err)
	}
	var ie *isolate.Error
	if !errors.As(err, &ie) || ie.Kind != isolate.OutOfMemory {
		t.Fatalf("got %v, want OutOfMemory", err)
	}
	if !strings.Contains(err.Error(), "ran out of memory (limit 64MiB)") {
		t.Errorf("message: %v", err)
	}
	noSurvivors(t, &conf)
}

// TestProcessLimit: a function that starts 100 background processes hits
// the process limit (fork fails with EAGAIN); all of them die with the
// call.
func TestProcessLimit(t *testing.T) {
	e := setup(t)
	var conf procguard.Confinement
	var out ForkOut
	err := isolate.Call(e.callCtx(t), "fork", 100, &out, isolate.ProcessLimit(40), isolate.ReportTo(&conf), isolate.Timeout(time.Minute))
	if !strings.Contains(conf.CgroupNote, "pids=40") {
		t.Skipf("no pids controller here: %s", conf.CgroupNote)
	}
	if ie := (*isolate.Error)(nil); errors.As(err, &ie) {
		t.Fatalf("%v\nthe child's stderr:\n%s", err, ie.Stderr)
	} else if err != nil {
		t.Fatal(err)
	}
	if out.Started >= 100 || !strings.Contains(out.FirstErr, "resource temporarily unavailable") {
		t.Errorf("100 processes under a limit of 40: %+v", out)
	}
	if out.Started == 0 {
		t.Errorf("no process started at all: %+v", out)
	}
	noSurvivors(t, &conf)
}

// TestWritesHeldByGuardAndKernel: writes outside the roots and to
// .git/hooks are refused in the child, through fsguard (a denial, recorded
// in the host with the call's name) and straight through os (the kernel);
// a write inside the root works.
func TestWritesHeldByGuardAndKernel(t *testing.T) {
	e := setup(t)
	hook := filepath.Join(e.dir, "repo/.git/hooks/pre-commit")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte("orig\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var conf procguard.Confinement
	var out WriteOut
	if err := isolate.Call(e.callCtx(t), "write", WriteIn{Root: e.dir}, &out, isolate.ReportTo(&conf)); err != nil {
		t.Fatal(err)
	}
	for what, msg := range map[string]string{"guarded outside": out.GuardedOutside, "guarded hook": out.GuardedHook} {
		if !strings.Contains(msg, "auditguard") || !strings.Contains(msg, "denied") {
			t.Errorf("%s: %q, want a guard denial", what, msg)
		}
	}
	for what, msg := range map[string]string{"raw outside": out.RawOutside, "raw hook": out.RawHook} {
		if !strings.Contains(msg, "permission denied") && !strings.Contains(msg, "read-only file system") {
			t.Errorf("%s: %q, want the kernel's refusal", what, msg)
		}
	}
	if !out.InsideOK {
		t.Error("a write inside the root failed")
	}
	if b, _ := os.ReadFile(hook); string(b) != "orig\n" {
		t.Errorf("the hook changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "ok.txt")); string(b) != "fine" {
		t.Errorf("the inside write did not land: %q", b)
	}
	// Two denials come from the guard in the child (fsguard), two from
	// the sandbox's supervisor refusing the raw writes, decided again in
	// the host: all four name the call.
	var denied, supervised []audit.Record
	for _, r := range e.rec.Records() {
		switch {
		case r.Outcome != audit.Denied:
		case strings.Contains(r.Detail, "in the sandbox of"):
			supervised = append(supervised, r)
		default:
			denied = append(denied, r)
		}
	}
	if len(denied) != 2 || len(supervised) != 2 {
		t.Fatalf("host recorder has %d guard and %d sandbox denials, want 2 each: %+v", len(denied), len(supervised), e.rec.Records())
	}
	for _, r := range supervised {
		if r.Tool != "write" || (r.Resolved != hook && filepath.Dir(r.Resolved) == e.dir) {
			t.Errorf("sandbox record %+v: want the call's name and the resolved target", r)
		}
	}
	scope := audit.From(e.ctx)
	for _, r := range denied {
		if r.Tool != "write" || !strings.HasPrefix(r.Remote, "isolate write#") || r.ScopeID != scope.ID() {
			t.Errorf("record not attributed to the call: tool %q remote %q scope %d", r.Tool, r.Remote, r.ScopeID)
		}
		if !strings.Contains(r.Caller, "funcs_test.go") {
			t.Errorf("caller %q is not the function's line", r.Caller)
		}
	}
	noSurvivors(t, &conf)
}

// TestDialDenied: a dial to an address the policy denies is refused by
// netguard in the child (recorded in the host) and, straight through net,
// by the kernel: the child has no route out.
func TestDialDenied(t *testing.T) {
	e := setup(t)
	var conf procguard.Confinement
	var out DialOut
	if err := isolate.Call(e.callCtx(t), "dial", "10.1.2.3:80", &out, isolate.ReportTo(&conf)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Guarded, "denied") {
		t.Errorf("guarded dial: %q", out.Guarded)
	}
	if out.Raw == "" || !strings.Contains(out.Raw, "unreachable") {
		t.Errorf("raw dial: %q, want network unreachable", out.Raw)
	}
	recs := e.rec.Records()
	if len(recs) != 1 || recs[0].Protocol != audit.Net || recs[0].Outcome != audit.Denied || recs[0].Tool != "dial" {
		t.Errorf("host records: %+v", recs)
	}
	noSurvivors(t, &conf)
}

// TestCallbacksRunInHost: OnCall and BeforeDeny are asked in the host, on
// the caller's side, with the child's event and frames; the rescue is
// recorded in the host. The kernel's confinement, built from the policy
// before the call, is not widened by a rescue: the write outside the write
// roots then fails in the kernel (the read-only root, or Landlock), not in
// the guard. The sandbox's supervisor refuses that raw write too and asks
// the host again, which rescues it again: the kernel still holds.
func TestCallbacksRunInHost(t *testing.T) {
	hostPid := os.Getpid()
	var onCalls, asked int
	var sawPid int
	var sawCaller string
	e := setup(t,
		audit.WithOnCall(func(ctx context.Context, ev *audit.Event) audit.Verdict {
			onCalls++
			return audit.Continue
		}),
		audit.WithBeforeDeny(func(ctx context.Context, ev *audit.Event) bool {
			asked++
			sawPid = os.Getpid()
			if asked == 1 {
				sawCaller = audit.FormatFrame(ev.Caller())
			}
			return ev.Call != nil && ev.Call.Name == "denied" && filepath.Base(ev.Target) == "rescued.txt"
		}))
	outside := filepath.Join(t.TempDir(), "rescued.txt")
	err := isolate.Call(e.callCtx(t), "denied", outside, nil)
	var ie *isolate.Error
	if !errors.As(err, &ie) || ie.Kind != isolate.Failed || ie.Denied ||
		!strings.Contains(ie.Msg, "permission denied") && !strings.Contains(ie.Msg, "read-only file system") {
		t.Fatalf("got %v; want the kernel's refusal after the host's rescue", err)
	}
	if _, err := os.Stat(outside); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the write landed outside the write roots: %v", err)
	}
	// Asked twice: for the guarded call in the child, then for the
	// supervisor's refusal of its raw write.
	if asked != 2 || onCalls != 2 || sawPid != hostPid {
		t.Errorf("BeforeDeny asked %d times, OnCall %d, in pid %d (host %d)", asked, onCalls, sawPid, hostPid)
	}
	if !strings.Contains(sawCaller, "funcs_test.go") {
		t.Errorf("callback saw caller %q, want the function in the child", sawCaller)
	}
	// The child's record is replayed when the call returns, the
	// supervisor's is made as it happens: either may come first.
	recs := e.rec.Records()
	var child, sandbox int
	for _, r := range recs {
		if r.Outcome != audit.Rescued || r.DecidedBy != audit.ByBeforeDeny || r.Tool != "denied" {
			continue
		}
		switch {
		case r.Remote != "":
			child++
		case strings.Contains(r.Detail, "in the sandbox of") && r.Resolved == outside:
			sandbox++
		}
	}
	if len(recs) != 2 || child != 1 || sandbox != 1 {
		t.Errorf("host records: %+v", recs)
	}
}

// TestOutputCapture: the function's stdout and stderr reach the host's
// writers; nothing it prints disturbs the result.
func TestOutputCapture(t *testing.T) {
	e := setup(t)
	var stdout, stderr bytes.Buffer
	var out string
	err := isolate.Call(e.callCtx(t), "print", "hello", &out, isolate.Stdout(&stdout), isolate.Stderr(&stderr))
	if err != nil || out != "printed" {
		t.Fatalf("%q %v", out, err)
	}
	if stdout.String() != "to stdout: hello\n" {
		t.Errorf("stdout %q", stdout.String())
	}
	if !strings.Contains(stderr.String(), "to stderr: hello\n") {
		t.Errorf("stderr %q", stderr.String())
	}
}

// TestNoScope: a call outside a guard scope runs nothing.
func TestNoScope(t *testing.T) {
	err := isolate.Call(context.Background(), "echo", "x", nil)
	if !errors.Is(err, isolate.ErrSetup) || !errors.Is(err, audit.ErrNoScope) {
		t.Fatalf("got %v", err)
	}
}

// TestRestrictCarried: a scope narrowed with audit.Restrict is narrowed in
// the child too.
func TestRestrictCarried(t *testing.T) {
	e := setup(t)
	sub := filepath.Join(e.dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	narrow, err := policy.New(policy.Spec{WriteRoots: []string{sub}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := audit.Restrict(e.callCtx(t), narrow)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	err = isolate.Call(ctx, "denied", filepath.Join(e.dir, "outside-sub.txt"), nil)
	if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("a write outside the restricted root: %v", err)
	}
	if err := isolate.Call(ctx, "denied", filepath.Join(sub, "in.txt"), nil); err != nil {
		t.Errorf("a write inside the restricted root: %v", err)
	}
}

// TestTypedFunc: Register's typed handle calls with In and Out.
func TestTypedFunc(t *testing.T) {
	e := setup(t)
	n, err := typedAdd.Call(e.callCtx(t), [2]int{2, 3})
	if err != nil || n != 5 {
		t.Fatalf("%d %v", n, err)
	}
}
