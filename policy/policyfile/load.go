package policyfile

import (
	"errors"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/internal/didyoumean"
)

// This file loads policy files: strict TOML whose every rule keeps the
// file and line it was written on as its Source. The format is documented in
// docs/policy.md; policy/policyfile/testdata/example.toml is a complete example.
//
//	[modes]
//	fs   = "enforce"          # "enforce" | "warn" | "off"
//
//	[fs]
//	write_roots = ["/srv/agent/work", "."]
//	read_deny   = ["~/.ssh", ".env"]
//	protected   = ["secrets"]
//
// The [exec] and [net] tables are decoded by decodeExec (exec.go) and
// decodeNet (net.go).

// strictness orders modes for layering: off < warn < enforce. An unset mode
// counts as enforce, the guard's default.
func strictness(m policy.Mode) int {
	switch m {
	case policy.ModeOff:
		return 0
	case policy.ModeWarn:
		return 1
	}
	return 2
}

// File is a loaded policy file (or a stack of layers): the validated policy
// and the settings that are not rules.
type File struct {
	Policy *policy.Policy
	Modes  policy.Modes
	// Paths are the files it was loaded from, the operator layer first.
	Paths []string
}

// LoadOption configures loading.
type LoadOption func(*loadConfig)

type loadConfig struct {
	home string
}

// WithHome sets the directory "~" expands to (the user's home otherwise).
func WithHome(dir string) LoadOption { return func(c *loadConfig) { c.home = dir } }

// Load reads a policy file and returns its policy. Any unknown key, wrong
// type or invalid value fails the whole load with a *LoadError that says
// where; nothing is applied partially. Modes set in the file are not part of
// a Policy: use LoadFile to get them.
func Load(path string, opts ...LoadOption) (*policy.Policy, error) {
	f, err := LoadFile(path, opts...)
	if err != nil {
		return nil, err
	}
	return f.Policy, nil
}

// LoadFile reads a policy file and returns its policy and modes.
func LoadFile(path string, opts ...LoadOption) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, opts...)
}

// Parse loads a policy from data; name is the file name that sources and
// errors carry ("name:line").
func Parse(name string, data []byte, opts ...LoadOption) (*File, error) {
	var c loadConfig
	for _, o := range opts {
		o(&c)
	}
	spec, errs := decodeFile(name, data)
	if spec == nil {
		return nil, &LoadError{Problems: errs} // not TOML: nothing more to read
	}
	f, err := buildFile(c, []*fileSpec{spec}, spec.entries(), spec.replaceProtected, spec.exec.spec, spec.net.spec, spec.modes)
	if len(errs) == 0 {
		return f, err
	}
	// Keys or types had problems: report the values' too, in one pass.
	return nil, withProblems(errs, err)
}

// withProblems joins the decoder's problems with those of a build of the
// rest, in file order.
func withProblems(errs []*FileError, err error) *LoadError {
	var le *LoadError
	if errors.As(err, &le) {
		errs = append(errs, le.Problems...)
	}
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i], errs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return &LoadError{Problems: errs}
}

// fileSpec is one decoded policy file, before validation of its values.
type fileSpec struct {
	name string

	writeRoots, readRoots, readDeny, protected []fileEntry
	credentials, dependencyTrees               []fileEntry
	has                                        map[string]filePos // fs keys present, for layering

	replaceProtected bool
	modes            policy.Modes
	modeAt           [3]filePos // fs, exec, net
	exec             execFile   // exec.go
	net              netFile    // net.go
}

// fileEntry is one path entry and where it is written.
type fileEntry struct {
	kind       policy.RuleKind
	credential bool // a protected entry of the credential class (fs.credentials)
	value      string
	file       string
	at         filePos
	key        string // "fs.write_roots"
}

func (e fileEntry) source() string { return e.file + ":" + strconv.Itoa(e.at.line) }

func (s *fileSpec) entries() []fileEntry {
	var out []fileEntry
	for _, l := range [][]fileEntry{s.writeRoots, s.readRoots, s.readDeny, s.protected, s.credentials, s.dependencyTrees} {
		out = append(out, l...)
	}
	return out
}

// fileSchema lists the keys each table accepts, for strictness and for
// did-you-mean suggestions. The keys of [exec] and [net] are listed by their
// decoders.
var fileSchema = map[string][]string{
	"":      {"use", "fs", "modes", "exec", "net"},
	"fs":    {"write_roots", "read_roots", "read_deny", "protected", "credentials", "dependency_trees", "replace_protected"},
	"modes": {"fs", "exec", "net"},
	"exec":  execKeys,
	"net":   netKeys,
}

// fileTables are the tables searched when a key is unknown where it is
// written ("write_roots" at the top level belongs in [fs]).
var fileTables = []string{"fs", "modes", "exec", "net"}

// fileDecoder collects every problem of one file.
type fileDecoder struct {
	name string
	errs []*FileError
}

func (d *fileDecoder) fail(at filePos, key, msg string) *FileError {
	e := &FileError{File: d.name, Line: at.line, Col: at.col, Key: key, Msg: msg}
	d.errs = append(d.errs, e)
	return e
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// unknown reports a key that table path does not accept, with the closest
// known key of that table, or the table where a key of that name belongs.
func (d *fileDecoder) unknown(path string, f *tfield, known []string) {
	e := d.fail(f.pos, joinKey(path, f.key), "unknown key")
	if s := didyoumean.Closest(f.key, known); s != "" {
		e.Suggest = s
		return
	}
	for _, table := range fileTables {
		if table == path {
			continue
		}
		if s := didyoumean.Closest(f.key, fileSchema[table]); s != "" {
			e.Suggest = joinKey(table, s)
			e.Msg = "unknown key here; it belongs in [" + table + "]"
			return
		}
	}
	if len(known) == 0 {
		e.Msg += "; this table takes no keys"
	} else {
		e.Msg += "; known keys: " + strings.Join(known, ", ")
	}
}

func (d *fileDecoder) table(f *tfield, path string) *tval {
	if f.val.kind != tTable {
		d.fail(f.pos, path, "expected a table, got "+f.val.kind.String())
		return nil
	}
	return f.val
}

func (d *fileDecoder) boolean(f *tfield, path string) (bool, bool) {
	if f.val.kind != tBool {
		d.fail(f.val.pos, path, "expected a boolean (true or false), got "+f.val.kind.String())
		return false, false
	}
	return f.val.b, true
}

func (d *fileDecoder) str(f *tfield, path string) (string, bool) {
	if f.val.kind != tString {
		d.fail(f.val.pos, path, "expected a string, got "+f.val.kind.String())
		return "", false
	}
	return f.val.str, true
}

// entries reads an array of strings.
func (d *fileDecoder) entries(f *tfield, path string, kind policy.RuleKind) []fileEntry {
	if f.val.kind != tArray {
		d.fail(f.val.pos, path, "expected an array of strings, got "+f.val.kind.String())
		return nil
	}
	var out []fileEntry
	for i, el := range f.val.elems {
		if el.kind != tString {
			d.fail(el.pos, path+"["+strconv.Itoa(i)+"]", "expected a string, got "+el.kind.String())
			continue
		}
		out = append(out, fileEntry{kind: kind, value: el.str, file: d.name, at: el.pos, key: path})
	}
	return out
}

// decodeFile reads the schema from one file. It checks keys and types; the
// values themselves are validated when the policy is built.
func decodeFile(name string, data []byte) (*fileSpec, []*FileError) {
	d := &fileDecoder{name: name}
	root, err := parseTree(data)
	if err != nil {
		var se *tomlSyntaxError
		if errors.As(err, &se) {
			d.fail(se.at, se.key, se.msg)
		} else {
			d.fail(filePos{}, "", err.Error())
		}
		return nil, d.errs
	}
	spec := &fileSpec{name: name, has: map[string]filePos{}}
	var use *tfield
	for _, f := range root.fields {
		switch f.key {
		case "use":
			use = f // use.go, once [exec] is read
		case "fs":
			if t := d.table(f, "fs"); t != nil {
				d.decodeFS(t, spec)
			}
		case "modes":
			if t := d.table(f, "modes"); t != nil {
				d.decodeModes(t, spec)
			}
		case "exec":
			if t := d.table(f, "exec"); t != nil {
				spec.exec = decodeExec(d, t)
			}
		case "net":
			if t := d.table(f, "net"); t != nil {
				spec.net = decodeNet(d, t)
			}
		default:
			d.unknown("", f, fileSchema[""])
		}
	}
	if use != nil {
		d.decodeUse(use, &spec.exec)
	}
	return spec, d.errs
}

func (d *fileDecoder) decodeFS(t *tval, spec *fileSpec) {
	for _, f := range t.fields {
		path := "fs." + f.key
		switch f.key {
		case "write_roots":
			spec.writeRoots = d.entries(f, path, policy.KindWriteRoot)
		case "read_roots":
			spec.readRoots = d.entries(f, path, policy.KindReadRoot)
		case "read_deny":
			spec.readDeny = d.entries(f, path, policy.KindReadDeny)
		case "protected":
			spec.protected = d.entries(f, path, policy.KindProtected)
		case "credentials":
			spec.credentials = d.entries(f, path, policy.KindProtected)
			for i := range spec.credentials {
				spec.credentials[i].credential = true
			}
		case "dependency_trees":
			spec.dependencyTrees = d.entries(f, path, policy.KindDependencyTree)
		case "replace_protected":
			spec.replaceProtected, _ = d.boolean(f, path)
		default:
			d.unknown("fs", f, fileSchema["fs"])
			continue
		}
		spec.has[f.key] = f.pos
	}
}

func (d *fileDecoder) decodeModes(t *tval, spec *fileSpec) {
	for _, f := range t.fields {
		path := "modes." + f.key
		var dst *policy.Mode
		switch f.key {
		case "fs":
			dst, spec.modeAt[0] = &spec.modes.FS, f.pos
		case "exec":
			dst, spec.modeAt[1] = &spec.modes.Exec, f.pos
		case "net":
			dst, spec.modeAt[2] = &spec.modes.Net, f.pos
		default:
			d.unknown("modes", f, fileSchema["modes"])
			continue
		}
		s, ok := d.str(f, path)
		if !ok {
			continue
		}
		m, err := policy.ParseMode(s)
		if err != nil {
			e := d.fail(f.val.pos, path, err.Error())
			e.Suggest = didyoumean.Closest(s, []string{policy.ModeEnforce.String(), policy.ModeWarn.String(), policy.ModeOff.String()})
			continue
		}
		*dst = m
	}
}

// buildFile validates the entries of one or more layers into a policy.
// Errors from the builder are mapped back to where each entry is written.
func buildFile(c loadConfig, specs []*fileSpec, entries []fileEntry, replace bool, exec policy.ExecSpec, net policy.NetSpec, modes policy.Modes) (*File, error) {
	b := policy.Builder{Home: c.home, ReplaceProtected: replace, Exec: exec, Net: net}
	type key struct{ field, value, source string }
	where := make(map[key]fileEntry, len(entries))
	for _, e := range entries {
		src := e.source()
		switch e.kind {
		case policy.KindWriteRoot:
			b.WriteRoot(e.value, src)
		case policy.KindReadRoot:
			b.ReadRoot(e.value, src)
		case policy.KindReadDeny:
			b.ReadDeny(e.value, src)
		case policy.KindProtected:
			if e.credential {
				b.Credential(e.value, src)
			} else {
				b.Protect(e.value, src)
			}
		case policy.KindDependencyTree:
			b.DependencyTree(e.value, src)
		}
		where[key{e.kind.String(), e.value, src}] = e
	}
	b.Hints = tomlHints
	p, err := b.Build()
	if err != nil {
		var probs []*FileError
		for _, one := range flattenErrors(err) {
			var ee *policy.EntryError
			if errors.As(one, &ee) {
				if e, ok := where[key{ee.Field, ee.Value, ee.Source}]; ok {
					probs = append(probs, &FileError{File: e.file, Line: e.at.line, Col: e.at.col, Key: e.key,
						Msg: strconv.Quote(e.value) + ": " + ee.Err.Error(), Err: ee})
					continue
				}
				if fe := ruleEntryError(specs, ee); fe != nil { // rulepos.go: exec and net rules
					probs = append(probs, fe)
					continue
				}
			}
			probs = append(probs, &FileError{File: specs[len(specs)-1].name, Msg: one.Error(), Err: one})
		}
		return nil, &LoadError{Problems: probs}
	}
	f := &File{Policy: p, Modes: modes}
	for _, s := range specs {
		f.Paths = append(f.Paths, s.name)
	}
	return f, nil
}

func flattenErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flattenErrors(e)...)
		}
		return out
	}
	return []error{err}
}
