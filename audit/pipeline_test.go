package audit

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
)

// TestPathDecisionsThroughThePipeline runs the path rules end to end on a
// real temp tree: resolution on the OS, the policy, the pipeline's error.
func TestPathDecisionsThroughThePipeline(t *testing.T) {
	root := tempDir(t)
	work := filepath.Join(root, "work")
	evil := filepath.Join(root, "work_evil")
	out := filepath.Join(root, "out")
	for _, d := range []string{work + "/sub", evil, out + "/deep"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		work + "/esc":      out + "/deep",   // symlink pointing out
		work + "/dotdot":   "sub/../../out", // relative target climbing out
		work + "/rel":      "sub",           // relative target staying in
		out + "/back":      work + "/sub",   // outside pointing back in
		work + "/chain":    out + "/back",   // in -> out -> in
		work + "/dangling": out + "/later",  // dangling, pointing out
		work + "/loop1":    "loop2",
		work + "/loop2":    "loop1",
	}
	for l, target := range links {
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
	}
	g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{work}}))
	ctx := enter(t, g)

	tests := []struct {
		name string
		op   policy.Op
		path string
		cwd  string
		ok   bool
	}{
		{"inside", policy.OpWrite, work + "/a.txt", "", true},
		{"new file under missing parents", policy.OpWrite, work + "/x/y/z.txt", "", true},
		{"sibling prefix", policy.OpWrite, evil + "/a.txt", "", false},
		{"dotdot climbing out", policy.OpWrite, work + "/sub/../../out/a", "", false},
		{"dotdot after a symlink", policy.OpWrite, work + "/esc/../x", "", false},
		{"symlink pointing out", policy.OpWrite, work + "/esc/a", "", false},
		{"relative symlink target climbing out", policy.OpWrite, work + "/dotdot/a", "", false},
		{"relative symlink target staying in", policy.OpWrite, work + "/rel/a", "", true},
		{"chain out and back in", policy.OpWrite, work + "/chain/a", "", true},
		{"create through a dangling link pointing out", policy.OpWrite, work + "/dangling", "", false},
		{"remove the dangling link itself", policy.OpDelete, work + "/dangling", "", true},
		{"loop", policy.OpWrite, work + "/loop1/a", "", false},
		{"relative name from cwd", policy.OpWrite, "sub/a", work, true},
		{"relative name climbing out of cwd", policy.OpWrite, "../out/a", work, false},
		{"protected case variant", policy.OpWrite, work + "/.Git/HOOKS/pre-commit", "", false},
		{"protected .ENV", policy.OpWrite, work + "/.ENV", "", false},
		{"remove the root", policy.OpDelete, work, "", false},
		{"reads outside are allowed", policy.OpRead, out + "/deep", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fsCheck(ctx, tt.op, tt.path, tt.cwd)
			if tt.ok && err != nil {
				t.Fatalf("denied: %v", err)
			}
			if !tt.ok {
				if err == nil {
					t.Fatal("allowed")
				}
				if !errors.Is(err, fs.ErrPermission) || !errors.Is(err, ErrDenied) {
					t.Fatalf("error %v does not match fs.ErrPermission and ErrDenied", err)
				}
			}
		})
	}
}

func TestSlashRootAndDotRoot(t *testing.T) {
	root := tempDir(t)
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx := enter(t, newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{"/"}})))
	if err := fsCheck(ctx, policy.OpWrite, a+"/x", ""); err != nil {
		t.Fatalf(`"/" root denied a write: %v`, err)
	}
	if err := fsCheck(ctx, policy.OpWrite, "/proc/self/oom_score_adj", ""); err == nil {
		t.Fatal(`"/" root allowed a /proc write`)
	}

	ctx = enter(t, newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{"."}})))
	if err := fsCheck(ctx, policy.OpWrite, "x", a); err != nil {
		t.Fatalf(`"." root denied a write in cwd: %v`, err)
	}
	if err := fsCheck(ctx, policy.OpWrite, b+"/x", a); err == nil {
		t.Fatal(`"." root allowed a write outside cwd`)
	}
	if err := fsCheck(ctx, policy.OpWrite, b+"/x", b); err != nil {
		t.Fatalf(`"." root did not follow the new cwd: %v`, err)
	}
}

func TestModes(t *testing.T) {
	outside := tempDir(t) + "/f"
	pol := newPolicy(t, policy.Spec{})
	tests := []struct {
		name    string
		opts    []Option
		proto   Protocol
		wantErr bool
		want    Outcome // the record, 0 for none
	}{
		{"enforce denies", nil, FS, true, Denied},
		{"warn allows and records would-deny", []Option{WithMode(FS, Warn)}, FS, false, Warned},
		{"off skips without a record", []Option{WithMode(FS, Off)}, FS, false, 0},
		{"modes are per protocol", []Option{WithMode(Exec, Off), WithMode(Net, Warn)}, FS, true, Denied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := NewRecorder()
			g := newGuard(t, pol, append(tt.opts, WithRecorder(rec))...)
			err := fsCheck(enter(t, g), policy.OpWrite, outside, "")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			recs := rec.Records()
			if tt.want == 0 {
				if len(recs) != 0 {
					t.Fatalf("records = %+v, want none", recs)
				}
				return
			}
			if len(recs) != 1 || recs[0].Outcome != tt.want {
				t.Fatalf("records = %+v, want one %v", recs, tt.want)
			}
		})
	}
}

func TestWarnStillDeniesInvalidInput(t *testing.T) {
	g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{"/"}}), WithMode(FS, Warn))
	err := fsCheck(enter(t, g), policy.OpWrite, "/tmp/a\x00b", "")
	if err == nil {
		t.Fatal("Warn mode let an unresolvable path through")
	}
}

func TestBeforeDenyTiers(t *testing.T) {
	work := tempDir(t)
	pol := newPolicy(t, policy.Spec{WriteRoots: []string{work}})
	yes := func(context.Context, *Event) bool { return true }
	tests := []struct {
		name string
		opts []Option
		path string
		ok   bool
	}{
		{"soft denial rescued", []Option{WithBeforeDeny(yes)}, "/nonexistent-auditguard/x", true},
		{"hard denial not rescued by default", []Option{WithBeforeDeny(yes)}, work + "/.bashrc", false},
		{"hard denial rescued when opted in", []Option{WithBeforeDeny(yes), WithRescueHard()}, work + "/.bashrc", true},
		{"invalid input never rescued", []Option{WithBeforeDeny(yes), WithRescueHard()}, work + "/a\x00", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := NewRecorder()
			g := newGuard(t, pol, append(tt.opts, WithRecorder(rec))...)
			err := fsCheck(enter(t, g), policy.OpWrite, tt.path, "")
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want allowed %v", err, tt.ok)
			}
			if tt.ok {
				if r := rec.Records(); len(r) != 1 || r[0].Outcome != Rescued || r[0].DecidedBy != ByBeforeDeny {
					t.Fatalf("records = %+v", r)
				}
			}
		})
	}
}

func TestBeforeDenySeesTheEvent(t *testing.T) {
	work := tempDir(t)
	var got *Event
	g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{work}}), WithData("snapshot-1"),
		WithBeforeDeny(func(ctx context.Context, ev *Event) bool {
			got = ev
			_ = ev.Caller() // captured while the stack exists
			return false
		}))
	ctx := enter(t, g)
	ctx, done := WithCall(ctx, "search", []string{"rg", "TODO"})
	defer done()
	target := "/nonexistent-auditguard/x"
	if err := fsCheck(ctx, policy.OpWrite, target, ""); err == nil {
		t.Fatal("allowed")
	}
	if got == nil {
		t.Fatal("BeforeDeny not called")
	}
	if got.Target != target || got.Op != policy.OpWrite || got.Protocol != FS || got.Data != "snapshot-1" ||
		got.Call == nil || got.Call.Name != "search" || got.ScopeID() == 0 || got.Decision.Tier != policy.TierSoft {
		t.Fatalf("event = %+v", got)
	}
	if c := got.Caller(); !strings.HasSuffix(c.File, "helpers_test.go") || !strings.HasSuffix(c.Function, ".fsCheck") {
		t.Fatalf("caller = %s, want the test helper fsCheck", FormatFrame(c))
	}
	if !got.CalledFrom(TestBeforeDenySeesTheEvent) || !got.CalledFrom(fsCheck) {
		t.Fatal("CalledFrom misses functions on the stack")
	}
	if got.CalledFrom(TestModes) || got.CalledFrom("") {
		t.Fatal("CalledFrom finds functions not on the stack")
	}
}

func TestOnCallVerdicts(t *testing.T) {
	work := tempDir(t)
	pol := newPolicy(t, policy.Spec{WriteRoots: []string{work}})
	inside, outside := work+"/a", "/nonexistent-auditguard/a"
	tests := []struct {
		verdict    Verdict
		path       string
		ok         bool
		beforeDeny bool // whether BeforeDeny may be asked
	}{
		{Continue, inside, true, false},
		{Continue, outside, false, true},
		{Allow, outside, true, false},
		{Deny, inside, false, false},
		{TrustSite, outside, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.verdict.String()+" "+filepath.Base(filepath.Dir(tt.path)), func(t *testing.T) {
			asked := false
			g := newGuard(t, pol,
				WithOnCall(func(context.Context, *Event) Verdict { return tt.verdict }),
				WithBeforeDeny(func(context.Context, *Event) bool { asked = true; return false }))
			err := fsCheck(enter(t, g), policy.OpWrite, tt.path, "")
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want allowed %v", err, tt.ok)
			}
			if asked != tt.beforeDeny {
				t.Fatalf("BeforeDeny asked = %v, want %v", asked, tt.beforeDeny)
			}
		})
	}
}

func TestTrustSiteStopsAsking(t *testing.T) {
	var calls atomic.Int32
	g := newGuard(t, newPolicy(t, policy.Spec{}), WithOnCall(func(context.Context, *Event) Verdict {
		calls.Add(1)
		return TrustSite
	}))
	ctx := enter(t, g)
	for range 3 {
		if err := fsCheck(ctx, policy.OpWrite, "/nonexistent-auditguard/x", ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("OnCall asked %d times for one trusted site", n)
	}
	// Another call site is asked.
	ev := &Event{Protocol: FS, Op: policy.OpWrite, Target: "/x", Resolved: "/x"}
	if err := Check(ctx, ev, &policy.PathRequest{Op: policy.OpWrite, Path: "/x"}); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("a new call site was not asked (calls = %d)", n)
	}
}

func TestPanickingCallbacksDeny(t *testing.T) {
	var logs logBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	boom := func(context.Context, *Event) Verdict { panic("boom") }
	g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{"/"}}), WithOnCall(boom),
		WithMode(FS, Warn), WithLogger(logger))
	err := fsCheck(enter(t, g), policy.OpWrite, "/nonexistent-auditguard/x", "")
	var cp *CallbackPanic
	if !errors.As(err, &cp) || cp.Callback != "OnCall" || cp.Value != "boom" {
		t.Fatalf("err = %v, want a denial caused by the OnCall panic", err)
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatal("a callback fault is not a permission error")
	}
	found := false
	for _, r := range logs.records(t) {
		if r["callback"] == "OnCall" && r["level"] == "ERROR" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the panic was not reported: %v", logs.records(t))
	}

	g2 := newGuard(t, newPolicy(t, policy.Spec{}),
		WithBeforeDeny(func(context.Context, *Event) bool { panic(errors.New("bad")) }))
	if err := fsCheck(enter(t, g2), policy.OpWrite, "/nonexistent-auditguard/x", ""); !errors.As(err, &cp) || cp.Callback != "BeforeDeny" {
		t.Fatalf("err = %v, want a denial caused by the BeforeDeny panic", err)
	}
}

func TestWithCallEndsWithTheCall(t *testing.T) {
	g := newGuard(t, newPolicy(t, policy.Spec{}), WithBeforeDeny(func(ctx context.Context, ev *Event) bool {
		return ev.Call != nil && ev.Call.Name == "trusted-search"
	}))
	ctx := enter(t, g)
	toolCtx, done := WithCall(ctx, "trusted-search", nil)
	if err := fsCheck(toolCtx, policy.OpWrite, "/nonexistent-auditguard/x", ""); err != nil {
		t.Fatalf("trusted tool denied: %v", err)
	}
	started, finish := make(chan struct{}), make(chan error)
	go func() { // a goroutine that outlives the tool call
		<-started
		finish <- fsCheck(toolCtx, policy.OpWrite, "/nonexistent-auditguard/x", "")
	}()
	done()
	close(started)
	if err := <-finish; err == nil {
		t.Fatal("a finished tool call still granted access")
	}
	if CallFrom(toolCtx) != nil {
		t.Fatal("CallFrom returns a finished call")
	}
	if err := fsCheck(ctx, policy.OpWrite, "/nonexistent-auditguard/x", ""); err == nil {
		t.Fatal("code outside the tool call was rescued")
	}
}

func TestRecordsGoToSlog(t *testing.T) {
	work := tempDir(t)
	var logs logBuffer
	g := newGuard(t, newPolicy(t, policy.Spec{WriteRoots: []string{work}}),
		WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))), WithLogAllows())
	ctx := enter(t, g)
	_ = fsCheck(ctx, policy.OpWrite, work+"/ok", "")
	_ = fsCheck(ctx, policy.OpWrite, work+"/.bashrc", "")
	recs := logs.records(t)
	if len(recs) != 2 {
		t.Fatalf("got %d records, want 2: %v", len(recs), recs)
	}
	allow, deny := recs[0], recs[1]
	if allow["outcome"] != "allowed" || allow["rule"] != `write root "`+work+`"` || allow["source"] != "code" {
		t.Fatalf("allow record = %v", allow)
	}
	if deny["outcome"] != "denied" || deny["rule"] != `protected ".bashrc"` || deny["source"] != "builtin" ||
		deny["tier"] != "hard" || deny["decided_by"] != ByPolicy.String() || deny["level"] != "WARN" ||
		!strings.Contains(deny["caller"].(string), "helpers_test.go") {
		t.Fatalf("deny record = %v", deny)
	}
}

func TestConcurrentChecksWhilePolicySwaps(t *testing.T) {
	work := tempDir(t)
	allowAll := newPolicy(t, policy.Spec{WriteRoots: []string{work}})
	denyAll := newPolicy(t, policy.Spec{})
	g := newGuard(t, allowAll)
	ctx := enter(t, g)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := Check(ctx, &Event{Protocol: FS, Op: policy.OpWrite, Target: work + "/f"},
					&policy.PathRequest{Op: policy.OpWrite, Path: work + "/f"})
				var de *DenyError
				if err != nil && (!errors.As(err, &de) || de.Decision.Rule.Kind != policy.KindDefault) {
					t.Errorf("unexpected error %v", err)
					return
				}
			}
		}()
	}
	for i := range 200 {
		p := allowAll
		if i%2 == 0 {
			p = denyAll
		}
		if err := g.SetPolicy(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestNewRejectsBadInput(t *testing.T) {
	if _, err := New(nil); !errors.Is(err, ErrNilPolicy) {
		t.Fatalf("New(nil) = %v", err)
	}
	if _, err := New(newPolicy(t, policy.Spec{}), WithMode(FS, Mode(9))); err == nil {
		t.Fatal("unknown mode accepted")
	}
}

// TestDenyErrorHintInFileTerms: the error of a denial by a policy loaded
// from a file tells how to allow it in the file's terms.
func TestDenyErrorHintInFileTerms(t *testing.T) {
	dir := t.TempDir()
	f, err := policyfile.Parse("p.toml", []byte("[fs]\nwrite_roots = [\""+dir+"\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(f.Policy, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	out := filepath.Join(filepath.Dir(dir), "elsewhere.txt")
	err = Check(ctx, &Event{Protocol: FS, Op: policy.OpWrite, Target: out, Resolved: out}, &policy.PathRequest{Op: policy.OpWrite, Path: out})
	if err == nil || !strings.Contains(err.Error(), "to allow: add a directory that contains the target to [fs] write_roots") {
		t.Fatalf("denial: %v", err)
	}
}
