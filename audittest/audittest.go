// Package audittest turns auditguard into a test firewall for host code:
// one call builds a policy and a guard with exec and network fakes
// installed, enters a scope for the test, and fails the test at its end
// for every interaction the test did not script or expect.
//
//	fw := audittest.Enter(t, policy.Spec{WriteRoots: []string{dir}, Exec: ..., Net: ...})
//	fw.Exec.Expect("git", "status", "--short").Stdout(" M x.go\n")
//	fw.Net.Handle("api.example.com:80", handler)
//	err := tool.Run(fw.Context(), ...) // procguard, netguard, fsguard handles made from it
//
// Every guarded call is decided by the policy first; an allowed command
// or dial is then played by the fakes (proctest.Fake, nettest.Fake) and
// nothing is spawned or dialed; files are written for real (fsguard on the
// OS filesystem, under the spec's write roots). When the test ends, the
// firewall fails it, naming the call site in the code under test and the
// most specific fix, for:
//
//   - a command or dial the policy allowed but no script matched
//     ("script it");
//   - a call the policy denied that the test did not expect with
//     Recorder.AssertDenied ("allow it", or "expect it");
//   - a script that never happened, or happened fewer times than it said;
//   - a command still running when the test ended (a leak during the test);
//   - a call made after the test function returned (a goroutine that
//     outlived the test): it is denied, and reported as "after the test".
//
// Everything is per test: each Enter has its own guard, fakes and
// recorder, so parallel tests and subtests cannot see each other's calls.
//
// # Not guaranteed
//
//   - A call made after the firewall's cleanup has finished cannot fail the
//     test (Go does not let a finished test fail): it is denied with
//     audit.ErrScopeClosed, whose message says the scope was released.
//   - Only calls made through auditguard's handles are seen: code that
//     calls os/exec, net or os directly bypasses the firewall (as it
//     bypasses the guard; see docs/threat-model.md).
//   - Files are not faked: the policy decides, the OS filesystem acts.
//   - The fakes' own limits apply (see proctest and nettest).
package audittest

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/netguard"
	"github.com/auditguard/auditguard/netguard/nettest"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/proctest"
)

// Firewall is one test's guard, scope, fakes and recorder. Make it with
// Enter or EnterPolicy; it lives until the test's cleanup.
type Firewall struct {
	// Exec serves the commands the policy allows; nil with Real(audit.Exec).
	Exec *proctest.Fake
	// Net serves the dials the policy allows; nil with Real(audit.Net).
	Net *nettest.Fake
	// Recorder keeps every decision and asserts on denials.
	Recorder *Recorder

	t       testing.TB
	g       *audit.Guard
	ctx     context.Context
	release func()
	ended   context.Context // the test's context: done once the test function returned
	onCall  audit.OnCallFunc

	mu   sync.Mutex
	late []lateCall
}

// lateCall is a guarded call made after the test function returned.
type lateCall struct {
	protocol audit.Protocol
	op       policy.Op
	target   string
	argv     []string
	caller   string
}

type config struct {
	modes  []modeOverride
	real   [3]bool
	guard  []audit.Option
	onCall audit.OnCallFunc
	logger *slog.Logger
}

type modeOverride struct {
	p audit.Protocol
	m audit.Mode
}

// Option configures a Firewall.
type Option func(*config)

// Mode sets protocol p's mode for this test: Warn lets calls the policy
// denies go ahead (to the fakes) and logs them, Off skips the policy.
func Mode(p audit.Protocol, m audit.Mode) Option {
	return func(c *config) { c.modes = append(c.modes, modeOverride{p, m}) }
}

// Real installs no fake for p (audit.Exec or audit.Net): the commands or
// dials the policy allows really run, as in production.
func Real(p audit.Protocol) Option {
	return func(c *config) {
		if int(p) < len(c.real) {
			c.real[p] = true
		}
	}
}

// GuardOptions passes options to audit.New (WithBeforeDeny, WithData,
// WithRescueHard, WithCall-aware callbacks). Use OnCall rather than
// audit.WithOnCall: the firewall keeps its own.
func GuardOptions(opts ...audit.Option) Option {
	return func(c *config) { c.guard = append(c.guard, opts...) }
}

// OnCall sets the host OnCall callback the firewall asks after its own
// check (calls after the test are denied before it is asked).
func OnCall(fn audit.OnCallFunc) Option { return func(c *config) { c.onCall = fn } }

// Logger sends the guard's decision records to l (discarded by default:
// the firewall reports what matters through the test).
func Logger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// Enter builds a policy from spec and enters a firewall for t; see the
// package doc. A spec that does not build fails the test at once.
func Enter(t testing.TB, spec policy.Spec, opts ...Option) *Firewall {
	t.Helper()
	p, err := policy.New(spec)
	if err != nil {
		t.Fatalf("audittest: the policy does not build: %v", err)
	}
	return EnterPolicy(t, p, opts...)
}

// EnterPolicy is Enter with a built policy (policyfile.Load of a TOML file,
// say).
func EnterPolicy(t testing.TB, p *policy.Policy, opts ...Option) *Firewall {
	t.Helper()
	var c config
	for _, o := range opts {
		o(&c)
	}
	fw := &Firewall{t: t, ended: t.Context(), onCall: c.onCall, Recorder: &Recorder{rec: audit.NewRecorder()}}
	logger := c.logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	gopts := append([]audit.Option{}, c.guard...)
	gopts = append(gopts, audit.WithLogger(logger), audit.WithRecorder(fw.Recorder.rec), audit.WithLogAllows(),
		audit.WithOnCall(fw.check))
	for _, m := range c.modes {
		gopts = append(gopts, audit.WithMode(m.p, m.m))
	}
	if !c.real[audit.Exec] {
		fw.Exec = &proctest.Fake{}
		gopts = append(gopts, procguard.WithDouble(fw.Exec))
	}
	if !c.real[audit.Net] {
		fw.Net = &nettest.Fake{}
		gopts = append(gopts, netguard.WithDouble(fw.Net))
	}
	g, err := audit.New(p, gopts...)
	if err != nil {
		t.Fatalf("audittest: %v", err)
	}
	// The scope's context does not end with the test's: a goroutine that
	// outlives the test must reach the guard to be reported, not stop at a
	// cancelled context first.
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		t.Fatalf("audittest: %v", err)
	}
	fw.g, fw.ctx, fw.release = g, ctx, release
	t.Cleanup(func() {
		t.Helper()
		fw.finish()
	})
	return fw
}

// Context returns the context carrying the test's scope: make the code
// under test's handles from it.
func (fw *Firewall) Context() context.Context { return fw.ctx }

// Guard returns the test's guard.
func (fw *Firewall) Guard() *audit.Guard { return fw.g }

var ruleAfterTest = &policy.Rule{Kind: policy.KindHost, Pattern: "no guarded calls after the test function returned", Source: "audittest",
	Hint: "wait for the goroutine before the test returns (sync.WaitGroup, errgroup), or stop it through its context"}

// check is the firewall's OnCall: calls made once the test function has
// returned are denied and kept for the report; the others go on to the
// host callback, if any, and the policy.
func (fw *Firewall) check(ctx context.Context, ev *audit.Event) audit.Verdict {
	if fw.ended.Err() != nil {
		fw.mu.Lock()
		fw.late = append(fw.late, lateCall{protocol: ev.Protocol, op: ev.Op, target: ev.Target,
			argv: append([]string(nil), ev.Argv...), caller: audit.FormatFrame(ev.Caller())})
		fw.mu.Unlock()
		ev.Decision = policy.Deny(policy.TierSelf, ruleAfterTest, "")
		return audit.Deny
	}
	if fw.onCall != nil {
		return fw.onCall(ctx, ev)
	}
	return audit.Continue
}

// finish is the test's cleanup: it reports, then releases the scope
// (which kills faked commands still running) and closes the fakes.
func (fw *Firewall) finish() {
	fw.t.Helper()
	var leaks []proctest.Call
	if fw.Exec != nil {
		leaks = fw.Exec.Running()
	}
	fw.release()
	if fw.Net != nil {
		fw.Net.Close()
	}
	if fw.t.Skipped() {
		return // a skipped test asserts nothing
	}
	// A test that already failed may have stopped before the code ran its
	// scripts: reporting them unused would bury the real failure.
	for _, p := range fw.problems(leaks, !fw.t.Failed()) {
		fw.t.Error(p)
	}
	for _, r := range fw.Recorder.Records() {
		if r.Outcome == audit.Warned {
			fw.t.Logf("audittest: would deny (%s mode warn): %s at %s", r.Protocol, describe(r.Protocol, r.Op, r.Target, r.Argv), r.Caller)
		}
	}
}
