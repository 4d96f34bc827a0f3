package policy

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The index is checked against refIndex, a matcher written for clarity
// rather than speed: maps keyed by the entries' text, and a walk that
// tries every prefix, window, and glob length of the path. Both must find
// the same rules for every policy and path, including unclean paths
// (repeated or trailing separators), case variants and over-long
// components.

// refIndex holds a policy's entries as plain maps, first rule wins.
type refIndex struct {
	write, read, readDeny, writeDeny map[string]*Rule // absolute entries
	names                            map[string][2]*Rule
	prefixGlobs, suffixGlobs         map[string][2]*Rule // literal part
	depAbs, depNames                 map[string]bool     // dependency trees
	git                              bool                // the git model is on: note the first ".git"
}

// refLower folds ASCII upper case only, as the index does.
func refLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// newRefIndex reads p.Rules() in order. Absolute entries must be spelled
// as they resolve (the generated policies live under a directory that does
// not exist, and /proc and /sys are real directories).
func newRefIndex(p *Policy) *refIndex {
	r := &refIndex{
		write: map[string]*Rule{}, read: map[string]*Rule{},
		readDeny: map[string]*Rule{}, writeDeny: map[string]*Rule{},
		names: map[string][2]*Rule{}, prefixGlobs: map[string][2]*Rule{}, suffixGlobs: map[string][2]*Rule{},
		depAbs: map[string]bool{}, depNames: map[string]bool{}, git: p.git != nil,
	}
	first := func(m map[string]*Rule, k string, rule *Rule) {
		if _, ok := m[k]; !ok {
			m[k] = rule
		}
	}
	// A write deny listed both as a credential and protected everywhere
	// is protected everywhere.
	stronger := func(m map[string]*Rule, k string, rule *Rule) {
		if old, ok := m[k]; !ok || old.Class == ClassCredential && rule.Class != ClassCredential {
			m[k] = rule
		}
	}
	// slot 0 is the read deny, slot 1 the write deny.
	firstName := func(m map[string][2]*Rule, k string, slot int, rule *Rule) {
		v := m[k]
		if v[slot] == nil || slot == 1 && v[1].Class == ClassCredential && rule.Class != ClassCredential {
			v[slot] = rule
		}
		m[k] = v
	}
	for _, rule := range p.Rules() {
		v := rule.Pattern
		switch rule.Kind {
		case KindWriteRoot:
			first(r.write, v, rule)
		case KindReadRoot:
			first(r.read, v, rule)
		case KindSystem:
			first(r.writeDeny, v, rule)
		case KindDependencyTree:
			if v[0] == '/' {
				r.depAbs[v] = true
			} else {
				r.depNames[refLower(strings.TrimRight(v, "/"))] = true
			}
		case KindReadDeny, KindProtected:
			if rule.Class == ClassGit {
				continue // the git model's, not the index's
			}
			slot := 0
			if rule.Kind == KindProtected {
				slot = 1
			}
			switch {
			case v[0] == '/':
				if slot == 0 {
					first(r.readDeny, v, rule)
				} else {
					stronger(r.writeDeny, v, rule)
				}
			case strings.HasPrefix(v, "*"):
				firstName(r.suffixGlobs, refLower(v[1:]), slot, rule)
			case strings.HasSuffix(v, "*"):
				firstName(r.prefixGlobs, refLower(v[:len(v)-1]), slot, rule)
			default:
				firstName(r.names, refLower(strings.TrimRight(v, "/")), slot, rule)
			}
		}
	}
	return r
}

// match walks path the plain way. Precedence, as the index promises: the
// shallowest component decides the deny entries, and within one component
// the absolute entry ending there, then the name of one component, then
// windows ending there from two components up, then prefix globs from the
// shortest literal up, then suffix globs likewise; a credential matched
// below the component ending the first dependency tree is passed over.
// Roots: the deepest wins.
func (r *refIndex) match(path string) (m match) {
	depth, depAt := 0, 0 // the component being matched; where the first dependency tree ended
	hit := func(rd, wd *Rule) {
		if m.readDeny == nil {
			m.readDeny = rd
		}
		if wd != nil && wd.Class == ClassCredential && depAt != 0 && depAt < depth {
			return
		}
		if m.writeDeny == nil {
			m.writeDeny = wd
		}
	}
	defer func() { m.depAt = depAt }()
	var starts, ends []int
	for i := 1; i < len(path); {
		j := strings.IndexByte(path[i:], '/')
		if j < 0 {
			j = len(path)
		} else {
			j += i
		}
		starts, ends = append(starts, i), append(ends, j)
		i = j + 1
	}
	for t := 0; t <= len(ends); t++ {
		depth = t
		dep := false
		prefix, last := "/", len(path) == 1
		if t > 0 {
			prefix, last = path[:ends[t-1]], ends[t-1] == len(path)
		}
		if rule := r.write[prefix]; rule != nil {
			m.write, m.writeRoot, m.writeExact = rule, prefix, last
		}
		if rule := r.read[prefix]; rule != nil {
			m.read, m.readRoot = rule, prefix
		}
		hit(r.readDeny[prefix], r.writeDeny[prefix])
		dep = r.depAbs[prefix]
		if t == 0 {
			continue
		}
		comp := path[starts[t-1]:ends[t-1]]
		if r.git && m.gitEnd == 0 && refLower(comp) == ".git" {
			m.gitEnd = ends[t-1]
		}
		if dep && depAt == 0 {
			depAt = t
		}
		if len(comp) > maxName {
			continue
		}
		for k := 1; k <= maxWindowLimit && k <= t; k++ {
			long := false
			for x := t - k; x < t; x++ {
				long = long || ends[x]-starts[x] > maxName
			}
			if !long {
				key := refLower(path[starts[t-k]:ends[t-1]])
				v := r.names[key]
				hit(v[0], v[1])
				if r.depNames[key] && depAt == 0 {
					depAt = t
				}
			}
		}
		for l := 1; l <= len(comp); l++ {
			v := r.prefixGlobs[refLower(comp[:l])]
			hit(v[0], v[1])
		}
		for l := 1; l <= len(comp); l++ {
			v := r.suffixGlobs[refLower(comp[len(comp)-l:])]
			hit(v[0], v[1])
		}
	}
	return m
}

// refBase is a directory that must not exist, so that the generated roots
// resolve to themselves.
const refBase = "/zq9"

// refComponents are the names generated paths and entries are made of:
// short ones that collide often, names from DefaultProtected, and pieces
// of globs.
var refComponents = []string{
	"a", "b", "ab", "ba", "A", "aB", ".git", "hooks", "config", ".env", ".env.local",
	"x.pem", "KEY.PEM", ".pem", "id_rsa", ".bashrc", ".config", "fish", "src", "main.go",
	"a.b", "b.a", ".a", "a.", "-", "zq9", "proc", "sys", "Q7", "x-9_Z", "m0", "README.md",
	"node_modules", "pkg", "mod", "site-packages", ".ssh",
}

// refComp returns a component other than "." and "..", which clean away.
func refComp(r *rand.Rand) string {
	for {
		if c := refComp1(r); c != "." && c != ".." {
			return c
		}
	}
}

func refComp1(r *rand.Rand) string {
	if r.IntN(4) == 0 {
		// A fresh short name over a small alphabet, so that globs of
		// every length meet partial matches.
		const alpha = "aAbB.-"
		b := make([]byte, 1+r.IntN(5))
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		return string(b)
	}
	c := refComponents[r.IntN(len(refComponents))]
	if r.IntN(3) == 0 {
		// Flip the case of one byte.
		b := []byte(c)
		i := r.IntN(len(b))
		if 'a' <= b[i] && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		} else if 'A' <= b[i] && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
		c = string(b)
	}
	return c
}

func refName(r *rand.Rand, maxComps int) string {
	comps := make([]string, 1+r.IntN(maxComps))
	for i := range comps {
		comps[i] = refComp(r)
	}
	return strings.Join(comps, "/")
}

// refSpec generates a policy: roots and absolute entries under refBase,
// names of one to four components, and globs.
func refSpec(r *rand.Rand) Spec {
	abs := func() string {
		if r.IntN(20) == 0 {
			return "/"
		}
		p := refBase
		for range r.IntN(4) {
			p += "/" + refComp(r)
		}
		return p
	}
	entry := func() string {
		switch r.IntN(5) {
		case 0:
			return abs()
		case 1:
			return "*" + refName(r, 1)
		case 2:
			return refName(r, 1) + "*"
		default:
			return refName(r, maxWindowLimit)
		}
	}
	var s Spec
	for range r.IntN(4) {
		s.WriteRoots = append(s.WriteRoots, abs())
	}
	for range r.IntN(3) {
		s.ReadRoots = append(s.ReadRoots, abs())
	}
	for range r.IntN(8) {
		s.ReadDeny = append(s.ReadDeny, entry())
	}
	for range r.IntN(8) {
		s.Protected = append(s.Protected, entry())
	}
	for range r.IntN(6) {
		s.Credentials = append(s.Credentials, entry())
	}
	for range r.IntN(3) {
		if d := abs(); r.IntN(3) == 0 && d != "/" {
			s.DependencyTrees = append(s.DependencyTrees, d)
		} else {
			s.DependencyTrees = append(s.DependencyTrees, refName(r, 2))
		}
	}
	if r.IntN(3) == 0 {
		s.Protected = append(s.Protected, ".git")
	}
	if r.IntN(8) == 0 {
		// Glob-heavy: enough literals that trie nodes have more edges
		// than a linear scan handles, over a wider alphabet.
		const wide = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_"
		for range 60 + r.IntN(60) {
			b := make([]byte, 1+r.IntN(4))
			for i := range b {
				b[i] = wide[r.IntN(len(wide))]
			}
			if r.IntN(2) == 0 {
				s.Protected = append(s.Protected, "*"+string(b))
			} else {
				s.ReadDeny = append(s.ReadDeny, string(b)+"*")
			}
		}
	}
	s.ReplaceProtected = r.IntN(3) == 0
	if r.IntN(4) == 0 {
		s.WriteRoots = append(s.WriteRoots, ".")
	}
	return s
}

// refPath generates a path to check: mostly clean paths under refBase or
// the system trees, sometimes unclean or with an over-long component.
func refPath(r *rand.Rand) string {
	p := ""
	switch r.IntN(6) {
	case 0:
		p = "/proc"
	case 1:
		p = ""
	default:
		p = refBase
	}
	for range r.IntN(7) {
		switch r.IntN(30) {
		case 0:
			p += "/" // an empty component
		case 1:
			p += "/" + strings.Repeat("k", maxName-1+r.IntN(3))
		default:
			p += "/" + refComp(r)
		}
	}
	if p == "" || r.IntN(15) == 0 {
		p += "/"
	}
	return p
}

// checkAgainstRef compares the index with the reference on one path.
func checkAgainstRef(t *testing.T, p *Policy, ref *refIndex, spec Spec, path string) {
	t.Helper()
	var got match
	p.ix.walk(path, &got)
	want := ref.match(path)
	if got.write == nil {
		got.writeExact = false // meaningless without a root
	}
	if want.write == nil {
		want.writeExact = false
	}
	if got != want {
		t.Fatalf("path %q under %+v:\nindex     %s\nreference %s", path, spec, describeMatch(got), describeMatch(want))
	}
}

// checkRoot checks Decision.Root against the reference's roots.
func checkRoot(t *testing.T, p *Policy, ref *refIndex, path string) {
	t.Helper()
	const cwd = refBase + "/cwd"
	want := ref.match(path)
	for _, op := range []Op{OpWrite, OpRead, OpChdir, OpDelete} {
		d := p.CheckPath(op, path, cwd)
		var root string
		if d.Allowed {
			switch d.Rule {
			case want.write:
				root = want.writeRoot
			case want.read:
				root = want.readRoot
			case p.dot:
				root = cwd
			}
		}
		if d.Root != root {
			t.Fatalf("CheckPath(%v, %q).Root = %q, want %q (%+v)", op, path, d.Root, root, d)
		}
	}
}

func describeMatch(m match) string {
	return "write=" + m.write.String() + " at " + quote(m.writeRoot) + " exact=" + map[bool]string{true: "yes", false: "no"}[m.writeExact] +
		" read=" + m.read.String() + " at " + quote(m.readRoot) + " readDeny=" + m.readDeny.String() + " writeDeny=" + m.writeDeny.String() +
		" depAt=" + strconv.Itoa(m.depAt) + " gitEnd=" + strconv.Itoa(m.gitEnd)
}

func requireRefBaseAbsent(t testing.TB) {
	if _, err := os.Lstat(refBase); err == nil {
		t.Skipf("%s exists on this machine; the generated policies need it absent", refBase)
	}
}

// TestIndexMatchesReference runs generated policies and paths through both
// matchers.
func TestIndexMatchesReference(t *testing.T) {
	requireRefBaseAbsent(t)
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 16))
		spec := refSpec(r)
		p, err := New(spec)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		ref := newRefIndex(p)
		for range 200 {
			path := refPath(r)
			checkAgainstRef(t, p, ref, spec, path)
			checkRoot(t, p, ref, path)
		}
	}
}

// FuzzIndexMatchesReference lets the fuzzer pick the policy (by seed) and
// the path.
func FuzzIndexMatchesReference(f *testing.F) {
	requireRefBaseAbsent(f)
	for i, path := range []string{"/", refBase + "/.git/hooks/x", refBase + "//a/", "/proc/self", refBase + "/A.b/KEY.PEM"} {
		f.Add(uint64(i), path)
	}
	f.Fuzz(func(t *testing.T, seed uint64, path string) {
		if path == "" || path[0] != '/' {
			return
		}
		r := rand.New(rand.NewPCG(seed, 16))
		spec := refSpec(r)
		p, err := New(spec)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkAgainstRef(t, p, newRefIndex(p), spec, path)
	})
}
