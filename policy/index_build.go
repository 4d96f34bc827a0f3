package policy

import (
	"errors"
	"maps"
	"slices"
	"strings"
)

// maxWindowLimit bounds how many components a name pattern may span.
const maxWindowLimit = 4

// indexBuilder collects entries, then lays out the hash tables once.
type indexBuilder struct {
	ix       *pathIndex
	prefixAt map[string]int32
	nameAt   map[string]int32
	globPAt  map[string]int32
	globSAt  map[string]int32

	seenWrite, seenRead map[string]struct{} // roots listed so far
}

// firstRoot reports whether root is new to seen, and records it.
func (b *indexBuilder) firstRoot(seen *map[string]struct{}, root string) bool {
	if *seen == nil {
		*seen = map[string]struct{}{}
	}
	if _, ok := (*seen)[root]; ok {
		return false
	}
	(*seen)[root] = struct{}{}
	return true
}

func (b *indexBuilder) addPrefix(path string, set func(*prefixEntry)) {
	if b.prefixAt == nil {
		b.prefixAt = map[string]int32{}
	}
	i, ok := b.prefixAt[path]
	if !ok {
		i = int32(len(b.ix.prefixes))
		b.ix.prefixes = append(b.ix.prefixes, prefixEntry{path: path})
		b.prefixAt[path] = i
	}
	set(&b.ix.prefixes[i])
}

// addName validates and files a name pattern: one to maxWindowLimit
// components without "." or "..", or one component with a leading or
// trailing "*".
func (b *indexBuilder) addName(pat string, set func(*nameEntry)) error {
	if strings.HasSuffix(pat, "/") {
		pat = strings.TrimRight(pat, "/")
	}
	comps := strings.Split(pat, "/")
	if len(comps) > maxWindowLimit {
		return errors.New("a name pattern may span at most 4 components")
	}
	for _, c := range comps {
		switch {
		case c == "":
			return errors.New("empty component in name pattern")
		case c == "." || c == "..":
			return errors.New(`"." and ".." cannot appear in a name pattern`)
		case len(c) > maxName:
			return errors.New("component longer than 255 bytes")
		}
	}
	lower := lowerASCII(pat)
	star := strings.Count(pat, "*")
	if star == 0 {
		b.ix.maxWindow = max(b.ix.maxWindow, len(comps))
		b.file(&b.nameAt, &b.ix.names, lower, set)
		return nil
	}
	if len(comps) != 1 || star != 1 || len(pat) < 2 {
		return errors.New(`"*" may only open or close a single-component pattern (".env.*", "*.pem")`)
	}
	switch {
	case strings.HasSuffix(lower, "*"):
		b.file(&b.globPAt, &b.ix.globPrefix, lower[:len(lower)-1], set)
	case strings.HasPrefix(lower, "*"):
		b.file(&b.globSAt, &b.ix.globSuffix, lower[1:], set)
	default:
		return errors.New(`"*" may only open or close a single-component pattern (".env.*", "*.pem")`)
	}
	return nil
}

func (b *indexBuilder) file(at *map[string]int32, entries *[]nameEntry, text string, set func(*nameEntry)) {
	if *at == nil {
		*at = map[string]int32{}
	}
	i, ok := (*at)[text]
	if !ok {
		i = int32(len(*entries))
		*entries = append(*entries, nameEntry{text: text})
		(*at)[text] = i
	}
	set(&(*entries)[i])
}

// finish builds the hash tables and tries from the collected entries.
func (b *indexBuilder) finish() {
	ix := b.ix
	ix.prefixTable = newHashTable(len(ix.prefixes))
	for i, e := range ix.prefixes {
		d := strings.Count(strings.TrimSuffix(e.path, "/"), "/")
		ix.prefixDepth = max(ix.prefixDepth, d)
		ix.prefixAt |= depthBit(d)
		ix.prefixTable.insert(pathHash(e.path), int32(i))
	}
	ix.nameTable = newHashTable(len(ix.names))
	ix.oneNames = newBloom(len(ix.names))
	for i, e := range ix.names {
		var hs []uint64
		for _, c := range strings.Split(e.text, "/") {
			hs = append(hs, hashFold(c))
		}
		if len(hs) > 1 {
			ix.windowHeads.add(byte(hs[0] >> 56))
		} else {
			ix.oneNames.add(hs[0])
		}
		ix.nameTable.insert(windowHash(hs), int32(i))
	}
	ix.prefixTrie = buildTrie(ix.globPrefix, false)
	ix.suffixTrie = buildTrie(ix.globSuffix, true)
	mark := func(c byte, bit uint8) {
		ix.globEnds[c] |= bit
		if 'a' <= c && c <= 'z' {
			ix.globEnds[c-'a'+'A'] |= bit
		}
	}
	for _, e := range ix.globPrefix {
		mark(e.text[0], globStarts)
	}
	for _, e := range ix.globSuffix {
		mark(e.text[len(e.text)-1], globFinishes)
	}
}

// buildTrie lays out the literals of entries, read backwards when reverse
// is set, as a trie with sorted edges.
func buildTrie(entries []nameEntry, reverse bool) trie {
	// Grow a trie of maps first, then flatten it breadth first.
	type node struct {
		next map[byte]*node
		e    *nameEntry
	}
	root := &node{}
	for i := range entries {
		e := &entries[i]
		n := root
		for k := range len(e.text) {
			c := e.text[k]
			if reverse {
				c = e.text[len(e.text)-1-k]
			}
			if n.next == nil {
				n.next = map[byte]*node{}
			}
			if n.next[c] == nil {
				n.next[c] = &node{}
			}
			n = n.next[c]
		}
		n.e = e
	}
	var t trie
	queue := []*node{root}
	t.nodes = append(t.nodes, trieNode{})
	for q := 0; q < len(queue); q++ {
		n := queue[q]
		tn := &t.nodes[q]
		if n.e != nil {
			tn.readDeny, tn.writeDeny = n.e.readDeny, n.e.writeDeny
		}
		tn.lo = int32(len(t.edgeB))
		for _, c := range slices.Sorted(maps.Keys(n.next)) {
			t.edgeB = append(t.edgeB, c)
			t.edgeN = append(t.edgeN, int32(len(queue)))
			queue = append(queue, n.next[c])
			t.nodes = append(t.nodes, trieNode{})
			tn = &t.nodes[q] // the append may have moved it
		}
		tn.hi = int32(len(t.edgeB))
	}
	return t
}
