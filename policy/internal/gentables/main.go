// Command gentables writes policy/tooltables/*.tsv: every option of the
// tools whose code-running options the exec rules know, read from each
// tool's own help output (GNU --help, git <cmd> -h) or, for ripgrep, from
// its source (crates/core/flags/defs.rs). The tables record the tool
// version they were read from; the risks of options live apart, in
// policy/exec_risks.go, so regenerating never loses them.
//
//	go run ./policy/internal/gentables -out policy/tooltables -ripgrep /path/to/ripgrep
//
// Only run it on purpose: it starts the tools installed on this machine.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

type opt struct {
	short []string // letters (or digits) without the dash
	long  []string // names without the dashes
	arg   string   // none, required, optional
}

type section struct {
	name, source string
	opts         []opt
}

type table struct {
	tool, version, style string
	sections             []section
}

func main() {
	out := flag.String("out", "policy/tooltables", "output directory")
	rg := flag.String("ripgrep", "", "a ripgrep source tree (for rg.tsv); skipped when empty")
	flag.Parse()
	gnu := []struct{ tool, style string }{
		{"tar", "gnu oldstyle"}, {"sort", "gnu"}, {"ls", "gnu"}, {"cat", "gnu"}, {"grep", "gnu"},
		{"sed", "gnu"}, {"xargs", "gnu"}, {"env", "gnu"}, {"head", "gnu"}, {"tail", "gnu"}, {"wc", "gnu"},
	}
	for _, g := range gnu {
		help := run(g.tool, "--help")
		t := table{tool: g.tool, version: firstLine(run(g.tool, "--version")), style: g.style,
			sections: []section{{source: g.tool + " --help (LANG=C)", opts: parseGNU(help)}}}
		write(*out, t)
	}
	write(*out, gitTable())
	if *rg != "" {
		write(*out, rgTable(*rg))
	}
}

func run(name string, args ...string) string {
	c := exec.Command(name, args...)
	c.Env = append(os.Environ(), "LANG=C", "LC_ALL=C")
	c.Dir = os.TempDir() // git <cmd> -h outside a repository
	var b bytes.Buffer
	c.Stdout, c.Stderr = &b, &b
	_ = c.Run() // git <cmd> -h exits 129
	return b.String()
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

var (
	specEnd  = regexp.MustCompile(`\s{2,}`)
	longItem = regexp.MustCompile(`^--(\[no-\])?([A-Za-z0-9][-A-Za-z0-9_]*)(\[=.*\]|=\S+| <[^>]*>)?$`)
	// -x, -x ARG, -x[ARG], -x <arg>, -xARG is not a spelling help pages use.
	shortItem = regexp.MustCompile(`^-([A-Za-z0-9?])(\[.*\]| \[?<[^>]*>\]?| [A-Z][-A-Z_]*| [a-z][-a-z]*|<[^>]*>)?$`)
)

// parseGNU reads option lines of a GNU --help page: an indented line that
// starts with "-", the spellings separated by ", " and ended by two spaces.
func parseGNU(help string) []opt { return parseLines(help, 8) }

func parseLines(help string, maxIndent int) []opt {
	var out []opt
	for _, line := range strings.Split(help, "\n") {
		trim := strings.TrimLeft(line, " ")
		ind := len(line) - len(trim)
		if ind == 0 || ind > maxIndent || !strings.HasPrefix(trim, "-") || strings.HasPrefix(trim, "-<") {
			continue
		}
		spec := trim
		if loc := specEnd.FindStringIndex(trim); loc != nil {
			spec = trim[:loc[0]]
		}
		spec = strings.TrimSuffix(spec, ",") // the spellings continue on the next line
		var o opt
		ok := true
		items := strings.FieldsFunc(strings.ReplaceAll(spec, " | ", ", "), func(r rune) bool { return r == 0 })
		items = strings.Split(items[0], ", ")
		for i, it := range items {
			it = strings.TrimSpace(it)
			if i == len(items)-1 && longItem.FindStringSubmatch(it) == nil && shortItem.FindStringSubmatch(it) == nil {
				// one space before the description ("--name-status show names")
				if f, _, ok := strings.Cut(it, " "); ok {
					it = f
				}
			}
			if m := longItem.FindStringSubmatch(it); m != nil {
				o.long = append(o.long, m[2])
				if m[1] != "" {
					o.long = append(o.long, "no-"+m[2])
				}
				o.arg = maxArg(o.arg, argKind(m[3]))
				continue
			}
			if m := shortItem.FindStringSubmatch(it); m != nil {
				o.short = append(o.short, m[1])
				o.arg = maxArg(o.arg, argKind(m[2]))
				continue
			}
			ok = false
		}
		if !ok || (len(o.short) == 0 && len(o.long) == 0) {
			log.Printf("skipped option line %q", line)
			continue
		}
		if o.arg == "" {
			o.arg = "none"
		}
		out = append(out, o)
	}
	return out
}

func argKind(s string) string {
	switch {
	case s == "":
		return ""
	case strings.HasPrefix(s, "[") || strings.HasPrefix(s, " [") || strings.HasPrefix(s, "[="):
		return "optional"
	}
	return "required"
}

func maxArg(a, b string) string {
	if a == "" || a == "none" {
		return b
	}
	if b == "" {
		return a
	}
	if a == "optional" || b == "optional" {
		if a == "required" || b == "required" {
			return "required"
		}
		return "optional"
	}
	return a
}

// gitTable reads `git <cmd> -h` for every command `git help -a` lists.
func gitTable() table {
	t := table{tool: "git", version: firstLine(run("git", "--version")), style: "git"}
	cmds := map[string]bool{}
	for _, line := range strings.Split(run("git", "help", "-a"), "\n") {
		if strings.HasPrefix(line, "   ") {
			if f := strings.Fields(line); len(f) > 0 && regexp.MustCompile(`^[a-z][-a-z0-9]*$`).MatchString(f[0]) {
				cmds[f[0]] = true
			}
		}
	}
	t.sections = append(t.sections, gitGlobal)
	names := make([]string, 0, len(cmds))
	for c := range cmds {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		opts := parseLines(run("git", c, "-h"), 6)
		t.sections = append(t.sections, section{name: c, source: "git " + c + " -h", opts: opts})
	}
	return t
}

// gitGlobal are the options git.c's handle_options reads before the
// command: exact spellings only (no abbreviation, no clusters). They are
// not printed by any -h, so they are written here from git(1) OPTIONS and
// git.c of the same version.
var gitGlobal = section{name: "-", source: "git(1) OPTIONS and git.c handle_options (git 2.39)", opts: []opt{
	{short: []string{"v"}, long: []string{"version"}, arg: "none"},
	{short: []string{"h"}, long: []string{"help"}, arg: "none"},
	{short: []string{"C"}, arg: "required"},
	{short: []string{"c"}, arg: "required"},
	{long: []string{"config-env"}, arg: "required"},
	{long: []string{"exec-path"}, arg: "optional"},
	{long: []string{"html-path"}, arg: "none"},
	{long: []string{"man-path"}, arg: "none"},
	{long: []string{"info-path"}, arg: "none"},
	{short: []string{"p"}, long: []string{"paginate"}, arg: "none"},
	{short: []string{"P"}, long: []string{"no-pager"}, arg: "none"},
	{long: []string{"no-replace-objects"}, arg: "none"},
	{long: []string{"bare"}, arg: "none"},
	{long: []string{"git-dir"}, arg: "required"},
	{long: []string{"work-tree"}, arg: "required"},
	{long: []string{"namespace"}, arg: "required"},
	{long: []string{"super-prefix"}, arg: "required"},
	{long: []string{"literal-pathspecs"}, arg: "none"},
	{long: []string{"glob-pathspecs"}, arg: "none"},
	{long: []string{"noglob-pathspecs"}, arg: "none"},
	{long: []string{"icase-pathspecs"}, arg: "none"},
	{long: []string{"no-optional-locks"}, arg: "none"},
	{long: []string{"list-cmds"}, arg: "required"},
	{long: []string{"shallow-file"}, arg: "required"},
}}

var (
	rgImpl   = regexp.MustCompile(`(?m)^impl Flag for \w+ \{`)
	rgSwitch = regexp.MustCompile(`fn is_switch\(&self\) -> bool \{\s*(true|false)`)
	rgShort  = regexp.MustCompile(`fn name_short\(&self\) -> Option<u8> \{\s*Some\(b'(.)'\)`)
	rgLong   = regexp.MustCompile(`fn name_long\(&self\) -> &'static str \{\s*"([^"]+)"`)
	rgNeg    = regexp.MustCompile(`fn name_negated\(&self\) -> Option<&'static str> \{\s*Some\("([^"]+)"\)`)
	rgAlias  = regexp.MustCompile(`fn aliases\(&self\) -> &'static \[&'static str\] \{\s*&\[([^\]]*)\]`)
	rgVer    = regexp.MustCompile(`(?m)^version = "([^"]+)"`)
)

// rgTable reads ripgrep's flag definitions: ripgrep parses its arguments
// with lexopt, exact long names only.
func rgTable(dir string) table {
	src, err := os.ReadFile(filepath.Join(dir, "crates/core/flags/defs.rs"))
	if err != nil {
		log.Fatal(err)
	}
	cargo, err := os.ReadFile(filepath.Join(dir, "Cargo.toml"))
	if err != nil {
		log.Fatal(err)
	}
	t := table{tool: "rg", version: "ripgrep " + rgVer.FindStringSubmatch(string(cargo))[1], style: "exact"}
	s := section{source: "ripgrep crates/core/flags/defs.rs"}
	locs := rgImpl.FindAllStringIndex(string(src), -1)
	for i, l := range locs {
		end := len(src)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		blk := string(src[l[0]:end])
		m := rgLong.FindStringSubmatch(blk)
		if m == nil {
			continue
		}
		o := opt{long: []string{m[1]}, arg: "required"}
		if sw := rgSwitch.FindStringSubmatch(blk); sw != nil && sw[1] == "true" {
			o.arg = "none"
		}
		if sh := rgShort.FindStringSubmatch(blk); sh != nil {
			o.short = []string{sh[1]}
		}
		if al := rgAlias.FindStringSubmatch(blk); al != nil {
			for _, a := range strings.Split(al[1], ",") {
				if a = strings.Trim(strings.TrimSpace(a), `"`); a != "" {
					o.long = append(o.long, a)
				}
			}
		}
		s.opts = append(s.opts, o)
		if ng := rgNeg.FindStringSubmatch(blk); ng != nil {
			s.opts = append(s.opts, opt{long: []string{ng[1]}, arg: "none"})
		}
	}
	t.sections = []section{s}
	return t
}

func write(dir string, t table) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Every option of %s, generated by `go run ./policy/internal/gentables`\n", t.tool)
	fmt.Fprintf(&b, "# from the tool's own help or source; do not edit by hand (risks: policy/exec_risks.go).\n")
	fmt.Fprintf(&b, "# opt lines: short spellings, long spellings (comma separated), argument.\n")
	fmt.Fprintf(&b, "tool\t%s\nversion\t%s\nstyle\t%s\n", t.tool, t.version, t.style)
	for _, s := range t.sections {
		fmt.Fprintf(&b, "section\t%s\t%s\n", s.name, s.source)
		for _, o := range s.opts {
			fmt.Fprintf(&b, "opt\t%s\t%s\t%s\n", strings.Join(o.short, ","), strings.Join(o.long, ","), o.arg)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, t.tool+".tsv"), []byte(b.String()), 0o644); err != nil {
		log.Fatal(err)
	}
}
