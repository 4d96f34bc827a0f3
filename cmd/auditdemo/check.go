package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/policyfile"
)

// cmdCheck validates a policy file and prints its effective rules, each
// with the file:line (or "builtin") it comes from, and its modes. Exit 0
// when the file is valid, 1 when it is not (every problem is printed with
// its position), 2 on a usage error.
func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("auditdemo check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("policy", "", "the policy `FILE` to validate")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *path == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: auditdemo check --policy FILE")
		return 2
	}
	f, err := policyfile.LoadFile(*path)
	if err != nil {
		printLoadError(stderr, *path, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: valid\n\n", *path)
	printModes(stdout, f.Modes)
	fmt.Fprintln(stdout)
	printProfiles(stdout, f.Policy) // check_profiles.go
	printRules(stdout, f.Policy)
	return 0
}

// printLoadError prints every problem of a policy file, one a line, as
// "file:line:col: key: message (did you mean ...?)".
func printLoadError(w io.Writer, path string, err error) {
	var le *policyfile.LoadError
	if errors.As(err, &le) {
		n := len(le.Problems)
		fmt.Fprintf(w, "%s: %d problem%s:\n", path, n, plural(n))
		for _, p := range le.Problems {
			fmt.Fprintf(w, "  %s\n", p.Error())
		}
		return
	}
	fmt.Fprintf(w, "%s: %v\n", path, err)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// modeName renders a file mode; unset means the guard's own mode, which
// for auditdemo is enforce.
func modeName(m policy.Mode) string {
	if m == policy.ModeUnset {
		return "enforce (not set in the file: the guard's default)"
	}
	return m.String()
}

func printModes(w io.Writer, m policy.Modes) {
	fmt.Fprintln(w, "modes:")
	fmt.Fprintf(w, "  fs    %s\n", modeName(m.FS))
	fmt.Fprintf(w, "  exec  %s\n", modeName(m.Exec))
	fmt.Fprintf(w, "  net   %s\n", modeName(m.Net))
}

// printRules prints the effective rules grouped by protocol, with their
// provenance, and the exec settings that are not rules.
func printRules(w io.Writer, p *policy.Policy) {
	var fsRules, execRules, netRules []*policy.Rule
	for _, r := range p.Rules() {
		switch r.Kind {
		case policy.KindExec:
			execRules = append(execRules, r)
		case policy.KindNet:
			netRules = append(netRules, r)
		default:
			fsRules = append(fsRules, r)
		}
	}
	section := func(title string, rs []*policy.Rule, none string) {
		fmt.Fprintf(w, "%s:\n", title)
		if len(rs) == 0 {
			fmt.Fprintf(w, "  (%s)\n", none)
		}
		// Built-in entries of one kind are folded onto one line; the rules
		// a file or code configured get a line each with their source.
		// Protected entries show their class (what they do decides where
		// they hold: policy.ProtectClass).
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		var builtin []string
		var builtinKind string
		flush := func() {
			if len(builtin) > 0 {
				fmt.Fprintf(tw, "  %s (%d entries)\tbuiltin\n", builtinKind, len(builtin))
				tw.Flush()
				wrap(w, "    ", builtin, 96)
				builtin = nil
			}
		}
		for _, r := range rs {
			if r.Source == "builtin" && (r.Kind == policy.KindProtected || r.Kind == policy.KindDependencyTree) {
				kind := r.Kind.String()
				if r.Class != 0 {
					kind += ", " + classLabel(r.Class)
				}
				if builtinKind != kind {
					flush()
				}
				builtinKind = kind
				builtin = append(builtin, r.Pattern)
				continue
			}
			flush()
			class := ""
			if r.Class != 0 && r.Kind != policy.KindGitMeta {
				class = " (" + r.Class.String() + ")"
			}
			fmt.Fprintf(tw, "  %s %q%s\t%s\n", r.Kind, r.Pattern, class, r.Source)
		}
		flush()
		tw.Flush()
		fmt.Fprintln(w)
	}
	section("fs rules", fsRules, "none: every write is denied")
	if roots := p.WriteRoots(); len(roots) > 0 {
		fmt.Fprintf(w, "write roots (expanded, symbolic links resolved): %s\n", strings.Join(roots, " "))
	}
	if p.DotRoot() {
		fmt.Fprintln(w, `"." is a write root: each guarded handle's working directory`)
	}
	if roots := p.ReadRoots(); len(roots) > 0 {
		fmt.Fprintf(w, "read roots: %s\n", strings.Join(roots, " "))
	} else {
		fmt.Fprintln(w, "reads are allowed everywhere outside read_deny (no read_roots)")
	}
	fmt.Fprintln(w)
	section("exec rules", execRules, "none: every program is denied")
	if progs := p.ExecPrograms(); len(progs) > 0 {
		fmt.Fprintf(w, "programs with an allow rule (real paths): %s\n\n", strings.Join(progs, " "))
	}
	section("net rules", netRules, "none: every connection and bind is denied")
	printExecSettings(w, p.Exec(), p.ExecPath())
}

func printExecSettings(w io.Writer, s policy.ExecSpec, path []string) {
	fmt.Fprintln(w, "exec settings:")
	fmt.Fprintf(w, "  path          %s\n", strings.Join(path, ":"))
	env := "(none: only the built-in safe set)"
	if len(s.Env) > 0 {
		env = strings.Join(s.Env, ", ")
	}
	fmt.Fprintf(w, "  env           %s\n", env)
	fmt.Fprintf(w, "  timeout       %s (max %s)\n", durationOr(s.Timeout, "none"), durationOr(s.MaxTimeout, "none"))
	switch {
	case s.OutputLimit < 0:
		fmt.Fprintln(w, "  output limit  none")
	case s.OutputLimit == 0:
		fmt.Fprintf(w, "  output limit  %d bytes (default)\n", policy.DefaultOutputLimit)
	default:
		fmt.Fprintf(w, "  output limit  %d bytes\n", s.OutputLimit)
	}
	var lim []string
	for _, l := range []struct {
		name string
		v    uint64
	}{{"cpu_seconds", s.Limits.CPUSeconds}, {"file_size", s.Limits.FileSize},
		{"address_space", s.Limits.AddressSpace}, {"open_files", s.Limits.OpenFiles}} {
		if l.v != 0 {
			lim = append(lim, fmt.Sprintf("%s=%d", l.name, l.v))
		}
	}
	if len(lim) == 0 {
		lim = []string{"none"}
	}
	fmt.Fprintf(w, "  limits        %s\n", strings.Join(lim, " "))
	landlock := "on (partial Landlock is a recorded downgrade)"
	switch {
	case s.NoLandlock:
		landlock = "off (no_landlock)"
	case s.RequireLandlock:
		landlock = "required"
	}
	fmt.Fprintf(w, "  landlock      %s\n", landlock)
	var sw []string
	for _, b := range []struct {
		name string
		on   bool
	}{{"deny_network", s.DenyNetwork}, {"landlock_exec_any", s.LandlockExecAny},
		{"dir_in_read_roots", s.DirInReadRoots}, {"no_cgroup", s.NoCgroup}} {
		if b.on {
			sw = append(sw, b.name)
		}
	}
	if len(sw) > 0 {
		fmt.Fprintf(w, "  switches      %s\n", strings.Join(sw, " "))
	}
	if s.Home != "" || s.TmpDir != "" {
		fmt.Fprintf(w, "  home, tmp_dir %s, %s\n", orDefault(s.Home), orDefault(s.TmpDir))
	}
}

// wrap prints words on lines of at most width columns.
func wrap(w io.Writer, indent string, words []string, width int) {
	line := indent
	for _, word := range words {
		if len(line) > len(indent) && len(line)+1+len(word) > width {
			fmt.Fprintln(w, line)
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	if len(line) > len(indent) {
		fmt.Fprintln(w, line)
	}
}

func durationOr(d time.Duration, none string) string {
	if d == 0 {
		return none
	}
	return d.String()
}

func orDefault(s string) string {
	if s == "" {
		return "(the command's directory)"
	}
	return s
}

// loadGuard loads a policy file and builds a guard deciding with it, in the
// modes the file sets (enforce for the ones it leaves out).
func loadGuard(path string, opts ...audit.Option) (*policyfile.File, *audit.Guard, error) {
	f, err := policyfile.LoadFile(path)
	if err != nil {
		return nil, nil, err
	}
	g, err := audit.New(f.Policy, opts...)
	if err != nil {
		return nil, nil, err
	}
	// Outside any scope, so the guard accepts the change.
	if err := g.SetModes(context.Background(), f.Modes); err != nil {
		return nil, nil, err
	}
	return f, g, nil
}

// classLabel says where a protected class holds, for check's listing.
func classLabel(c policy.ProtectClass) string {
	switch c {
	case policy.ClassRuns:
		return "runs: everywhere, before it exists"
	case policy.ClassCredential:
		return "credential: outside dependency trees"
	case policy.ClassGit:
		return "git: .git as one object"
	}
	return c.String()
}
