package policy

import (
	"hash/maphash"
	"math/bits"
)

// The path index answers, in one pass over a resolved path and without
// allocating, which roots contain it and which deny entries match it. Its cost
// depends on the path's length and depth, never on how many entries exist:
//
//   - absolute entries (roots, "/etc/shadow", "~/.ssh") live in a hash table
//     keyed by a hash of their components, built so that the hash of every
//     ancestor of the path falls out of the walk for free;
//   - name patterns (".bashrc", ".git/hooks", ".env.*", "*.pem") live in tables
//     keyed by the case-folded hash of a window of trailing components, or of
//     a component's prefix or suffix for the two glob forms.
//
// Every table hit is confirmed by comparing strings, so a hash collision can
// never make a rule match a path it does not name.

// hashTable maps 64-bit hashes to entry indexes with open addressing.
// Several entries may share a hash; lookups visit them all.
type hashTable struct {
	keys []uint64 // 0 marks an empty slot
	vals []int32
	mask uint64
}

func newHashTable(n int) hashTable {
	size := 8
	for size < 2*n {
		size <<= 1
	}
	return hashTable{keys: make([]uint64, size), vals: make([]int32, size), mask: uint64(size - 1)}
}

func nonZero(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

func (t *hashTable) insert(h uint64, v int32) {
	h = nonZero(h)
	i := h & t.mask
	for t.keys[i] != 0 {
		i = (i + 1) & t.mask
	}
	t.keys[i] = h
	t.vals[i] = v
}

// first returns the slot to start probing for h; next continues from a slot.
// A slot is a candidate when keys[slot] == h; the probe ends at an empty slot.
func (t *hashTable) first(h uint64) uint64 {
	if len(t.keys) == 0 {
		return 0
	}
	return h & t.mask
}

// mix folds a component hash into a running path hash. It is not
// commutative, so "/a/b" and "/b/a" differ.
func mix(acc, h uint64) uint64 {
	return bits.RotateLeft64(acc*0x9E3779B97F4A7C15, 31) ^ h
}

const pathSeed0 = 0x243F6A8885A308D3 // the hash of "/" (no components)

// prefixEntry is everything configured for one absolute path.
type prefixEntry struct {
	path      string
	write     *Rule // write root
	read      *Rule // read root
	readDeny  *Rule
	writeDeny *Rule
}

// nameEntry is a name pattern: a window of one or more components, or a
// single-component glob.
type nameEntry struct {
	text      string // case-folded; for globs, the literal part
	readDeny  *Rule
	writeDeny *Rule
}

type pathIndex struct {
	seed maphash.Seed

	prefixes     []prefixEntry
	prefixTable  hashTable
	names        []nameEntry
	nameTable    hashTable // exact windows of 1..maxWindow components
	maxWindow    int
	globPrefix   []nameEntry // "name*"
	globPrefixT  hashTable
	prefixLens   [256 / 64]uint64 // bit n set: some "name*" has a literal of length n
	globSuffix   []nameEntry      // "*name"
	globSuffixT  hashTable
	suffixLens   [256 / 64]uint64
	hasGlobNames bool
}

// match collects what one walk found.
type match struct {
	write, read         *Rule // deepest containing roots
	writeExact          bool  // the path is itself a write root
	readDeny, writeDeny *Rule
}

func (ix *pathIndex) hashComp(s string) uint64 { return maphash.String(ix.seed, s) }

// pathHash returns the prefix hash of a clean absolute path.
func (ix *pathIndex) pathHash(p string) uint64 {
	h := uint64(pathSeed0)
	for rest := p; ; {
		var c string
		c, rest = nextComponent(rest)
		if c == "" {
			return h
		}
		h = mix(h, ix.hashComp(c))
	}
}

// windowHash folds component hashes of a window, oldest first.
func windowHash(hs []uint64) uint64 {
	h := uint64(0x13198A2E03707344)
	for _, c := range hs {
		h = mix(h, c)
	}
	return h
}

const maxName = 255 // NAME_MAX: longer components cannot match a pattern

// walk visits every ancestor of the clean absolute path p and every window
// of its trailing components, recording the matches in m.
func (ix *pathIndex) walk(p string, m *match) {
	ix.visitPrefix(pathSeed0, "/", p, m)
	var (
		lowerBuf [maxName]byte
		ring     [maxWindowLimit]uint64 // case-folded hashes of the last components
		starts   [maxWindowLimit]int    // where each of those components starts
		n        int                    // components seen
		h        = uint64(pathSeed0)
	)
	i := 1
	for i < len(p) {
		j := i
		upper := false
		for j < len(p) && p[j] != '/' {
			if c := p[j]; 'A' <= c && c <= 'Z' {
				upper = true
			}
			j++
		}
		comp := p[i:j]
		ch := ix.hashComp(comp)
		h = mix(h, ch)
		ix.visitPrefix(h, p[:j], p, m)

		if len(comp) <= maxName {
			lch := ch
			if upper {
				for k := 0; k < len(comp); k++ {
					c := comp[k]
					if 'A' <= c && c <= 'Z' {
						c += 'a' - 'A'
					}
					lowerBuf[k] = c
				}
				lch = maphash.Bytes(ix.seed, lowerBuf[:len(comp)])
			}
			slot := n % maxWindowLimit
			ring[slot] = lch
			starts[slot] = i
			n++
			if len(ix.names) > 0 {
				ix.visitWindows(p[:j], &ring, &starts, n, m)
			}
			if ix.hasGlobNames {
				var lb []byte
				if upper {
					lb = lowerBuf[:len(comp)]
				}
				ix.visitGlobs(comp, lb, m)
			}
		} else {
			n = 0 // a component too long to match breaks every window
		}
		i = j + 1
	}
}

func (ix *pathIndex) visitPrefix(h uint64, prefix, full string, m *match) {
	t := &ix.prefixTable
	if len(t.keys) == 0 {
		return
	}
	h = nonZero(h)
	for s := t.first(h); t.keys[s] != 0; s = (s + 1) & t.mask {
		if t.keys[s] != h {
			continue
		}
		e := &ix.prefixes[t.vals[s]]
		if e.path != prefix {
			continue
		}
		if e.write != nil {
			m.write = e.write
			m.writeExact = len(prefix) == len(full) || prefix == full
		}
		if e.read != nil {
			m.read = e.read
		}
		if e.readDeny != nil && m.readDeny == nil {
			m.readDeny = e.readDeny
		}
		if e.writeDeny != nil && m.writeDeny == nil {
			m.writeDeny = e.writeDeny
		}
	}
}

// visitWindows looks up the windows of 1..maxWindow components ending at the
// component just seen (the end of upto).
func (ix *pathIndex) visitWindows(upto string, ring *[maxWindowLimit]uint64, starts *[maxWindowLimit]int, n int, m *match) {
	var hs [maxWindowLimit]uint64
	for k := 1; k <= ix.maxWindow && k <= n; k++ {
		// hs[0..k) are the last k components, oldest first.
		for x := 0; x < k; x++ {
			hs[x] = ring[(n-k+x)%maxWindowLimit]
		}
		wh := nonZero(windowHash(hs[:k]))
		start := starts[(n-k)%maxWindowLimit]
		window := upto[start:]
		t := &ix.nameTable
		for s := t.first(wh); t.keys[s] != 0; s = (s + 1) & t.mask {
			if t.keys[s] != wh {
				continue
			}
			e := &ix.names[t.vals[s]]
			if !equalFoldASCII(window, e.text) {
				continue
			}
			if e.readDeny != nil && m.readDeny == nil {
				m.readDeny = e.readDeny
			}
			if e.writeDeny != nil && m.writeDeny == nil {
				m.writeDeny = e.writeDeny
			}
		}
	}
}

func (ix *pathIndex) visitGlobs(comp string, lower []byte, m *match) {
	for l := 1; l <= len(comp); l++ {
		if ix.prefixLens[l/64]&(1<<(l%64)) != 0 {
			ix.visitGlob(&ix.globPrefixT, ix.globPrefix, comp[:l], lowerSub(lower, 0, l), m)
		}
		if ix.suffixLens[l/64]&(1<<(l%64)) != 0 {
			ix.visitGlob(&ix.globSuffixT, ix.globSuffix, comp[len(comp)-l:], lowerSub(lower, len(comp)-l, len(comp)), m)
		}
	}
}

func lowerSub(b []byte, i, j int) []byte {
	if b == nil {
		return nil
	}
	return b[i:j]
}

func (ix *pathIndex) visitGlob(t *hashTable, entries []nameEntry, part string, lower []byte, m *match) {
	if len(t.keys) == 0 {
		return
	}
	var h uint64
	if lower != nil {
		h = maphash.Bytes(ix.seed, lower)
	} else {
		h = ix.hashComp(part)
	}
	h = nonZero(h)
	for s := t.first(h); t.keys[s] != 0; s = (s + 1) & t.mask {
		if t.keys[s] != h {
			continue
		}
		e := &entries[t.vals[s]]
		if !equalFoldASCII(part, e.text) {
			continue
		}
		if e.readDeny != nil && m.readDeny == nil {
			m.readDeny = e.readDeny
		}
		if e.writeDeny != nil && m.writeDeny == nil {
			m.writeDeny = e.writeDeny
		}
	}
}

// equalFoldASCII compares s with the already case-folded t.
func equalFoldASCII(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != t[i] {
			return false
		}
	}
	return true
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
