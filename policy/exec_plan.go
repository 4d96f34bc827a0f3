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
	// Assigns are variables a wrapper (env NAME=VALUE) sets for its command.
	Assigns []string
	// Redirects are the resolved redirection targets of unwrapped scripts.
	Redirects []ExecRedirect
	// Opaque says why a shell or wrapper is judged as itself ("" when
	// everything was unwrapped).
	Opaque string
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
	pl.add(r, name, argv, 0, false)
	return pl
}

func (pl *ExecPlan) opaque(why string) {
	if pl.Opaque == "" {
		pl.Opaque = why
	}
}

func (pl *ExecPlan) add(r ExecResolver, name string, argv []string, depth int, open bool) {
	c := ExecCommand{Name: name, Argv: argv, OpenArgs: open}
	c.Program, c.Err = r.Program(name)
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
		calls, redirs, why := parseScript(script, lang)
		if why != "" {
			pl.opaque(why)
			pl.Commands = append(pl.Commands, c)
			return
		}
		for _, rd := range redirs {
			p, err := r.Path(rd.path)
			if err != nil {
				pl.opaque("redirection target " + rd.path + " cannot be resolved")
				pl.Commands = append(pl.Commands, c)
				return
			}
			pl.Redirects = append(pl.Redirects, ExecRedirect{Path: p, Write: rd.write, Shell: c})
		}
		pl.Wrappers = append(pl.Wrappers, c)
		for _, call := range calls {
			pl.add(r, call[0], call, depth+1, open)
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
			pl.add(r, cmd[0], cmd, depth+1, open || hasBraces(cmd))
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
		pl.add(r, inner[0], inner, depth+1, open || innerOpen)
		return
	}
	pl.Commands = append(pl.Commands, c)
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
	path  string
	write bool
}

// stateBuiltins change the shell or run code it holds; a script using one
// is judged as the shell.
var stateBuiltins = map[string]bool{
	"eval": true, "exec": true, "source": true, ".": true, "command": true, "builtin": true,
	"alias": true, "trap": true, "set": true, "export": true, "unset": true, "cd": true,
	"pushd": true, "popd": true, "declare": true, "typeset": true, "local": true,
	"readonly": true, "let": true, "shopt": true, "enable": true, "hash": true, "fc": true,
	"function": true, "coproc": true, "ulimit": true, "umask": true, "read": true,
}

// parseScript returns the literal argv of every command of a plain script,
// its redirection targets, or why the script is not plain.
func parseScript(script string, lang syntax.LangVariant) (calls [][]string, redirs []redirTarget, why string) {
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, nil, "the script does not parse"
	}
	if len(f.Stmts) == 0 {
		return nil, nil, "empty script"
	}
	var walk func(s *syntax.Stmt) string
	walk = func(s *syntax.Stmt) string {
		if s.Negated || s.Background || s.Coprocess || s.Disown {
			return "background jobs and negations are judged as the shell"
		}
		for _, rd := range s.Redirs {
			t, why := redirect(rd)
			if why != "" {
				return why
			}
			if t.path != "" {
				redirs = append(redirs, t)
			}
		}
		switch c := s.Cmd.(type) {
		case *syntax.CallExpr:
			if len(c.Assigns) > 0 {
				return "variable prefixes are judged as the shell"
			}
			if len(c.Args) == 0 {
				return "empty command"
			}
			argv := make([]string, 0, len(c.Args))
			for i, w := range c.Args {
				lit, ok := literal(w, i == 0)
				if !ok {
					return "substitutions, variables and globs are judged as the shell"
				}
				argv = append(argv, lit)
			}
			if stateBuiltins[argv[0]] {
				return "the builtin " + argv[0] + " is judged as the shell"
			}
			if argv[0] == "exit" || argv[0] == ":" {
				return "" // harmless builtins that run nothing
			}
			calls = append(calls, argv)
			return ""
		case *syntax.BinaryCmd:
			switch c.Op {
			case syntax.AndStmt, syntax.OrStmt, syntax.Pipe, syntax.PipeAll:
			default:
				return "unsupported operator"
			}
			if w := walk(c.X); w != "" {
				return w
			}
			return walk(c.Y)
		case nil:
			return "empty command"
		}
		return "subshells, blocks, functions and control flow are judged as the shell"
	}
	for _, s := range f.Stmts {
		if w := walk(s); w != "" {
			return nil, nil, w
		}
	}
	return calls, redirs, ""
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
