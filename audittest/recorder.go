package audittest

import (
	"sync"
	"testing"

	"github.com/auditguard/auditguard/audit"
)

// Recorder keeps every decision of a firewall's guard (allows included)
// and asserts on them. A denial fails the test at its end unless an
// AssertDenied matched it. It is safe for concurrent use.
type Recorder struct {
	rec *audit.Recorder

	mu       sync.Mutex
	expected map[int]bool // indexes of denials an AssertDenied matched
}

// Records returns a copy of every record so far, in order.
func (r *Recorder) Records() []audit.Record { return r.rec.Records() }

// Denials returns every denial so far, expected or not (calls after the
// test included).
func (r *Recorder) Denials() []audit.Record {
	var out []audit.Record
	for _, rec := range r.rec.Records() {
		if rec.Outcome == audit.Denied {
			out = append(out, rec)
		}
	}
	return out
}

// AssertDenied checks that at least one call of protocol p to target was
// denied, fails t otherwise, and marks every such denial as expected so
// the end of the test does not report it. target is the command name as
// the code gave it ("git"), the address dialed ("api.example.com:443") or
// the path as named or as resolved. It returns the matching records.
func (r *Recorder) AssertDenied(t testing.TB, p audit.Protocol, target string) []audit.Record {
	t.Helper()
	var out []audit.Record
	r.mu.Lock()
	for i, rec := range r.rec.Records() {
		if rec.Outcome == audit.Denied && rec.Protocol == p && (rec.Target == target || rec.Resolved == target || rec.Program == target) {
			if r.expected == nil {
				r.expected = map[int]bool{}
			}
			r.expected[i] = true
			out = append(out, rec)
		}
	}
	r.mu.Unlock()
	if len(out) == 0 {
		t.Errorf("audittest: AssertDenied(%s, %q): no such denial; denials so far: %s", p, target, summarize(r.Denials()))
	}
	return out
}

// AssertNoDenials fails t if any call has been denied so far.
func (r *Recorder) AssertNoDenials(t testing.TB) {
	t.Helper()
	if d := r.Denials(); len(d) > 0 {
		t.Errorf("audittest: AssertNoDenials: %d denied: %s", len(d), summarize(d))
	}
}

// unexpected returns the denials no AssertDenied matched, leaving out the
// calls after the test (reported on their own).
func (r *Recorder) unexpected() []audit.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []audit.Record
	for i, rec := range r.rec.Records() {
		if rec.Outcome == audit.Denied && !r.expected[i] && rec.Source != ruleAfterTest.Source {
			out = append(out, rec)
		}
	}
	return out
}

func summarize(recs []audit.Record) string {
	if len(recs) == 0 {
		return "none"
	}
	s := ""
	for i, rec := range recs {
		if i > 0 {
			s += "; "
		}
		s += rec.Protocol.String() + " " + describe(rec.Protocol, rec.Op, rec.Target, rec.Argv) + " at " + rec.Caller
	}
	return s
}
