package policy

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
)

// Policy is an immutable, validated set of rules. Build one with New or a
// Builder; share it freely between goroutines.
type Policy struct {
	ix           pathIndex
	rules        []*Rule // every configured rule, in the order given
	writeRoots   []string
	readRoots    []string
	dot          *Rule // the "." write root, when configured
	hasReadRoots bool
	// readDeny and protected are the entries as indexed: absolute paths
	// with "~" expanded (both spellings), and name patterns as given.
	readDeny, protected []string
	exec                execRules // exec.go
	net                 netRules  // net.go
	// hints words hints in the terms the policy was written in
	// (Builder.Hints, hints.go); nil for the Go API's own words.
	hints map[HintTopic]string
	// wire is what built the policy, kept so that another process can
	// rebuild the same policy (wire.go).
	wire wirePolicy
}

// Spec is the code-built form of a policy's filesystem rules.
type Spec struct {
	// WriteRoots are the directories writes may land under: absolute paths,
	// "~" or "~/..." for the home directory, "/" for everywhere, or "." for
	// the guarded handle's working directory at the time of each check.
	WriteRoots []string
	// ReadRoots, when non-empty, limit reads to these trees (and the write
	// roots). Empty means reads are allowed anywhere outside ReadDeny.
	ReadRoots []string
	// ReadDeny entries may not be read: absolute paths (and their subtrees)
	// or name patterns matched at any depth.
	ReadDeny []string
	// Protected entries may not be written even inside a write root. They
	// extend DefaultProtected unless ReplaceProtected is set.
	Protected        []string
	ReplaceProtected bool
	// Source is the provenance recorded on every rule ("code" when empty).
	Source string
	// Home replaces the user's home directory when expanding "~".
	Home string
	// Exec holds the rules for starting processes (deny by default).
	Exec ExecSpec
	// Net holds the rules for dialing and listening (deny by default).
	Net NetSpec
}

// New builds a policy from spec. Every invalid entry is reported; nothing is
// skipped silently.
func New(spec Spec) (*Policy, error) {
	b := Builder{Home: spec.Home, ReplaceProtected: spec.ReplaceProtected, Exec: spec.Exec, Net: spec.Net}
	src := spec.Source
	if src == "" {
		src = "code"
	}
	for _, r := range spec.WriteRoots {
		b.WriteRoot(r, src)
	}
	for _, r := range spec.ReadRoots {
		b.ReadRoot(r, src)
	}
	for _, r := range spec.ReadDeny {
		b.ReadDeny(r, src)
	}
	for _, r := range spec.Protected {
		b.Protect(r, src)
	}
	return b.Build()
}

// Builder assembles a policy entry by entry, each with its provenance. The
// zero value is ready to use.
type Builder struct {
	// Home replaces the user's home directory when expanding "~".
	Home string
	// ReplaceProtected drops DefaultProtected: only the entries given with
	// Protect are protected. It must be said explicitly.
	ReplaceProtected bool
	// Exec and Net hold the process and network rules; each rule carries
	// its own provenance.
	Exec ExecSpec
	Net  NetSpec
	// Hints words the hints of denials in the terms the policy is written
	// in, by topic: Policy.HintFor gives them instead of the core's Go API
	// wording. Package policyfile fills it with TOML tables and keys; code
	// leaves it nil.
	Hints map[HintTopic]string

	entries []builderEntry
}

type builderEntry struct {
	kind   RuleKind
	value  string
	source string
}

// EntryError reports one invalid policy entry and where it came from.
type EntryError struct {
	Field  string // "write root", "protected", ...
	Value  string
	Source string
	Err    error
}

func (e *EntryError) Error() string {
	s := e.Field + " " + quote(e.Value)
	if e.Source != "" {
		s += " (" + e.Source + ")"
	}
	return s + ": " + e.Err.Error()
}

func (e *EntryError) Unwrap() error { return e.Err }

func (b *Builder) WriteRoot(path, source string) { b.add(KindWriteRoot, path, source) }
func (b *Builder) ReadRoot(path, source string)  { b.add(KindReadRoot, path, source) }
func (b *Builder) ReadDeny(entry, source string) { b.add(KindReadDeny, entry, source) }
func (b *Builder) Protect(entry, source string)  { b.add(KindProtected, entry, source) }

func (b *Builder) add(k RuleKind, v, src string) {
	b.entries = append(b.entries, builderEntry{k, v, src})
}

// Build validates every entry, canonicalises paths (resolving symbolic links
// of roots that exist, keeping both spellings) and indexes the result.
func (b *Builder) Build() (*Policy, error) {
	p := &Policy{wire: b.wireForm(), hints: maps.Clone(b.Hints)}
	var errs []error
	ib := indexBuilder{ix: &p.ix}

	entries := b.entries
	if !b.ReplaceProtected {
		defaults := make([]builderEntry, 0, len(DefaultProtected)+len(systemWriteDeny)+len(entries))
		for _, d := range DefaultProtected {
			defaults = append(defaults, builderEntry{KindProtected, d, "builtin"})
		}
		entries = append(defaults, entries...)
	}
	for _, s := range systemWriteDeny {
		r := &Rule{Kind: KindSystem, Pattern: s, Source: "builtin",
			Hint: "kernel interfaces are never writable through the guard"}
		p.rules = append(p.rules, r)
		ib.addPrefix(s, func(e *prefixEntry) { setOnce(&e.writeDeny, r) })
	}

	for _, e := range entries {
		if err := b.addEntry(p, &ib, e); err != nil {
			errs = append(errs, &EntryError{Field: e.kind.String(), Value: e.value, Source: e.source, Err: err})
		}
	}
	if err := p.exec.build(b.Exec, p); err != nil {
		errs = append(errs, err)
	}
	if err := p.net.build(b.Net, p); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	ib.finish()
	return p, nil
}

func setOnce(dst **Rule, r *Rule) {
	if *dst == nil {
		*dst = r
	}
}

func (b *Builder) addEntry(p *Policy, ib *indexBuilder, e builderEntry) error {
	v := e.value
	switch {
	case v == "":
		return errors.New("empty entry")
	case strings.IndexByte(v, 0) >= 0:
		return errors.New("contains a NUL byte")
	}
	r := &Rule{Kind: e.kind, Pattern: v, Source: e.source}
	switch e.kind {
	case KindWriteRoot, KindReadRoot:
		if v == "." {
			if e.kind == KindReadRoot {
				return errors.New(`"." is only meaningful as a write root`)
			}
			r.Kind = KindDotRoot
			r.Hint = "the guarded handle's working directory"
			if p.dot == nil {
				p.dot = r
			}
			p.rules = append(p.rules, r)
			return nil
		}
		paths, err := b.absolute(v)
		if err != nil {
			return err
		}
		if e.kind == KindWriteRoot {
			// A root is a directory tree: guarded handles open it as one.
			// One that does not exist yet is fine (it may be made later).
			if fi, err := os.Stat(paths[len(paths)-1]); err == nil && !fi.IsDir() {
				return fmt.Errorf("is a file, not a directory: a write root is a directory tree (did you mean its directory %q?)", filepath.Dir(paths[len(paths)-1]))
			}
		}
		p.rules = append(p.rules, r)
		for _, ap := range paths {
			if e.kind == KindWriteRoot {
				if ib.firstRoot(&ib.seenWrite, ap) {
					p.writeRoots = append(p.writeRoots, ap)
				}
				ib.addPrefix(ap, func(pe *prefixEntry) { setOnce(&pe.write, r) })
			} else {
				p.hasReadRoots = true
				if ib.firstRoot(&ib.seenRead, ap) {
					p.readRoots = append(p.readRoots, ap)
				}
				ib.addPrefix(ap, func(pe *prefixEntry) { setOnce(&pe.read, r) })
			}
		}
		return nil
	case KindReadDeny, KindProtected:
		if e.kind == KindProtected {
			r.Hint = hintProtected
		} else {
			r.Hint = hintReadDeny
		}
		p.rules = append(p.rules, r)
		if v[0] == '/' || v[0] == '~' {
			paths, err := b.absolute(v)
			if err != nil {
				return err
			}
			for _, ap := range paths {
				p.addFileEntry(e.kind, ap)
				ib.addPrefix(ap, func(pe *prefixEntry) {
					if e.kind == KindReadDeny {
						setOnce(&pe.readDeny, r)
					} else {
						setOnce(&pe.writeDeny, r)
					}
				})
			}
			return nil
		}
		p.addFileEntry(e.kind, v)
		return ib.addName(v, func(ne *nameEntry) {
			if e.kind == KindReadDeny {
				setOnce(&ne.readDeny, r)
			} else {
				setOnce(&ne.writeDeny, r)
			}
		})
	}
	return fmt.Errorf("unknown entry kind %v", e.kind)
}

// Paths returns the absolute paths a path entry stands for, as Build
// indexes it: "~" expanded with Home, the entry as written (cleaned, when it
// has no ".."), and the entry with symbolic links resolved. It resolves on
// the real filesystem. A front end uses it to compare entries of two
// policies the way Build will see them.
func (b *Builder) Paths(entry string) ([]string, error) { return b.absolute(entry) }

// absolute expands "~", checks the path is absolute and returns its
// spellings: as written (cleaned, when that is safe) and with symbolic links
// resolved.
func (b *Builder) absolute(v string) ([]string, error) {
	if v == "~" || strings.HasPrefix(v, "~/") {
		home := b.Home
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("cannot expand ~: %w", err)
			}
			home = h
		}
		if !filepath.IsAbs(home) {
			return nil, fmt.Errorf("home directory %q is not absolute", home)
		}
		v = home + v[1:]
	} else if strings.HasPrefix(v, "~") {
		return nil, errors.New(`only "~" and "~/..." are expanded, not "~user"`)
	}
	if !filepath.IsAbs(v) {
		return nil, errors.New(`not an absolute path (use "." for the working directory)`)
	}
	real, err := Resolve(OSFS{}, v, "/", true)
	if err != nil {
		return nil, err
	}
	var out []string
	if !hasDotDot(v) {
		out = append(out, filepath.Clean(v))
	}
	return appendUnique(out, real), nil
}

func hasDotDot(p string) bool {
	for rest := p; ; {
		var c string
		c, rest = nextComponent(rest)
		if c == "" {
			return false
		}
		if c == ".." {
			return true
		}
	}
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func (p *Policy) addFileEntry(k RuleKind, v string) {
	if k == KindReadDeny {
		p.readDeny = appendUnique(p.readDeny, v)
	} else {
		p.protected = appendUnique(p.protected, v)
	}
}

// FileSpec returns the policy's filesystem rules in a form that rebuilds an
// equivalent policy with New, in another process: roots and absolute entries
// expanded and canonical, the "." root replaced by cwd (dropped when cwd is
// empty), protected entries complete (built-in ones included, so
// ReplaceProtected is set). Exec and net rules are not part of it. The
// sandbox uses it to judge a child's file calls with the same rules.
func (p *Policy) FileSpec(cwd string) Spec {
	if p == nil {
		return Spec{}
	}
	s := Spec{
		WriteRoots:       append([]string(nil), p.writeRoots...),
		ReadRoots:        append([]string(nil), p.readRoots...),
		ReadDeny:         append([]string(nil), p.readDeny...),
		Protected:        append([]string(nil), p.protected...),
		ReplaceProtected: true,
		Source:           "sandbox",
	}
	if p.dot != nil && cwd != "" {
		s.WriteRoots = appendUnique(s.WriteRoots, cwd)
	}
	return s
}

// WriteRoots returns the absolute write roots, every spelling, without ".".
func (p *Policy) WriteRoots() []string {
	if p == nil {
		return nil
	}
	return append([]string(nil), p.writeRoots...)
}

// ReadRoots returns the absolute read roots; empty means reads are unrestricted.
func (p *Policy) ReadRoots() []string {
	if p == nil {
		return nil
	}
	return append([]string(nil), p.readRoots...)
}

// DotRoot reports whether "." (the handle's working directory) is a write root.
func (p *Policy) DotRoot() bool { return p != nil && p.dot != nil }

// Rules returns every rule of the policy, built-in ones included, in order.
func (p *Policy) Rules() []*Rule {
	if p == nil {
		return nil
	}
	return append([]*Rule(nil), p.rules...)
}
