package toolset_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/toolset"
)

// Every record a call's decisions make names the call: tool#id, and its
// Invocation says the tool, the id and the typed input.
func TestRecordsNameTheCall(t *testing.T) {
	f := newFixture(t)
	f.file("a.txt", "x\n")
	f.rec.Reset()

	f.ok(t, "toolu_01", "read", map[string]any{"path": "a.txt"})
	res, err := f.call("toolu_02", "write", map[string]any{"path": ".git/hooks/pre-commit", "content": "x"})
	mustFail(t, res, err, toolset.KindDenied)
	// Without an id the Set numbers the call.
	if _, err := f.set.Read(context.Background(), toolset.ReadInput{Path: "a.txt"}); err != nil {
		t.Fatal(err)
	}

	tools := map[string]int{}
	var denied []audit.Record
	for _, r := range f.rec.Records() {
		tools[r.Tool]++
		if r.Outcome == audit.Denied {
			denied = append(denied, r)
		}
	}
	if tools["read#toolu_01"] == 0 || tools["write#toolu_02"] == 0 {
		t.Errorf("records by tool call: %v", tools)
	}
	numbered := false
	for tool := range tools {
		if tool == "" {
			t.Errorf("a record names no tool call: %v", tools)
		}
		if strings.HasPrefix(tool, "read#") && tool != "read#toolu_01" {
			numbered = true
		}
	}
	if !numbered {
		t.Errorf("the call without an id was not numbered: %v", tools)
	}
	if len(denied) != 1 || denied[0].Tool != "write#toolu_02" || !strings.Contains(denied[0].Target, ".git/hooks/pre-commit") {
		t.Errorf("denied records: %+v", denied)
	}
}

// A callback sees the tool call: InvocationOf gives the tool, the id and
// the typed input; the mark ends with the call.
func TestInvocationInCallbacks(t *testing.T) {
	f := newFixture(t)
	f.file("a.txt", "x\n")
	var mu sync.Mutex
	var seen []toolset.Invocation
	var leftover *audit.Call
	g, err := audit.New(mustPolicy(t, f.ws), audit.WithOnCall(func(ctx context.Context, ev *audit.Event) audit.Verdict {
		if inv := toolset.InvocationOf(ev.Call); inv != nil {
			mu.Lock()
			seen = append(seen, *inv)
			leftover = ev.Call
			mu.Unlock()
		}
		return audit.Continue
	}), audit.WithLogger(discard()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, _ := g.Enter(context.Background())
	defer release()
	set, err := toolset.New(ctx, toolset.Options{Workspace: f.ws})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.Read(toolset.WithCallID(ctx, "c9"), toolset.ReadInput{Path: "a.txt", Limit: 5}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("OnCall saw no tool call")
	}
	in, ok := seen[0].Input.(toolset.ReadInput)
	if seen[0].Tool != "read" || seen[0].ID != "c9" || !ok || in.Limit != 5 {
		t.Errorf("invocation = %+v", seen[0])
	}
	if leftover.Active() {
		t.Error("the call is still marked active after it returned")
	}
}

// A released scope revokes the Set: calls are refused with the scope's
// teaching text and nothing is written.
func TestReleasedScope(t *testing.T) {
	f := newFixture(t)
	f.release()
	res, err := f.call("r1", "write", map[string]any{"path": "late.txt", "content": "x"})
	mustFail(t, res, err, toolset.KindDenied, "released")
	if _, ok := f.read("late.txt"); ok {
		t.Error("a call after release wrote a file")
	}
	if _, err := toolset.New(context.Background(), toolset.Options{Workspace: f.ws}); err == nil {
		t.Error("New without a scope succeeded")
	}
	if _, err := toolset.New(f.ctx, toolset.Options{}); err == nil {
		t.Error("New without a workspace succeeded")
	}
}

// A cancelled caller's context stops a call; the Set's scope still holds.
func TestCallerContext(t *testing.T) {
	srv, _ := fetchServer(t)
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.set.Fetch(ctx, toolset.FetchInput{URL: srv.URL + "/text"})
	if err == nil || !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "canceled") && !errors.Is(err, audit.ErrDenied) {
		t.Errorf("fetch on a cancelled context: %v", err)
	}
}

// Calls run concurrently, each in its own nested scope.
func TestConcurrentCalls(t *testing.T) {
	f := newFixture(t)
	for i := range 8 {
		f.file(fmt.Sprintf("d/f%d.txt", i), fmt.Sprintf("needle %d\n", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 4 {
				id := fmt.Sprintf("c%d-%d", i, j)
				ctx := toolset.WithCallID(context.Background(), id)
				if res, err := f.set.Grep(ctx, toolset.GrepInput{Pattern: "needle", Path: "d"}); err != nil || strings.Count(res.Text, "needle") != 8 {
					errs <- fmt.Errorf("grep %s: %v %q", id, err, res.Text)
				}
				p := fmt.Sprintf("out/%d/%d.txt", i, j)
				if _, err := f.set.Write(ctx, toolset.WriteInput{Path: p, Content: id}); err != nil {
					errs <- err
				}
				if c, _ := f.read(p); c != id {
					errs <- fmt.Errorf("%s holds %q", p, c)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A caller's context with its own scope (a host narrowing one call with
// audit.Restrict) is the one the call nests in: the narrower policy
// holds for that call and no other.
func TestCallerScopeRestricts(t *testing.T) {
	f := newFixture(t)
	f.file("sub/.keep", "")
	narrow, err := policy.New(policy.Spec{WriteRoots: []string{filepath.Join(f.ws, "sub")}, Home: f.ws})
	if err != nil {
		t.Fatal(err)
	}
	rctx, done, err := audit.Restrict(f.ctx, narrow)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if _, err := f.set.Write(rctx, toolset.WriteInput{Path: "sub/in.txt", Content: "x"}); err != nil {
		t.Errorf("write inside the narrowed root: %v", err)
	}
	res, err := f.set.Write(rctx, toolset.WriteInput{Path: "top.txt", Content: "x"})
	mustFail(t, res, err, toolset.KindDenied, "top.txt")
	if _, ok := f.read("top.txt"); ok {
		t.Error("the restricted call wrote top.txt")
	}
	if _, err := f.set.Write(context.Background(), toolset.WriteInput{Path: "top.txt", Content: "x"}); err != nil {
		t.Errorf("an unrestricted call: %v", err)
	}
}
