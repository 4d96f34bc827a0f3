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
	// credentials and depTrees are the credential-class protected entries
	// and the dependency trees, as indexed (protected.go).
	credentials, depTrees []string
	// git is the git metadata model, nil when the protected list does not
	// hold GitEntry (gitmeta.go).
	git  *gitModel
	exec execRules // exec.go
	net  netRules  // net.go
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
	// Protected entries may not be written even inside a write root, at
	// any depth (ClassRuns, protected.go). They extend DefaultProtected
	// unless ReplaceProtected is set. GitEntry and the other git entries
	// turn on the git metadata model (gitmeta.go).
	Protected []string
	// Credentials are protected entries that hold secrets
	// (ClassCredential): protected like Protected outside the dependency
	// trees, writable inside them. They extend DefaultCredentials unless
	// ReplaceProtected is set.
	Credentials []string
	// DependencyTrees are where credential-class names may be written:
	// name patterns (no "*") or absolute paths. They extend
	// DefaultDependencyTrees unless ReplaceProtected is set.
	DependencyTrees []string
	// ReplaceProtected drops the three built-in lists (DefaultProtected,
	// DefaultCredentials, DefaultDependencyTrees).
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
	for _, r := range spec.Credentials {
		b.Credential(r, src)
	}
	for _, r := range spec.DependencyTrees {
		b.DependencyTree(r, src)
	}
	return b.Build()
}

// Builder assembles a policy entry by entry, each with its provenance. The
// zero value is ready to use.
type Builder struct {
	// Home replaces the user's home directory when expanding "~".
	Home string
	// ReplaceProtected drops DefaultProtected, DefaultCredentials and
	// DefaultDependencyTrees: only the entries given with Protect,
	// Credential and DependencyTree apply. It must be said explicitly.
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
	class  ProtectClass // for KindProtected: ClassRuns (zero) or ClassCredential
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

// Credential adds a credential-class protected entry: protected outside
// dependency trees (protected.go).
func (b *Builder) Credential(entry, source string) {
	b.entries = append(b.entries, builderEntry{KindProtected, entry, source, ClassCredential})
}

// DependencyTree adds a dependency tree: a name pattern (no "*") or an
// absolute path under which credential-class names may be written.
func (b *Builder) DependencyTree(entry, source string) { b.add(KindDependencyTree, entry, source) }

func (b *Builder) add(k RuleKind, v, src string) {
	b.entries = append(b.entries, builderEntry{k, v, src, 0})
}

// Build validates every entry, canonicalises paths (resolving symbolic links
// of roots that exist, keeping both spellings) and indexes the result.
func (b *Builder) Build() (*Policy, error) {
	p := &Policy{wire: b.wireForm(), hints: maps.Clone(b.Hints)}
	var errs []error
	ib := indexBuilder{ix: &p.ix}

	entries := b.entries
	if !b.ReplaceProtected {
		defaults := make([]builderEntry, 0, len(DefaultProtected)+len(DefaultCredentials)+len(DefaultDependencyTrees)+len(entries))
		for _, d := range DefaultProtected {
			defaults = append(defaults, builderEntry{KindProtected, d, "builtin", 0})
		}
		for _, d := range DefaultCredentials {
			defaults = append(defaults, builderEntry{KindProtected, d, "builtin", ClassCredential})
		}
		for _, d := range DefaultDependencyTrees {
			defaults = append(defaults, builderEntry{KindDependencyTree, d, "builtin", 0})
		}
		entries = append(defaults, entries...)
	}
	// A git entry in the list turns on the git metadata model (gitmeta.go).
	for _, e := range entries {
		if e.kind == KindProtected && e.class != ClassCredential && isGitClassEntry(e.value) {
			r := &Rule{Kind: KindGitMeta, Pattern: GitEntry, Source: "builtin", Hint: hintGitMeta, Class: ClassGit}
			p.git = &gitModel{object: r}
			p.rules = append(p.rules, r)
			break
		}
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
	// The go profile's module cache is a dependency tree wherever it is.
	for _, it := range p.exec.profiles {
		if v, ok := strings.CutPrefix(it.Value, "GOMODCACHE="); ok && it.Kind == ProfileEnvSet {
			if err := b.addEntry(p, &ib, builderEntry{KindDependencyTree, v, "profile " + it.Profile + " (GOMODCACHE)", 0}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := p.net.build(b.Net, p); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	p.ix.git = p.git != nil
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
	if e.kind == KindProtected {
		r.Class = ClassRuns
		if e.class == ClassCredential {
			r.Class = ClassCredential
		}
	}
	if p.git != nil && e.kind == KindProtected && r.Class == ClassRuns && p.git.take(r) {
		p.rules = append(p.rules, r)
		p.addFileEntry(r, v)
		return nil
	}
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
	case KindDependencyTree:
		if strings.IndexByte(v, '*') >= 0 {
			return errors.New(`a dependency tree is a name or an absolute path, without "*"`)
		}
		r.Hint = "credential-class protected names may be written in this tree"
		p.rules = append(p.rules, r)
		if v[0] == '/' || v[0] == '~' {
			paths, err := b.absolute(v)
			if err != nil {
				return err
			}
			for _, ap := range paths {
				if ap == "/" {
					return errors.New("the whole filesystem cannot be a dependency tree")
				}
				p.depTrees = appendUnique(p.depTrees, ap)
				ib.addPrefix(ap, func(pe *prefixEntry) { pe.dep = true })
			}
			return nil
		}
		p.depTrees = appendUnique(p.depTrees, v)
		return ib.addName(v, func(ne *nameEntry) { ne.dep = true })
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
				p.addFileEntry(r, ap)
				ib.addPrefix(ap, func(pe *prefixEntry) {
					if e.kind == KindReadDeny {
						setOnce(&pe.readDeny, r)
					} else {
						setStronger(&pe.writeDeny, r)
					}
				})
			}
			return nil
		}
		p.addFileEntry(r, v)
		return ib.addName(v, func(ne *nameEntry) {
			if e.kind == KindReadDeny {
				setOnce(&ne.readDeny, r)
			} else {
				setStronger(&ne.writeDeny, r)
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

func (p *Policy) addFileEntry(r *Rule, v string) {
	switch {
	case r.Kind == KindReadDeny:
		p.readDeny = appendUnique(p.readDeny, v)
	case r.Class == ClassCredential:
		p.credentials = appendUnique(p.credentials, v)
	default:
		p.protected = appendUnique(p.protected, v)
	}
}

// setStronger files r as an entry's write-deny rule: the first one, or r
// when it is protected everywhere and the one filed is a credential
// (protected outside dependency trees), so that listing a name in both
// classes protects it everywhere.
func setStronger(dst **Rule, r *Rule) {
	if *dst == nil || (*dst).Class == ClassCredential && r.Class != ClassCredential {
		*dst = r
	}
}

// FileSpec returns the policy's filesystem rules in a form that rebuilds an
// equivalent policy with New, in another process: roots and absolute entries
// expanded and canonical, the "." root replaced by cwd (dropped when cwd is
// empty), protected entries, credentials and dependency trees complete
// (built-in ones included, so ReplaceProtected is set). Exec and net rules are not part of it. The
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
		Credentials:      append([]string(nil), p.credentials...),
		DependencyTrees:  append([]string(nil), p.depTrees...),
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
