package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
)

const suggestUsage = "usage: auditdemo suggest --log FILE [--policy FILE [--diff] [--keep-modes]]"

// cmdSuggest reads a JSON-lines audit log written in warn mode and prints
// the narrowest policy-file additions that would have allowed its
// would-deny events:
//
//   - fs: a write root for the narrowest existing directory that holds the
//     resolved path (the path itself when it is a directory; for delete
//     and move, never the path itself: a write root can never be removed
//     or renamed), since a root is a directory a guarded handle opens; a
//     read root for the exact path of a denied read;
//   - exec: an [[exec.allow]] rule for each program the command would run
//     (shells and wrappers unwrapped as procguard does), by real path, with
//     the exact arguments as its argument prefix and as a match example;
//   - net: an [[net.allow]] rule for the exact host name or address and the
//     exact port. A special-purpose address (loopback, private ranges) is
//     unlocked by a rule for that one address and port, said in a comment;
//     cloud metadata endpoints are never suggested.
//
// Hard denials no addition can overturn (protected names, read-deny
// entries, explicit deny rules, metadata endpoints, invalid input) are
// printed as TOML comments saying why. Everything is deduplicated, and an
// entry already covered by another suggested entry is left out.
//
// A decision names one reason only (the first soft denial of a command,
// say, not also its working directory), so some additions may take a
// second warn-mode run to find. --policy names the policy the log was
// written under: its exec path finds the programs a shell script runs
// (DefaultExecPath otherwise), and a command's working directory (from the
// record's detail) outside its write roots becomes a write root too.
// Without it, that directory is a note.
//
// Without --policy, suggest prints the additions alone. With it, it prints
// the merged policy: the file with the additions written into its lists
// and tables, every other line as it was, and its "warn" modes set to
// "enforce" (--keep-modes keeps them, for another warn round); merge.go
// says how. The merged policy is loaded before it is printed. --diff
// prints a unified diff against the file instead. The summary goes to
// stderr then, so that stdout is the file (or the diff).
//
// Exit status: 0, 1 when the log cannot be read or has malformed lines or
// the merge fails or does not load, 2 on a usage error or a --policy file
// that does not load.
func cmdSuggest(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("auditdemo suggest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	logPath := fs.String("log", "", "the JSON-lines audit log `FILE` of a warn-mode run")
	polPath := fs.String("policy", "", "the policy `FILE` the log was written under (its exec path and write roots); print it merged with the additions")
	diff := fs.Bool("diff", false, "with --policy: print a unified diff against the policy file instead of the merged file")
	keepModes := fs.Bool("keep-modes", false, "with --policy: keep \"warn\" modes in the merged file instead of setting them to \"enforce\"")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *logPath == "" || fs.NArg() != 0 || (*polPath == "" && (*diff || *keepModes)) {
		fmt.Fprintln(stderr, suggestUsage)
		return 2
	}
	var pol *policy.Policy
	if *polPath != "" {
		p, err := policyfile.Load(*polPath)
		if err != nil {
			printLoadError(stderr, *polPath, err)
			return 2
		}
		pol = p
	}
	f, err := os.Open(*logPath)
	if err != nil {
		fmt.Fprintln(stderr, "auditdemo suggest:", err)
		return 1
	}
	defer f.Close()
	recs, err := readLog(f)
	if err != nil {
		fmt.Fprintf(stderr, "auditdemo suggest: %s: %v\n", *logPath, err)
		return 1
	}
	s := newSuggester(pol)
	for _, r := range recs {
		switch r.Outcome {
		case "would-deny":
			s.add(r)
		case "denied":
			// Warn mode still refuses hard-tier calls (special-purpose
			// addresses, protected names): they are what a warn run would
			// have needed too, so they are suggested (or explained) alike.
			if r.Tier == "hard" && r.DecidedBy == "policy" {
				s.add(r)
				continue
			}
			s.denied++
		}
	}
	if *polPath == "" {
		s.write(stdout, *logPath)
		return 0
	}
	return s.writeMerged(stdout, stderr, *polPath, *logPath, *diff, *keepModes)
}

// writeMerged prints the policy at polPath merged with the additions, or
// the diff from it, after loading the merged text.
func (s *suggester) writeMerged(stdout, stderr io.Writer, polPath, logPath string, diff, keepModes bool) int {
	base, err := os.ReadFile(polPath)
	if err != nil {
		fmt.Fprintln(stderr, "auditdemo suggest:", err)
		return 1
	}
	s.writeSummary(stderr, logPath, s.additions())
	merged, err := s.mergePolicy(base, keepModes, logPath)
	if err != nil {
		fmt.Fprintf(stderr, "auditdemo suggest: cannot merge into %s: %v\n", polPath, err)
		return 1
	}
	if _, err := policyfile.Parse(polPath, merged); err != nil {
		fmt.Fprintln(stderr, "auditdemo suggest: the merged policy does not load:")
		printLoadError(stderr, polPath, err)
		return 1
	}
	if !diff {
		stdout.Write(merged)
		return 0
	}
	fmt.Fprint(stdout, unifiedDiff(polPath, polPath+" (merged)", base, merged))
	return 0
}

// logRecord is one line of an audit log (audit/record.go names the
// attributes).
type logRecord struct {
	Outcome   string   `json:"outcome"`
	Protocol  string   `json:"protocol"`
	Op        string   `json:"op"`
	Target    string   `json:"target"`
	Target2   string   `json:"target2"`
	Resolved  string   `json:"resolved"`
	Resolved2 string   `json:"resolved2"`
	Argv      []string `json:"argv"`
	Program   string   `json:"program"`
	Detail    string   `json:"detail"`
	Rule      string   `json:"rule"`
	Source    string   `json:"source"`
	Tier      string   `json:"tier"`
	DecidedBy string   `json:"decided_by"`
}

// readLog parses JSON lines; blank lines are skipped, a malformed line is
// an error naming its line number.
func readLog(r io.Reader) ([]logRecord, error) {
	var out []logRecord
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var rec logRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// splitRule splits a record's rule (`kind "pattern"`) into its parts.
func splitRule(rule string) (kind, pattern string) {
	i := strings.Index(rule, ` "`)
	if i < 0 {
		return rule, ""
	}
	p, err := strconv.Unquote(rule[i+1:])
	if err != nil {
		return rule[:i], rule[i+1:]
	}
	return rule[:i], p
}

// describe renders an event for comments: "fs write /w/a.txt".
func (r logRecord) describe() string {
	what := r.Target
	if r.Protocol == "fs" && r.Resolved != "" {
		what = r.Resolved // where the call really lands
	}
	if len(r.Argv) > 0 {
		what = strings.Join(r.Argv, " ")
	}
	switch {
	case r.Protocol == "fs" && r.Resolved2 != "":
		what += " -> " + r.Resolved2
	case r.Target2 != "":
		what += " -> " + r.Target2
	}
	if r.Op == r.Protocol { // "exec exec"
		return oneLine(r.Protocol + " " + what)
	}
	return oneLine(r.Protocol + " " + r.Op + " " + what)
}

func (r logRecord) because() string {
	s := r.Rule
	if r.Source != "" {
		s += " (" + r.Source + ")"
	}
	if r.Tier != "" {
		s += ", " + r.Tier
	}
	return oneLine(s)
}

// oneLine makes s safe inside a TOML comment: one line, and no control
// character or invalid UTF-8 (which TOML forbids in comments). Logged
// names come from the guarded code, so a name must never be able to end
// the comment and add a rule.
func oneLine(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1, r < 0x20, r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// suggester collects the additions.
type suggester struct {
	pol        *policy.Policy // the policy the log was written under, if known
	execPath   []string
	events     int
	writeRoots []entry
	readRoots  []entry
	execAllow  []execSuggestion
	netAllow   []netSuggestion
	cannot     []string // comments: hard denials and what cannot be expressed
	cannotSeen map[string]bool
	denied     int // enforce-mode denials, which suggest does not read
	// isDir reports whether a path is an existing directory now (os.Stat;
	// tests swap it): a write root must be one.
	isDir func(string) bool
}

// entry is one suggested fs list entry and the events it allows.
type entry struct {
	path   string
	events []string
}

type execSuggestion struct {
	program string
	args    []string
	events  []string
	notes   []string
}

type netSuggestion struct {
	host, cidr, path string
	network          string // "" (tcp), "udp" or "unix"
	port             string // "" for unix
	listen           bool
	events           []string
	notes            []string
}

func newSuggester(pol *policy.Policy) *suggester {
	s := &suggester{pol: pol, execPath: policy.DefaultExecPath, cannotSeen: map[string]bool{},
		isDir: func(p string) bool { fi, err := os.Stat(p); return err == nil && fi.IsDir() }}
	if pol != nil {
		s.execPath = pol.ExecPath()
	}
	return s
}

// addWriteRoot suggests the narrowest write root that covers p and that a
// guarded handle can open: p itself when it is an existing directory, else
// its nearest existing ancestor below "/" (a file cannot be a root, and a
// directory the run did not leave behind cannot be opened). With none, it
// says so instead.
func (s *suggester) addWriteRoot(r logRecord, p, ev string) {
	for d := p; d != "/" && d != "." && d != ""; d = filepath.Dir(d) {
		if s.isDir(d) {
			if d != p {
				ev += " (its nearest existing directory " + d + ": a write root is a directory)"
			}
			s.writeRoots = addEntry(s.writeRoots, d, ev)
			return
		}
	}
	s.cannotSay(r, "neither "+p+" nor a directory above it exists now, and a write root must be an existing directory: run suggest where the warn run left its files")
}

// cannotAllow records a denial no addition overturns.
func (s *suggester) cannotAllow(r logRecord, why string) {
	s.comment(r, "no addition can allow it: "+why)
}

// cannotSay records a denial an addition could overturn, but which one the
// log does not tell.
func (s *suggester) cannotSay(r logRecord, why string) {
	s.comment(r, "no suggestion: "+why)
}

func (s *suggester) comment(r logRecord, why string) {
	c := "# " + r.describe() + "\n#   denied by " + r.because() + "\n#   " + oneLine(why)
	if !s.cannotSeen[c] {
		s.cannotSeen[c] = true
		s.cannot = append(s.cannot, c)
	}
}

// add turns one would-deny record into additions.
func (s *suggester) add(r logRecord) {
	s.events++
	kind, pattern := splitRule(r.Rule)
	switch r.Tier {
	case "soft":
	case "hard":
		if r.Protocol == "net" && strings.HasPrefix(pattern, "special-purpose ") {
			s.addNet(r, true)
			return
		}
		s.cannotAllow(r, hardWhy(kind, pattern))
		return
	case "invalid":
		s.cannotAllow(r, "the request is malformed or its target cannot be resolved safely; invalid input is never allowed")
		return
	default:
		s.cannotAllow(r, "a "+r.Tier+" denial is not about a missing rule")
		return
	}
	switch r.Protocol {
	case "fs":
		s.addFS(r)
	case "exec":
		s.addExec(r)
	case "net":
		s.addNet(r, false)
	default:
		s.cannotSay(r, "unknown protocol "+strconv.Quote(r.Protocol))
	}
}

// hardWhy says why a hard denial stays whatever is added.
func hardWhy(kind, pattern string) string {
	switch kind {
	case "protected":
		return "protected names stay read-only even inside write roots (drop the entry from the protected set if it must be writable)"
	case "git metadata":
		return "a repository's .git changes only as git's own commands change it (a plain git init, clone or worktree under the git profile writes its configuration or links)"
	case "read deny":
		return "read-deny entries are never readable (drop the entry if it must be)"
	case "write root":
		return "a write root itself cannot be removed or renamed"
	case "system":
		return "a built-in rule (/proc, /sys) no policy can change"
	case "exec rule":
		if strings.HasPrefix(pattern, "deny ") {
			return "an explicit deny rule beats every allow rule (drop the deny rule if it is wrong)"
		}
		return "a built-in exec rule (loader, interpreter or secret variables, arguments from input)"
	case "net rule":
		if strings.HasPrefix(pattern, "deny ") {
			return "an explicit deny rule beats every allow rule (drop the deny rule if it is wrong)"
		}
	}
	return "hard denials are overturned only by removing the rule, or by a BeforeDeny rescue with audit.WithRescueHard"
}

// addFS suggests the narrowest root for a soft fs denial.
func (s *suggester) addFS(r logRecord) {
	paths := []string{r.Resolved}
	if r.Resolved2 != "" {
		paths = append(paths, r.Resolved2)
	}
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			s.cannotSay(r, "the log has no resolved path for it")
			return
		}
		if !utf8.ValidString(p) {
			s.cannotSay(r, notUTF8)
			return
		}
	}
	ev := r.describe()
	switch r.Op {
	case "read":
		for _, p := range paths {
			s.readRoots = addEntry(s.readRoots, p, ev)
		}
	case "delete", "move":
		// A write root itself can never be removed or renamed: the
		// narrowest root that allows it is the directory holding it.
		for _, p := range paths {
			s.addWriteRoot(r, filepath.Dir(p), ev+" (its directory: a write root itself cannot be removed or renamed)")
		}
	default: // write, create, link, attr, chdir
		for _, p := range paths {
			s.addWriteRoot(r, p, ev)
		}
	}
}

func addEntry(list []entry, path, ev string) []entry {
	for i := range list {
		if list[i].path == path {
			if !slices.Contains(list[i].events, ev) {
				list[i].events = append(list[i].events, ev)
			}
			return list
		}
	}
	return append(list, entry{path: path, events: []string{ev}})
}

// planResolver finds programs as procguard does: the logged program for
// the name the command was started with, the policy's exec path for the
// programs a script names.
type planResolver struct {
	top, topProgram string
	path            []string
	dir             string
}

func (p planResolver) Program(name string) (string, error) {
	if name == p.top && p.topProgram != "" {
		return p.topProgram, nil
	}
	found, err := policy.LookPath(name, p.path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(found)
}

// Path resolves a redirection target. A relative one needs the command's
// working directory; when the log does not name it, Path returns "" so
// that the plan still lists the script's commands (addExec says what is
// missing).
func (p planResolver) Path(name string) (string, error) {
	if !filepath.IsAbs(name) && p.dir == "" {
		return "", nil
	}
	return policy.Resolve(policy.OSFS{}, name, p.dir, true)
}

// logDir returns the command's working directory from the record's detail
// ("dir=/w; ..."), when the log carries it.
func logDir(detail string) string {
	for _, part := range strings.Split(detail, "; ") {
		if d, ok := strings.CutPrefix(part, "dir="); ok && filepath.IsAbs(d) {
			return d
		}
	}
	return ""
}

const notUTF8 = "a name in it is not valid UTF-8, which a TOML policy file cannot express"

func allUTF8(ss []string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// addExec suggests an allow rule for every program the command would run.
func (s *suggester) addExec(r logRecord) {
	if len(r.Argv) == 0 {
		s.cannotSay(r, "the log has no argument list for it")
		return
	}
	ev := r.describe()
	dir := logDir(r.Detail)
	_, pattern := splitRule(r.Rule)
	var notes []string
	switch {
	case pattern == "commands run inside a write root" && dir == "":
		s.cannotSay(r, "the command's working directory is outside the write roots, and the log does not say which directory it was: add it as a write root (or run the command inside one)")
		return
	case pattern == "commands run inside a write root",
		// The decision names the first soft denial only: with the
		// policy, check the directory too.
		dir != "" && s.pol != nil && !s.pol.CheckExecDir(dir, "").Allowed && s.pol.CheckExecDir(dir, "").Tier == policy.TierSoft:
		// The narrowest root that lets it run there is the directory.
		s.writeRoots = addEntry(s.writeRoots, dir, ev+" (its working directory)")
	case dir != "" && s.pol == nil:
		notes = append(notes, "it ran in "+dir+", which must lie inside a write root too (pass --policy to have it checked)")
	}
	res := planResolver{top: r.Argv[0], topProgram: r.Program, path: s.execPath, dir: dir}
	plan := policy.PlanExec(res, r.Argv[0], r.Argv)
	for _, c := range plan.Commands {
		if !utf8.ValidString(c.Program) || !allUTF8(c.Argv) {
			s.cannotSay(r, notUTF8)
			continue
		}
		if c.Program == "" {
			s.cannotSay(r, fmt.Sprintf("%q is not found in the exec path (%s): install it there or name it by absolute path", c.Name, strings.Join(s.execPath, ":")))
			continue
		}
		s.addExecRule(c.Program, c.Argv[1:], ev, plan.Opaque, notes)
	}
	for _, rd := range plan.Redirects {
		switch {
		case !rd.Write:
		case !utf8.ValidString(rd.Path):
			s.cannotSay(r, notUTF8)
		case rd.Path == "":
			s.cannotSay(r, "the script writes to a relative path, and the log does not say in which directory it ran: "+
				"unless that is inside a write root, the target needs one (or the shell an allow rule for this script)")
		default:
			s.addWriteRoot(r, rd.Path, ev+" (a redirection target)")
		}
	}
}

func (s *suggester) addExecRule(program string, args []string, ev, opaque string, notes []string) {
	notes = slices.Clone(notes)
	exact := args
	for i, a := range args {
		if a == "" || strings.IndexByte(a, 0) >= 0 {
			exact = args[:i]
			notes = append(notes, "argument "+strconv.Itoa(i+1)+" is empty: a rule cannot name it, so the prefix stops before it")
			break
		}
		if a == "*" {
			notes = append(notes, `argument `+strconv.Itoa(i+1)+` is "*", which in a rule matches any one argument`)
		}
	}
	if len(exact) == 0 {
		notes = append(notes, "no arguments to name: rules match argument prefixes, so this one allows the program with any arguments")
	}
	if opaque != "" {
		notes = append(notes, "judged as the shell or wrapper itself: "+opaque)
	}
	for i := range s.execAllow {
		x := &s.execAllow[i]
		if x.program == program && slices.Equal(x.args, exact) {
			if !slices.Contains(x.events, ev) {
				x.events = append(x.events, ev)
			}
			for _, n := range notes {
				if !slices.Contains(x.notes, n) {
					x.notes = append(x.notes, n)
				}
			}
			return
		}
	}
	s.execAllow = append(s.execAllow, execSuggestion{program: program, args: exact, events: []string{ev}, notes: notes})
}

// addNet suggests an allow rule for the exact host or address and port.
func (s *suggester) addNet(r logRecord, special bool) {
	ev := r.describe()
	listen := r.Op == "listen"
	// A unix socket: the detail names the network; older logs without it
	// are told by the absolute path.
	if strings.HasPrefix(r.Detail, "unix") || (r.Detail == "" && strings.HasPrefix(r.Target, "/")) {
		if special {
			s.cannotAllow(r, hardWhy("net rule", ""))
			return
		}
		p := r.Resolved
		if !utf8.ValidString(p) {
			s.cannotSay(r, notUTF8)
			return
		}
		if p == "" {
			s.cannotSay(r, "the log has no resolved socket path for it")
			return
		}
		s.addNetRule(netSuggestion{path: p, network: "unix", listen: listen, events: []string{ev}})
		s.addWriteRoot(r, p, ev+" (unix sockets must also lie under a write root)")
		return
	}
	host, portStr, err := splitHostPort(r.Target)
	if err != nil {
		s.cannotSay(r, "the logged address "+strconv.Quote(r.Target)+" is not host:port")
		return
	}
	// The network is the event's detail ("tcp", "udp4", "tcp (request
	// target, ...)"); rules say tcp or udp. Older logs have no detail: tcp.
	network := ""
	if strings.HasPrefix(r.Detail, "udp") {
		network = "udp"
	}
	var addrs []netip.Addr
	for _, a := range strings.Split(r.Resolved, ", ") {
		if ip, err := netip.ParseAddr(a); err == nil {
			addrs = append(addrs, ip.Unmap())
		}
	}
	lit, litErr := netip.ParseAddr(host)
	if litErr == nil {
		addrs = []netip.Addr{lit.Unmap()}
	}
	var notes []string
	unlock := []netip.Addr{}
	for _, a := range addrs {
		sr, ok := policy.IsSpecial(a)
		if !ok {
			continue
		}
		if sr == nil || strings.HasPrefix(sr.Name, "cloud") {
			name := "an invalid or zoned address"
			if sr != nil {
				name = sr.Name
			}
			s.cannotAllow(r, a.String()+" is "+name+"; auditdemo never suggests unlocking it (a CIDR rule naming that exact address would, if you really mean it)")
			return
		}
		unlock = append(unlock, a)
		notes = append(notes, "unlocks the special-purpose address "+a.String()+" ("+sr.Name+", "+sr.Prefix.String()+") for port "+portStr+" only")
	}
	if special && len(unlock) == 0 {
		s.cannotSay(r, "a special-purpose address that the log does not name")
		return
	}
	if litErr == nil {
		s.addNetRule(netSuggestion{cidr: lit.Unmap().String(), network: network, port: portStr, listen: listen, events: []string{ev}, notes: notes})
		return
	}
	// A name: the host rule allows it; host rules never unlock special
	// addresses, so each special address it resolved to needs its own.
	s.addNetRule(netSuggestion{host: host, network: network, port: portStr, listen: listen, events: []string{ev}})
	for i, a := range unlock {
		s.addNetRule(netSuggestion{cidr: a.String(), network: network, port: portStr, listen: listen, events: []string{ev + " (resolved to " + a.String() + ")"}, notes: notes[i : i+1]})
	}
}

func splitHostPort(addr string) (host, port string, err error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", "", errors.New("no port")
	}
	host, port = addr[:i], addr[i+1:]
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if _, err := strconv.ParseUint(port, 10, 16); err != nil || host == "" {
		return "", "", errors.New("bad host:port")
	}
	return strings.ToLower(host), port, nil
}

func (s *suggester) addNetRule(n netSuggestion) {
	for i := range s.netAllow {
		x := &s.netAllow[i]
		if x.host == n.host && x.cidr == n.cidr && x.path == n.path && x.port == n.port && x.listen == n.listen && x.network == n.network {
			for _, e := range n.events {
				if !slices.Contains(x.events, e) {
					x.events = append(x.events, e)
				}
			}
			return
		}
	}
	s.netAllow = append(s.netAllow, n)
}

// write prints the additions as TOML.
// additions are what the suggester proposes, deduplicated and pruned.
type additions struct {
	writeRoots, readRoots []entry
	execAllow             []execSuggestion
	netAllow              []netSuggestion
}

func (s *suggester) additions() additions {
	return additions{writeRoots: prune(s.writeRoots), readRoots: prune(s.readRoots),
		execAllow: pruneExec(s.execAllow), netAllow: s.netAllow}
}

func (a additions) count() int {
	return len(a.writeRoots) + len(a.readRoots) + len(a.execAllow) + len(a.netAllow)
}

// writeSummary prints the comment lines that say what the log held.
func (s *suggester) writeSummary(w io.Writer, logName string, a additions) {
	n := a.count()
	fmt.Fprintf(w, "# auditdemo suggest: %d would-deny event%s in %s\n", s.events, plural(s.events), oneLine(logName))
	fmt.Fprintf(w, "# %d addition%s; %d denial%s without one (at the end).\n", n, plural(n), len(s.cannot), plural(len(s.cannot)))
	if s.denied > 0 {
		fmt.Fprintf(w, "# %d denied event%s ignored: they come from enforce mode, where the call did not\n", s.denied, plural(s.denied))
		fmt.Fprintln(w, "# happen and what followed it is unknown; run in warn mode to see everything a task needs.")
	}
}

func (s *suggester) write(w io.Writer, logName string) {
	a := s.additions()
	s.writeSummary(w, logName, a)
	if s.events == 0 {
		fmt.Fprintln(w, "# nothing to add")
		return
	}
	fmt.Fprintln(w, "# [[exec.allow]] and [[net.allow]] tables can be appended to a policy file as")
	fmt.Fprintln(w, "# they are. A TOML list cannot be extended from a second place: if the policy")
	fmt.Fprintln(w, "# already has [fs] write_roots or read_roots, move the entries below into its")
	fmt.Fprintln(w, "# lists instead of appending the [fs] table (or let suggest --policy merge them).")
	fmt.Fprintln(w, "# Exec args are an argument prefix: a rule also allows the same arguments followed")
	fmt.Fprintln(w, "# by more. Review each entry, then set [modes] back to \"enforce\".")
	if len(a.writeRoots)+len(a.readRoots) > 0 {
		fmt.Fprintln(w, "\n[fs]")
		writeList(w, "write_roots", a.writeRoots)
		writeList(w, "read_roots", a.readRoots)
	}
	writeTables(w, a)
	s.writeCannot(w)
}

// writeTables prints the [[exec.allow]] and [[net.allow]] tables.
func writeTables(w io.Writer, a additions) {
	for _, x := range a.execAllow {
		fmt.Fprintln(w)
		writeComments(w, x.events, x.notes)
		fmt.Fprintln(w, "[[exec.allow]]")
		fmt.Fprintf(w, "program = %s\n", tomlString(x.program))
		if len(x.args) > 0 {
			fmt.Fprintf(w, "args = %s\n", tomlList(x.args))
			fmt.Fprintf(w, "match = [%s]\n", tomlList(x.args))
		}
	}
	for _, x := range a.netAllow {
		fmt.Fprintln(w)
		writeComments(w, x.events, x.notes)
		fmt.Fprintln(w, "[[net.allow]]")
		switch {
		case x.host != "":
			fmt.Fprintf(w, "host = %s\n", tomlString(x.host))
		case x.cidr != "":
			fmt.Fprintf(w, "cidr = %s\n", tomlString(x.cidr))
		default:
			fmt.Fprintf(w, "path = %s\n", tomlString(x.path))
		}
		if x.network != "" {
			fmt.Fprintf(w, "network = %s\n", tomlString(x.network))
		}
		if x.port != "" {
			fmt.Fprintf(w, "ports = [%s]\n", x.port)
		}
		if x.listen {
			fmt.Fprintln(w, "listen = true")
		} else if x.port != "" {
			host := x.host + x.cidr
			if strings.Contains(host, ":") {
				host = "[" + host + "]"
			}
			fmt.Fprintf(w, "match = [%s]\n", tomlString(host+":"+x.port))
		}
	}
}

// writeCannot prints the denials no addition overturns, as comments.
func (s *suggester) writeCannot(w io.Writer) {
	for _, c := range s.cannot {
		fmt.Fprintln(w)
		fmt.Fprintln(w, c)
	}
}

func writeComments(w io.Writer, events, notes []string) {
	for _, e := range events {
		fmt.Fprintf(w, "# allows %s\n", e)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "# note: %s\n", oneLine(n))
	}
}

func writeList(w io.Writer, key string, list []entry) {
	if len(list) == 0 {
		return
	}
	fmt.Fprintf(w, "%s = [\n", key)
	writeElements(w, list)
	fmt.Fprintln(w, "]")
}

// writeElements prints list entries one a line, each with what it allows.
func writeElements(w io.Writer, list []entry) {
	for _, e := range list {
		fmt.Fprintf(w, "  %s, # allows %s\n", tomlString(e.path), oneLine(strings.Join(e.events, "; ")))
	}
}

// prune drops entries within another entry of the list: that root already
// allows their events (which move to it).
func prune(list []entry) []entry {
	var out []entry
	for i, e := range list {
		covered := -1
		for j, o := range list {
			if i != j && o.path != e.path && policy.Within(e.path, o.path) {
				covered = j
				break
			}
		}
		if covered < 0 {
			out = append(out, e)
		}
	}
	for i := range out {
		for _, e := range list {
			if e.path != out[i].path && policy.Within(e.path, out[i].path) {
				for _, ev := range e.events {
					if !slices.Contains(out[i].events, ev) {
						out[i].events = append(out[i].events, ev)
					}
				}
			}
		}
	}
	return out
}

// pruneExec drops rules whose arguments extend another rule's for the same
// program: the shorter prefix already allows them.
func pruneExec(list []execSuggestion) []execSuggestion {
	var out []execSuggestion
	for i, x := range list {
		covered := false
		for j, o := range list {
			if i != j && o.program == x.program && len(o.args) < len(x.args) && slices.Equal(o.args, x.args[:len(o.args)]) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, x)
		}
	}
	return out
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			// Not UTF-8: TOML cannot say it; the replacement character
			// makes the entry fail to match rather than match more.
			b.WriteString(`\uFFFD`)
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func tomlList(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = tomlString(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
