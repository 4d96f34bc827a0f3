package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/netguard"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

const explainUsage = `usage: auditdemo explain --policy FILE write PATH
       auditdemo explain --policy FILE read PATH
       auditdemo explain --policy FILE exec CMD ARGS...
       auditdemo explain --policy FILE dial HOST:PORT`

// cmdExplain says what the policy would do with one write, read, command
// or dial, and why, without doing it: nothing is written, read, run or
// dialed.
//
// Exit status: 0 when the call would go ahead (allowed; or denied by the
// policy while the protocol's mode is warn or off), 1 when it would be
// refused, 2 on a usage error or a policy file that does not load.
func cmdExplain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("auditdemo explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("policy", "", "the policy `FILE`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rest := fs.Args()
	if *path == "" || len(rest) < 2 || (rest[0] != "exec" && len(rest) != 2) {
		fmt.Fprintln(stderr, explainUsage)
		return 2
	}
	pol, g, err := loadGuard(*path, audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		printLoadError(stderr, *path, err)
		return 2
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		fmt.Fprintln(stderr, "auditdemo explain:", err)
		return 2
	}
	defer release()

	var (
		proto audit.Protocol
		d     policy.Decision
		facts [][2]string
	)
	switch verb := rest[0]; verb {
	case "write", "read":
		proto = audit.FS
		op := policy.OpWrite
		if verb == "read" {
			op = policy.OpRead
		}
		// fsguard's pure check: the resolution and decision a write or read
		// through a guarded handle (working directory: the process's) would
		// get.
		gfs := fsguard.New(ctx, afero.NewOsFs())
		facts = append(facts, [2]string{verb, rest[1]})
		fd := gfs.Check(op, rest[1])
		d = fd.Decision
		if fd.Resolved == "" && fd.Err != nil {
			facts = append(facts, [2]string{"resolved", "cannot be resolved safely: " + fd.Err.Error()})
		} else {
			facts = append(facts, [2]string{"resolved", fd.Resolved})
		}
	case "exec":
		proto = audit.Exec
		pd := procguard.Check(ctx, rest[1], rest[2:]...)
		d = pd.Decision
		facts = append(facts, [2]string{"exec", strings.Join(rest[1:], " ")})
		if pd.Program != "" {
			facts = append(facts, [2]string{"program", pd.Program})
		} else {
			facts = append(facts, [2]string{"program", "not found in the policy's exec path"})
		}
		facts = append(facts, [2]string{"dir", pd.Dir})
		if len(pd.Plan.Commands) > 1 || len(pd.Plan.Wrappers) > 0 {
			var runs []string
			for _, c := range pd.Plan.Commands {
				runs = append(runs, "["+strings.Join(c.Argv, " ")+"]")
			}
			facts = append(facts, [2]string{"runs", strings.Join(runs, " ")})
		}
		if pd.Plan.Opaque != "" {
			facts = append(facts, [2]string{"judged as", "the shell or wrapper itself: " + pd.Plan.Opaque})
		}
	case "dial":
		proto = audit.Net
		facts = append(facts, [2]string{"dial", "tcp " + rest[1]})
		d = netguard.Check(ctx, "tcp", rest[1]).Decision
	default:
		fmt.Fprintf(stderr, "auditdemo explain: unknown operation %q\n%s\n", verb, explainUsage)
		return 2
	}
	goesAhead := printDecision(stdout, facts, d, g.Mode(proto), pol.Policy.HintFor(d.Rule))
	if goesAhead {
		return 0
	}
	return 1
}

// policyDenied reports whether the policy denied the call. A facade's
// decision in warn mode reports Allowed (the call goes ahead) and keeps the
// denial's tier and rule.
func policyDenied(d policy.Decision) bool { return !d.Allowed || d.Tier != policy.TierNone }

// printDecision prints the facts, the decision and what the mode makes of
// it, and reports whether the call would go ahead.
func printDecision(w io.Writer, facts [][2]string, d policy.Decision, mode audit.Mode, hint string) bool {
	for _, f := range facts {
		fmt.Fprintf(w, "%-10s %s\n", f[0]+":", f[1])
	}
	denied := policyDenied(d)
	verdict := "allowed"
	if denied {
		verdict = "denied (" + d.Tier.String() + ")"
	}
	fmt.Fprintf(w, "%-10s %s\n", "decision:", verdict)
	fmt.Fprintf(w, "%-10s %s\n", "rule:", d.Rule.String())
	if d.Rule != nil && d.Rule.Class != 0 {
		fmt.Fprintf(w, "%-10s %s\n", "class:", classLabel(d.Rule.Class))
	}
	if d.Detail != "" {
		fmt.Fprintf(w, "%-10s %s\n", "detail:", d.Detail)
	}
	if denied && hint != "" {
		fmt.Fprintf(w, "%-10s %s\n", "hint:", hint)
	}
	goesAhead := !denied
	var outcome string
	switch {
	case mode == audit.Off:
		goesAhead = true
		outcome = "the call would go ahead unchecked (mode off)"
	case !denied:
		outcome = "the call would go ahead"
	case mode == audit.Warn && d.Tier == policy.TierSoft:
		goesAhead = true
		outcome = "the call would go ahead and be logged as would-deny (mode warn)"
	case mode == audit.Warn:
		outcome = "the call would be refused: warn carries out soft denials only (audit.WithWarnHard opts in per protocol)"
	default:
		outcome = "the call would be refused (mode enforce); a BeforeDeny callback could rescue a soft denial"
		if d.Tier != policy.TierSoft {
			outcome = "the call would be refused (mode enforce)"
		}
	}
	fmt.Fprintf(w, "%-10s %s\n", "outcome:", outcome)
	return goesAhead
}
