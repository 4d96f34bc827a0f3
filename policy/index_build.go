package policy

import (
	"errors"
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
		lit := lower[:len(lower)-1]
		b.ix.prefixLens = insertSorted(b.ix.prefixLens, len(lit))
		b.ix.prefixFirst.add(lit[0])
		b.file(&b.globPAt, &b.ix.globPrefix, lit, set)
	case strings.HasPrefix(lower, "*"):
		lit := lower[1:]
		b.ix.suffixLens = insertSorted(b.ix.suffixLens, len(lit))
		b.ix.suffixLast.add(lit[len(lit)-1])
		b.file(&b.globSAt, &b.ix.globSuffix, lit, set)
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

// finish builds the hash tables from the collected entries.
func (b *indexBuilder) finish() {
	ix := b.ix
	ix.prefixTable = newHashTable(len(ix.prefixes))
	for i, e := range ix.prefixes {
		ix.prefixDepth = max(ix.prefixDepth, strings.Count(strings.TrimSuffix(e.path, "/"), "/"))
		ix.prefixTable.insert(pathHash(e.path), int32(i))
	}
	ix.nameTable = newHashTable(len(ix.names))
	for i, e := range ix.names {
		var hs []uint64
		for _, c := range strings.Split(e.text, "/") {
			hs = append(hs, hashFold(c))
		}
		if len(hs) > 1 {
			ix.windowHeads.add(byte(hs[0] >> 56))
		}
		ix.nameTable.insert(windowHash(hs), int32(i))
	}
	ix.globPrefixT = newHashTable(len(ix.globPrefix))
	for i, e := range ix.globPrefix {
		ix.globPrefixT.insert(hashFold(e.text), int32(i))
	}
	ix.globSuffixT = newHashTable(len(ix.globSuffix))
	for i, e := range ix.globSuffix {
		ix.globSuffixT.insert(hashFold(e.text), int32(i))
	}
}

func insertSorted(s []int, v int) []int {
	i, found := slices.BinarySearch(s, v)
	if found {
		return s
	}
	return slices.Insert(s, i, v)
}
