package audittest

import (
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/netguard/nettest"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/proctest"
)

// problems renders every reason to fail the test, tripwire style: what was
// attempted, where, why it fails the test, and the most specific fix.
func (fw *Firewall) problems(leaks []proctest.Call, unused bool) []string {
	var out []string
	fw.mu.Lock()
	late := append([]lateCall(nil), fw.late...)
	fw.mu.Unlock()
	for _, l := range late {
		out = append(out, report{
			head:   l.protocol.String() + " after the test: " + describe(l.protocol, l.op, l.target, l.argv),
			caller: l.caller,
			why:    "the test function had already returned (a goroutine outlived the test); the call was denied",
			fixes:  []string{ruleAfterTest.Hint},
		}.String())
	}
	if fw.Exec != nil {
		for _, c := range fw.Exec.Unexpected() {
			out = append(out, report{
				head:   "unexpected exec during the test: " + quoteArgv(c.Argv),
				caller: audit.FormatFrame(c.Caller),
				why:    "the policy allowed it, but no script matches it" + spentNote(c.Err),
				fixes: []string{
					"script it: fw.Exec.Expect(" + goList(c.Argv) + ").Stdout(...)",
					"or, if the code should not run it, fix the code at " + audit.FormatFrame(c.Caller),
				},
			}.String())
		}
		for _, c := range fw.Exec.Mismatches() {
			out = append(out, report{
				head:   "exec did not follow its script: " + quoteArgv(c.Argv),
				caller: audit.FormatFrame(c.Caller),
				why:    c.Mismatch + " (script " + c.Script.String() + ")",
				fixes:  []string{"fix the script's expectation, or the input the code gives"},
			}.String())
		}
	}
	if fw.Net != nil {
		for _, c := range fw.Net.Unexpected() {
			out = append(out, report{
				head:   "unexpected dial during the test: " + c.Network + " " + c.Address,
				caller: audit.FormatFrame(c.Caller),
				why:    "the policy allowed it, but no route matches it",
				fixes: []string{
					"script it: fw.Net.Expect(" + strconv.Quote(c.Network) + ", " + strconv.Quote(c.Address) + ").Send(...), or fw.Net.Handle(" + strconv.Quote(c.Address) + ", handler) for HTTP",
					"or, if the code should not dial it, fix the code at " + audit.FormatFrame(c.Caller),
				},
			}.String())
		}
		for _, c := range fw.Net.Mismatches() {
			out = append(out, report{
				head:   "dial did not follow its conversation: " + c.Network + " " + c.Address,
				caller: audit.FormatFrame(c.Caller),
				why:    c.Mismatch + " (route " + c.Route.String() + ")",
				fixes:  []string{"fix the conversation's steps, or what the code sends"},
			}.String())
		}
	}
	for _, r := range fw.Recorder.unexpected() {
		out = append(out, report{
			head:   "denied " + r.Protocol.String() + " during the test: " + describe(r.Protocol, r.Op, r.Target, r.Argv),
			caller: r.Caller,
			why:    "the policy denied it: " + r.Rule + " (" + r.Source + ") [" + r.Tier.String() + "]",
			fixes: append(allowFixes(r),
				"expect it: fw.Recorder.AssertDenied(t, audit."+protoConst(r.Protocol)+", "+strconv.Quote(assertTarget(r))+")"),
		}.String())
	}
	if fw.Exec != nil && unused {
		for _, s := range fw.Exec.Unused() {
			out = append(out, report{
				head:  "scripted exec never happened: " + s.String(),
				why:   "it served " + strconv.Itoa(s.Used()) + " commands; it expects " + s.Expected(),
				fixes: []string{"drop the script, or mark it optional with .AnyTimes()", "or find out why the code did not run it"},
			}.String())
		}
	}
	if fw.Net != nil && unused {
		for _, r := range fw.Net.Unused() {
			out = append(out, report{
				head:  "scripted dial never happened: " + r.String(),
				why:   "it served " + usedOf(r) + "; it expects " + r.Expected(),
				fixes: []string{"drop the route, or mark it optional with .AnyTimes()", "or find out why the code did not dial it"},
			}.String())
		}
	}
	for _, c := range leaks {
		out = append(out, report{
			head:   "exec still running when the test ended (a leak during the test): " + quoteArgv(c.Argv),
			caller: audit.FormatFrame(c.Caller),
			why:    "it was started during the test and never finished; the firewall killed it",
			fixes:  []string{"Wait for the command (or cancel its context and Wait) before the test returns"},
		}.String())
	}
	return out
}

func usedOf(r *nettest.Route) string {
	if reqs := r.Requests(); len(reqs) > 0 || r.Used() > 0 {
		return strconv.Itoa(r.Used()) + " dials and " + strconv.Itoa(len(reqs)) + " requests"
	}
	return "nothing"
}

// report is one failure, rendered like tripwire's: what, where, why, fix.
type report struct {
	head, caller, why string
	fixes             []string
}

func (r report) String() string {
	var b strings.Builder
	b.WriteString("audittest: ")
	b.WriteString(r.head)
	if r.caller != "" {
		b.WriteString("\n    called at: ")
		b.WriteString(r.caller)
	}
	if r.why != "" {
		b.WriteString("\n    why: ")
		b.WriteString(r.why)
	}
	if len(r.fixes) > 0 {
		b.WriteString("\n    fix one of:")
		for _, f := range r.fixes {
			b.WriteString("\n      - ")
			b.WriteString(f)
		}
	}
	return b.String()
}

// describe names a call for a report: the argv of a command, the address
// of a dial, the operation and path of a file call.
func describe(p audit.Protocol, op policy.Op, target string, argv []string) string {
	switch {
	case p == audit.Exec && len(argv) > 0:
		return quoteArgv(argv)
	case p == audit.Net:
		return op.String() + " " + target
	}
	return op.String() + " " + strconv.Quote(target)
}

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, " ") + "]"
}

// goList renders strings as Go arguments: "git", "status".
func goList(xs []string) string {
	q := make([]string, len(xs))
	for i, a := range xs {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, ", ")
}

func spentNote(err error) string {
	if err == nil {
		return ""
	}
	if _, after, ok := strings.Cut(err.Error(), "(it matches "); ok {
		return " (it matches " + after
	}
	return ""
}

func protoConst(p audit.Protocol) string {
	switch p {
	case audit.FS:
		return "FS"
	case audit.Exec:
		return "Exec"
	case audit.Net:
		return "Net"
	}
	return p.String()
}

// assertTarget is the target AssertDenied should be given for r.
func assertTarget(r audit.Record) string {
	if r.Target != "" {
		return r.Target
	}
	return r.Resolved
}

// allowFixes suggests the narrowest policy entry that would allow r.
func allowFixes(r audit.Record) []string {
	if r.Tier != policy.TierSoft && r.Tier != policy.TierHard {
		return nil // invalid input and self-protection are never allowed
	}
	special := r.Protocol == audit.Net && strings.Contains(r.Rule, "special-purpose")
	if r.Tier == policy.TierHard && !special {
		return []string{"allow it: drop the deny rule or protected entry that matched (" + r.Source + "), or rescue it in BeforeDeny with audit.WithRescueHard"}
	}
	switch r.Protocol {
	case audit.Exec:
		if len(r.Argv) == 0 {
			break
		}
		rule := "policy.ExecRule{Program: " + strconv.Quote(r.Argv[0])
		if len(r.Argv) > 1 {
			rule += ", Args: []string{" + goList(r.Argv[1:]) + "}"
		}
		rule += "}"
		return []string{"allow it: add " + rule + " to the spec's Exec.Rules, then script it with fw.Exec.Expect(" + goList(r.Argv) + ")"}
	case audit.Net:
		host, port, err := net.SplitHostPort(r.Target)
		if err != nil {
			break
		}
		var rule string
		if _, err := netip.ParseAddr(host); err == nil {
			rule = "policy.NetRule{CIDR: " + strconv.Quote(host)
		} else {
			rule = "policy.NetRule{Host: " + strconv.Quote(host)
		}
		rule += ", Ports: []string{" + strconv.Quote(port) + "}"
		if r.Op == policy.OpListen {
			rule += ", Listen: true"
		}
		rule += "}"
		fix := "allow it: add " + rule + " to the spec's Net.Rules"
		if special {
			fix += " (a special-purpose address is unlocked only by a CIDR rule inside its range, never by a host rule)"
		}
		if r.Op == policy.OpConnect {
			fix += ", then script it with fw.Net.Expect(\"tcp\", " + strconv.Quote(r.Target) + ")"
		}
		return []string{fix}
	case audit.FS:
		where := r.Resolved
		if where == "" {
			where = r.Target
		}
		return []string{"allow it: add a write root that holds it to the spec, e.g. WriteRoots: []string{" + strconv.Quote(filepath.Dir(where)) + "}"}
	}
	return []string{"allow it: add a rule to the spec"}
}
