package policy

import (
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ExecResolver is the I/O a plan needs: where names land. procguard
// implements it with the policy's PATH and the command's directory; tests
// and explain tools may implement it with a table.
type ExecResolver interface {
	// Program returns the real path of the program name runs: LookPath in
	// the policy's PATH, then symbolic links resolved.
	Program(name string) (string, error)
	// Path returns where a redirection target (relative to the command's
	// working directory) really lands.
	Path(name string) (string, error)
}

// ExecPathResolver is implemented by resolvers that can look a name up in
// another search path: the one a wrapper sets (env PATH=/dir cmd, env -i
// cmd). Without it, such a command is judged as the wrapper.
type ExecPathResolver interface {
	ProgramIn(name string, path []string) (string, error)
}

// defaultExecvpPath is the search path execvp(3) uses when PATH is unset
// (glibc's confstr(_CS_PATH)): what "env -i cmd" searches.
var defaultExecvpPath = []string{"/bin", "/usr/bin"}

// ExecCommand is one program a call would run.
type ExecCommand struct {
	Name    string   // as written
	Program string   // real path; "" when it could not be resolved
	Argv    []string // Argv[0] is Name
	Err     error    // why Program is empty
	// OpenArgs: more arguments will come from input (xargs, find's "{}"),
	// so deny rules on later tokens cannot be checked.
	OpenArgs bool
}

// ExecRedirect is one redirection of an unwrapped shell script.
type ExecRedirect struct {
	Path  string // resolved target
	Write bool   // >, >>, &>, <> (false: <)
	// Shell is the shell whose script holds the redirection: a target the
	// policy does not allow (softly) makes the script judged as this shell.
	Shell ExecCommand
}

// ExecPlan is what a call would really run once shells and wrappers are
// unwrapped. It is built with I/O (PlanExec) and judged purely
// (ExecRequest.Decide).
type ExecPlan struct {
	// Commands are judged on their own; each must be allowed.
	Commands []ExecCommand
	// Wrappers (env, timeout, a shell running a plain script...) run the
	// commands; only deny rules apply to them.
	Wrappers []ExecCommand
	// Assigns are variables a wrapper (env NAME=VALUE) or a script
	// (NAME=VALUE cmd, export NAME=VALUE) sets.
	Assigns []string
	// Builtins: an unwrapped script runs only shell builtins (":",
	// "exit 3", "echo x", "test -f a"), no program.
	Builtins bool
	// Redirects are the resolved redirection targets of unwrapped scripts.
	Redirects []ExecRedirect
	// Opaque says why a shell or wrapper is judged as itself ("" when
	// everything was unwrapped): the part that cannot be known.
	Opaque string
	// OpaqueRedirect: a redirection target is computed ("> $F", "> ~/x"),
	// so it could name a protected file.
	OpaqueRedirect bool
}

const maxPlanDepth = 8

// PlanExec unwraps shells (sh, bash, dash, zsh with -c or -lc) and wrappers
// (env, timeout, nice, nohup, setsid, stdbuf, ionice, xargs, find -exec,
// sudo, doas) into the commands they would run. A shell script is unwrapped
// only when it is plain commands with literal words joined by &&, ||, ; and
// |; anything else (substitutions, variables, globs, subshells, functions,
// eval, here-documents, background jobs, variable prefixes) makes the shell
// judged as itself. A wrapper whose command cannot be told is judged as
// itself too.
func PlanExec(r ExecResolver, name string, argv []string) ExecPlan {
	var pl ExecPlan
	if len(argv) == 0 {
		argv = []string{name}
	}
	pl.add(r, name, argv, 0, false, nil)
	return pl
}

func (pl *ExecPlan) opaque(why string) {
	if pl.Opaque == "" {
		pl.Opaque = why
	}
}

func (pl *ExecPlan) add(r ExecResolver, name string, argv []string, depth int, open bool, path []string) {
	c := ExecCommand{Name: name, Argv: argv, OpenArgs: open}
	if path != nil {
		// A wrapper set PATH: the command is looked up in it.
		pr, ok := r.(ExecPathResolver)
		if !ok {
			pl.opaque("the command is looked up in a PATH the wrapper sets")
			c.Program, c.Err = "", ErrProgramNotFound
			pl.Commands = append(pl.Commands, c)
			return
		}
		c.Program, c.Err = pr.ProgramIn(name, path)
	} else {
		c.Program, c.Err = r.Program(name)
	}
	if c.Err != nil || depth >= maxPlanDepth {
		if depth >= maxPlanDepth {
			pl.opaque("wrappers nested too deeply")
		}
		pl.Commands = append(pl.Commands, c)
		return
	}
	base := filepath.Base(c.Program)
	if lang, ok := shells[base]; ok {
		script, ok := shellScript(argv)
		if !ok {
			pl.opaque(base + " without -c SCRIPT is judged as the shell")
			pl.Commands = append(pl.Commands, c)
			return
		}
		sc := parseScript(script, lang)
		// Every literal redirection is judged, opaque script or not: a
		// redirection to a protected name is a hard denial in every form.
		for _, rd := range sc.redirs {
			p, err := r.Path(rd.path)
			if err != nil {
				pl.opaque("redirection target " + rd.path + " cannot be resolved")
				continue
			}
			pl.Redirects = append(pl.Redirects, ExecRedirect{Path: p, Write: rd.write, Shell: c})
		}
		if sc.computedRedirect {
			pl.OpaqueRedirect = true
		}
		pl.Assigns = append(pl.Assigns, sc.assigns...)
		if sc.why != "" || pl.Opaque != "" {
			pl.opaque(sc.why)
			pl.Commands = append(pl.Commands, c)
			return
		}
		pl.Wrappers = append(pl.Wrappers, c)
		if len(sc.calls) == 0 {
			// Only builtins (":", "exit 3", "echo x", "test -f a"): the
			// shell runs nothing else and is judged as a wrapper.
			pl.Builtins = true
		}
		for _, call := range sc.calls {
			pl.add(r, call[0], call, depth+1, open, path)
		}
		return
	}
	if base == "find" {
		// find does its own work and runs its -exec commands.
		pl.Commands = append(pl.Commands, c)
		cmds, ok := findExecs(argv)
		if !ok {
			pl.opaque("cannot tell what find -exec would run")
			return
		}
		for _, cmd := range cmds {
			pl.add(r, cmd[0], cmd, depth+1, open || hasBraces(cmd), path)
		}
		return
	}
	if w, ok := wrappers[base]; ok {
		inner, assigns, innerOpen, ok := w.unwrap(argv)
		if !ok {
			pl.opaque("cannot tell what " + base + " would run")
			pl.Commands = append(pl.Commands, c)
			return
		}
		pl.Assigns = append(pl.Assigns, assigns...)
		if w.privileged {
			// sudo and doas must be allowed themselves, and so must what they run.
			pl.Commands = append(pl.Commands, c)
		} else {
			pl.Wrappers = append(pl.Wrappers, c)
		}
		innerPath := path
		if base == "env" {
			if p, set, ok := envPath(argv); !ok {
				pl.opaque("env sets a PATH with a relative entry")
				pl.Commands = append(pl.Commands, c)
				return
			} else if set {
				innerPath = p
			}
		}
		pl.add(r, inner[0], inner, depth+1, open || innerOpen, innerPath)
		return
	}
	pl.Commands = append(pl.Commands, c)
}

// envPath returns the PATH env gives its command: the one it assigns,
// the execvp default after -i or -u PATH, or set=false when it keeps the
// child's. ok is false for a PATH with a relative entry.
func envPath(argv []string) (path []string, set, ok bool) {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-i" || a == "--ignore-environment" || a == "-" || (len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'i') && !strings.ContainsAny(a, "uCS")):
			path, set = defaultExecvpPath, true
		case a == "-u" || a == "--unset":
			if i+1 < len(argv) && argv[i+1] == "PATH" {
				path, set = defaultExecvpPath, true
			}
			i++
		case a == "-uPATH" || a == "--unset=PATH":
			path, set = defaultExecvpPath, true
		case strings.HasPrefix(a, "PATH="):
			path, set = nil, true
			for _, e := range strings.Split(a[5:], ":") {
				if e == "" || !filepath.IsAbs(e) {
					return nil, true, false
				}
				path = append(path, e)
			}
		case a == "--":
		case len(a) > 0 && a[0] == '-':
		case strings.IndexByte(a, '=') > 0:
		default:
			return path, set, true
		}
	}
	return path, set, true
}

func hasBraces(argv []string) bool {
	for _, a := range argv {
		if strings.Contains(a, "{}") {
			return true
		}
	}
	return false
}

var shells = map[string]syntax.LangVariant{
	"sh": syntax.LangPOSIX, "dash": syntax.LangPOSIX, "bash": syntax.LangBash, "zsh": syntax.LangZsh,
}

// shellScript returns SCRIPT for "sh -c SCRIPT [args]" and "-lc".
func shellScript(argv []string) (string, bool) {
	if len(argv) < 3 {
		return "", false
	}
	switch argv[1] {
	case "-c", "-lc", "-cl":
		return argv[2], true
	}
	return "", false
}

type redirTarget struct {
	// path is the literal target, "" for fd duplications and computed ones.
	path  string
	write bool
}

// stateBuiltins change the shell, what runs, or run code the script
// holds; a script using one is judged as the shell.
var stateBuiltins = map[string]bool{
	"eval": true, "exec": true, "source": true, ".": true, "command": true, "builtin": true,
	"alias": true, "trap": true, "set": true, "unset": true, "cd": true,
	"pushd": true, "popd": true, "let": true, "shopt": true, "enable": true, "hash": true, "fc": true,
	"function": true, "coproc": true, "ulimit": true, "umask": true, "read": true, "mapfile": true,
	"readarray": true, "getopts": true, "jobs": true, "fg": true, "bg": true, "kill": true, "wait": true,
	"disown": true, "suspend": true, "type": true, "shift": true, "return": true, "break": true, "continue": true,
}

// plainBuiltins are builtins that run nothing and change nothing that
// decides what runs (bash(1) SHELL BUILTIN COMMANDS, sh(1p)): a script of
// only these needs no rule for the binaries of the same names.
var plainBuiltins = map[string]bool{
	":": true, "true": true, "false": true, "exit": true, "echo": true, "printf": true,
	"test": true, "[": true, "pwd": true,
}

type scriptFacts struct {
	calls            [][]string
	redirs           []redirTarget
	assigns          []string
	computedRedirect bool
	why              string // the opaque part; "" for a plain script
}

// parseScript returns the literal argv of every command of a plain script,
// every literal redirection target (also of an opaque script), the
// variables it assigns, and why the script is not plain.
func parseScript(script string, lang syntax.LangVariant) (sc scriptFacts) {
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(script), "")
	if err != nil {
		sc.why = "the script does not parse"
		return sc
	}
	if len(f.Stmts) == 0 {
		sc.why = "empty script"
		return sc
	}
	// Redirections anywhere (subshells, functions, loops) are collected
	// first, so an opaque script cannot hide one to a protected name.
	syntax.Walk(f, func(n syntax.Node) bool {
		if rd, ok := n.(*syntax.Redirect); ok {
			t, why := redirect(rd)
			switch {
			case t.path != "":
				sc.redirs = append(sc.redirs, t)
			case why != "" && rd.Hdoc == nil:
				sc.computedRedirect = true
			}
		}
		return true
	})
	var walk func(s *syntax.Stmt) string
	walk = func(s *syntax.Stmt) string {
		if s.Negated || s.Background || s.Coprocess || s.Disown {
			return "a background job or negation (" + nodeText(script, s) + ")"
		}
		for _, rd := range s.Redirs {
			if _, why := redirect(rd); why != "" {
				return why + " (" + nodeText(script, rd) + ")"
			}
		}
		switch c := s.Cmd.(type) {
		case *syntax.CallExpr:
			for _, a := range c.Assigns {
				if why := sc.assign(script, a); why != "" {
					return why
				}
			}
			if len(c.Args) == 0 {
				return "" // NAME=VALUE alone
			}
			argv := make([]string, 0, len(c.Args))
			for i, w := range c.Args {
				lit, ok := literal(w, i == 0)
				if !ok {
					return "a computed word " + nodeText(script, w) + " in " + nodeText(script, c)
				}
				argv = append(argv, lit)
			}
			switch argv[0] {
			case "export", "readonly", "local", "declare", "typeset":
				// sh parses these as commands: NAME=VALUE and NAME words
				// are assignments; options (-f, -n, -p) are opaque.
				for _, a := range argv[1:] {
					name, _, _ := strings.Cut(a, "=")
					if !isName(name) {
						return "the builtin " + argv[0] + " with options (" + nodeText(script, c) + ")"
					}
					if name == "PATH" {
						return "the script sets PATH (" + nodeText(script, c) + "): what runs cannot be told"
					}
					sc.assigns = append(sc.assigns, name)
				}
				return ""
			}
			if stateBuiltins[argv[0]] {
				return "the builtin " + argv[0] + " (" + nodeText(script, c) + ")"
			}
			if plainBuiltins[argv[0]] {
				if argv[0] == "printf" {
					for _, a := range argv[1:] {
						if strings.HasPrefix(a, "-v") {
							return "printf -v assigns a variable (" + nodeText(script, c) + ")"
						}
					}
				}
				return "" // a builtin that runs nothing
			}
			sc.calls = append(sc.calls, argv)
			return ""
		case *syntax.DeclClause:
			// export/declare/local/readonly/typeset NAME=VALUE: assignments;
			// anything else (flags, -f functions, computed names) is opaque.
			for _, a := range c.Args {
				if a.Name == nil || (a.Value == nil && !a.Naked) {
					return "the builtin " + c.Variant.Value + " with options (" + nodeText(script, c) + ")"
				}
				if why := sc.assign(script, a); why != "" {
					return why
				}
			}
			return ""
		case *syntax.BinaryCmd:
			switch c.Op {
			case syntax.AndStmt, syntax.OrStmt, syntax.Pipe, syntax.PipeAll:
			default:
				return "an unsupported operator"
			}
			if w := walk(c.X); w != "" {
				return w
			}
			return walk(c.Y)
		case nil:
			return "an empty command"
		}
		return "a subshell, block, function or control flow (" + nodeText(script, s) + ")"
	}
	for _, s := range f.Stmts {
		if w := walk(s); w != "" {
			sc.why = w
			sc.calls = nil
			return sc
		}
	}
	return sc
}

// assign records one assignment, or says why it makes the script opaque.
func (sc *scriptFacts) assign(script string, a *syntax.Assign) string {
	if a.Name == nil || a.Array != nil || a.Index != nil {
		return "an array assignment (" + nodeText(script, a) + ")"
	}
	if a.Value != nil {
		if _, ok := literal(a.Value, false); !ok {
			return "a computed value (" + nodeText(script, a) + ")"
		}
	}
	if a.Name.Value == "PATH" {
		return "the script sets PATH (" + nodeText(script, a) + "): what runs cannot be told"
	}
	sc.assigns = append(sc.assigns, a.Name.Value)
	return ""
}

// isName reports whether s is a shell variable name.
func isName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')) {
			return false
		}
	}
	return true
}

// nodeText returns the source of a node, shortened.
func nodeText(script string, n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(script) || s > e {
		return "?"
	}
	t := script[s:e]
	if len(t) > 60 {
		t = t[:57] + "..."
	}
	return t
}

func redirect(rd *syntax.Redirect) (redirTarget, string) {
	if rd.Hdoc != nil {
		return redirTarget{}, "here-documents are judged as the shell"
	}
	word, ok := literal(rd.Word, false)
	if !ok {
		return redirTarget{}, "computed redirection targets are judged as the shell"
	}
	switch rd.Op {
	case syntax.DplIn, syntax.DplOut:
		if word == "-" || isDigits(word) {
			return redirTarget{}, "" // fd duplication or close
		}
		if rd.Op == syntax.DplIn {
			return redirTarget{}, "unsupported redirection"
		}
		return redirTarget{path: word, write: true}, ""
	case syntax.RdrIn:
		return redirTarget{path: word}, ""
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
		return redirTarget{path: word, write: true}, ""
	}
	return redirTarget{}, "unsupported redirection"
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// literal returns the value of a word made only of literal text and quotes
// without expansions. Unquoted glob, brace, tilde and escape characters
// make it non-literal.
func literal(w *syntax.Word, first bool) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if (p.Value == "[" || p.Value == "]") && len(w.Parts) == 1 {
				b.WriteString(p.Value) // test's "[ -f a ]", not a glob
				continue
			}
			if strings.ContainsAny(p.Value, "*?[]{}~\\") {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || strings.ContainsAny(l.Value, "\\`$") {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	s := b.String()
	if s == "" && first {
		return "", false
	}
	return s, true
}
