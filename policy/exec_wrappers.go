package policy

import "strings"

// wrapper knows how to find the command a wrapper program runs.
type wrapper struct {
	// flags lists options that take a separate value ("-n"); other options
	// starting with "-" are taken as switches.
	valued map[string]bool
	// refuse lists options after which the command cannot be told.
	refuse map[string]bool
	// optional lists short options whose value is optional and only
	// attached ("-e", "-eEOF" for xargs): never the next word.
	optional map[string]bool
	// positional is how many operands come before the command (timeout's
	// DURATION).
	positional int
	assigns    bool // NAME=VALUE operands before the command (env)
	defaultCmd string
	open       bool // arguments will be appended from input (xargs)
	privileged bool // must be allowed itself (sudo, doas)
}

func set(s ...string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, x := range s {
		m[x] = true
	}
	return m
}

var wrappers = map[string]*wrapper{
	"env": {valued: set("-u", "--unset"), assigns: true,
		refuse: set("-S", "--split-string", "-C", "--chdir", "-P")},
	"timeout": {valued: set("-s", "--signal", "-k", "--kill-after"), positional: 1},
	"nice":    {valued: set("-n", "--adjustment")},
	"nohup":   {},
	"setsid":  {},
	"stdbuf":  {valued: set("-i", "-o", "-e", "--input", "--output", "--error")},
	"ionice":  {valued: set("-c", "--class", "-n", "--classdata"), refuse: set("-p", "--pid", "-P", "--pgid", "-u", "--uid")},
	// xargs: -e, -i and -l take an optional value, attached only
	// (xargs --help, GNU findutils 4.9.0); --eof, --replace and
	// --max-lines take it after "=".
	"xargs": {valued: set("-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "--max-lines", "-n",
		"--max-args", "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var"),
		optional: set("-e", "-l", "-i"),
		refuse:   set("-a", "--arg-file", "-I", "-i", "--replace"), defaultCmd: "echo", open: true},
	"sudo": {valued: set("-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir",
		"-h", "--host", "-p", "--prompt", "-r", "--role", "-t", "--type", "-T", "--command-timeout", "-U", "--other-user"),
		refuse:     set("-i", "--login", "-s", "--shell", "-e", "--edit", "-l", "--list", "-v", "--validate", "-D", "--chdir"),
		privileged: true},
	"doas": {valued: set("-u", "-C"), refuse: set("-s", "-C"), privileged: true},
}

// unwrap returns the command(s) argv runs, the variables it sets for them,
// whether more arguments will come from input, and false when that cannot
// be told.
func (w *wrapper) unwrap(argv []string) (cmd []string, assigns []string, open, ok bool) {
	i := 1
	for i < len(argv) {
		a := argv[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		name := a
		if j := strings.IndexByte(a, '='); j > 0 && strings.HasPrefix(a, "--") {
			name = a[:j]
			if w.refuse[name] {
				return nil, nil, false, false
			}
			i++
			continue
		}
		if w.refuse[name] || (len(a) > 2 && a[1] != '-' && w.refuse[a[:2]]) {
			return nil, nil, false, false
		}
		if w.optional[a[:2]] && a[1] != '-' {
			i++ // -e or -eEOF: the value, if any, is attached
			continue
		}
		if w.valued[name] {
			i += 2
			continue
		}
		if len(a) > 2 && a[1] != '-' && w.valued[a[:2]] {
			i++ // -n5
			continue
		}
		// Clustered switches ("-0r") may hide a valued or refused option.
		if a[1] != '-' {
			for _, c := range a[1:] {
				if w.refuse["-"+string(c)] || w.valued["-"+string(c)] {
					return nil, nil, false, false
				}
			}
		}
		i++
	}
	if w.assigns {
		for i < len(argv) && strings.IndexByte(argv[i], '=') > 0 {
			assigns = append(assigns, argv[i][:strings.IndexByte(argv[i], '=')])
			i++
		}
	}
	i += w.positional
	if i > len(argv) {
		return nil, nil, false, false
	}
	if i == len(argv) {
		if w.defaultCmd == "" {
			return nil, nil, false, false
		}
		return []string{w.defaultCmd}, assigns, w.open, true
	}
	return argv[i:], assigns, w.open, true
}

// findExecs returns the commands of find's -exec, -execdir, -ok and -okdir
// actions, and false when one is malformed.
func findExecs(argv []string) (cmds [][]string, ok bool) {
	for i := 1; i < len(argv); i++ {
		switch argv[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(argv) && argv[j] != ";" && argv[j] != "+" {
				j++
			}
			if j == len(argv) || j == i+1 {
				return nil, false
			}
			cmds = append(cmds, argv[i+1:j])
			i = j
		}
	}
	return cmds, true
}
