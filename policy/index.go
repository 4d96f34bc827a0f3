package policy

import (
	"math/bits"
	"strings"
)

// The path index answers, in one pass over a resolved path and without
// allocating, which roots contain it and which deny entries match it. Its cost
// depends on the path's length and depth, never on how many entries exist:
//
//   - absolute entries (roots, "/etc/shadow", "~/.ssh") live in a hash table
//     keyed by a hash of their components, built so that the hash of every
//     ancestor of the path falls out of the walk for free;
//   - name patterns (".bashrc", ".git/hooks", ".env.*", "*.pem") live in tables
//     keyed by the hash of a window of trailing components, or of a
//     component's prefix or suffix for the two glob forms.
//
// Components are hashed once, case-folded (ASCII), eight bytes at a time.
// Every table hit is confirmed by comparing strings (exactly for absolute
// entries, case-insensitively for names), so neither a hash collision nor
// case folding can make a rule match a path it does not name.

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

const (
	hashK1    = 0x9E3779B97F4A7C15
	hashK2    = 0xC2B2AE3D27D4EB4F
	pathSeed0 = 0x243F6A8885A308D3 // the hash of "/" (no components)
	winSeed   = 0x13198A2E03707344
)

func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// mix folds a component hash into a running hash. It is not commutative,
// so "/a/b" and "/b/a" differ.
func mix(acc, h uint64) uint64 { return mum(acc^h, hashK1) }

// foldWord lowers the ASCII upper-case letters among eight packed bytes.
func foldWord(x uint64) uint64 {
	const ones = 0x0101010101010101
	const high = ones * 0x80
	y := x &^ high
	ge := y + ones*(0x80-'A')   // bit 7 set where the byte is >= 'A'
	gt := y + ones*(0x80-'Z'-1) // bit 7 set where the byte is > 'Z'
	upper := ge &^ gt &^ x & high
	return x | upper>>2 // 0x80>>2 == 0x20, the case bit
}

// le64 packs the first eight bytes of s, little-endian. The compiler turns
// it into one load.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// hashRange hashes p[i:j] case-insensitively (ASCII), eight bytes at a
// time. The tail is read as one word from p when p is long enough, with the
// bytes past j masked off.
func hashRange(p string, i, j int) uint64 {
	h := uint64(j-i) * hashK2
	for ; i+8 <= j; i += 8 {
		h = mum(h^foldWord(le64(p[i:])), hashK1)
	}
	if i < j {
		var w uint64
		switch {
		case i+8 <= len(p):
			w = le64(p[i:])
		case len(p) >= 8:
			w = le64(p[len(p)-8:]) >> (8 * (i + 8 - len(p)))
		default:
			for k := i; k < len(p); k++ {
				w |= uint64(p[k]) << (8 * (k - i))
			}
		}
		w &= 1<<(8*(j-i)) - 1
		h = mum(h^foldWord(w), hashK1)
	}
	return h
}

// hashFold hashes s case-insensitively (ASCII).
func hashFold(s string) uint64 { return hashRange(s, 0, len(s)) }

// byteSet is a set of byte values, used to skip lookups that cannot hit.
type byteSet [4]uint64

func (b *byteSet) add(c byte)      { b[c>>6] |= 1 << (c & 63) }
func (b *byteSet) has(c byte) bool { return b[c>>6]&(1<<(c&63)) != 0 }
func foldByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// windowHash folds component hashes of a window, oldest first. A window of
// one component hashes as the component itself.
func windowHash(hs []uint64) uint64 {
	if len(hs) == 1 {
		return hs[0]
	}
	h := uint64(winSeed)
	for _, c := range hs {
		h = mix(h, c)
	}
	return h
}

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
	prefixDepth int // components of the deepest absolute entry
	prefixes    []prefixEntry
	prefixTable hashTable
	names       []nameEntry
	nameTable   hashTable // exact windows of 1..maxWindow components
	maxWindow   int
	globPrefix  []nameEntry // "name*"
	globPrefixT hashTable
	prefixLens  []int       // distinct literal lengths of "name*", ascending
	globSuffix  []nameEntry // "*name"
	globSuffixT hashTable
	suffixLens  []int
	// Filters that skip most lookups: the folded first byte of every
	// "name*" literal, the folded last byte of every "*name" literal, and
	// the top byte of the hash of every multi-component pattern's first
	// component.
	prefixFirst, suffixLast, windowHeads byteSet
}

// match collects what one walk found.
type match struct {
	write, read         *Rule // deepest containing roots
	writeExact          bool  // the path is itself a write root
	readDeny, writeDeny *Rule
}

// pathHash returns the prefix hash of a clean absolute path.
func pathHash(p string) uint64 {
	h := uint64(pathSeed0)
	for rest := p; ; {
		var c string
		c, rest = nextComponent(rest)
		if c == "" {
			return h
		}
		h = mix(h, hashFold(c))
	}
}

const maxName = 255 // NAME_MAX: longer components cannot match a pattern

// walk visits every ancestor of the clean absolute path p and every window
// of its trailing components, recording the matches in m.
func (ix *pathIndex) walk(p string, m *match) {
	ix.visitPrefix(pathSeed0, "/", len(p) == 1, m)
	var (
		ring   [maxWindowLimit]uint64 // hashes of the last components
		starts [maxWindowLimit]int    // where each of those components starts
		n      int                    // components seen, for windows
		depth  int                    // components seen
		h      = uint64(pathSeed0)
	)
	windows := len(ix.names) > 0
	globs := len(ix.prefixLens)+len(ix.suffixLens) > 0
	for i := 1; i < len(p); {
		j := len(p)
		if k := strings.IndexByte(p[i:], '/'); k >= 0 {
			j = i + k
		}
		comp := p[i:j]
		ch := hashRange(p, i, j)
		if depth++; depth <= ix.prefixDepth {
			h = mix(h, ch)
			ix.visitPrefix(h, p[:j], j == len(p), m)
		}
		if len(comp) <= maxName {
			slot := n & (maxWindowLimit - 1)
			ring[slot] = ch
			starts[slot] = i
			n++
			if windows {
				ix.probeNames(&ix.nameTable, ix.names, ch, comp, m)
				if ix.maxWindow > 1 && n > 1 {
					ix.visitWindows(p[:j], &ring, &starts, n, m)
				}
			}
			if globs {
				ix.visitGlobs(comp, m)
			}
		} else {
			n = 0 // a component too long to match breaks every window
		}
		i = j + 1
	}
}

func (ix *pathIndex) visitPrefix(h uint64, prefix string, last bool, m *match) {
	t := &ix.prefixTable
	h = nonZero(h)
	for s := h & t.mask; t.keys[s] != 0; s = (s + 1) & t.mask {
		if t.keys[s] != h {
			continue
		}
		e := &ix.prefixes[t.vals[s]]
		if e.path != prefix {
			continue
		}
		if e.write != nil {
			m.write = e.write
			m.writeExact = last
		}
		if e.read != nil {
			m.read = e.read
		}
		setOnce(&m.readDeny, e.readDeny)
		setOnce(&m.writeDeny, e.writeDeny)
	}
}

// visitWindows looks up the windows of 2..maxWindow components ending at the
// component just seen (the end of upto).
func (ix *pathIndex) visitWindows(upto string, ring *[maxWindowLimit]uint64, starts *[maxWindowLimit]int, n int, m *match) {
	const mask = maxWindowLimit - 1
	for k := 2; k <= ix.maxWindow && k <= n; k++ {
		if !ix.windowHeads.has(byte(ring[(n-k)&mask] >> 56)) {
			continue
		}
		wh := uint64(winSeed)
		for x := n - k; x < n; x++ {
			wh = mix(wh, ring[x&mask])
		}
		ix.probeNames(&ix.nameTable, ix.names, wh, upto[starts[(n-k)&mask]:], m)
	}
}

func (ix *pathIndex) visitGlobs(comp string, m *match) {
	if len(comp) == 0 {
		return
	}
	if ix.prefixFirst.has(foldByte(comp[0])) {
		ix.visitGlobPrefixes(comp, m)
	}
	if ix.suffixLast.has(foldByte(comp[len(comp)-1])) {
		ix.visitGlobSuffixes(comp, m)
	}
}

func (ix *pathIndex) visitGlobPrefixes(comp string, m *match) {
	for _, l := range ix.prefixLens {
		if l > len(comp) {
			break
		}
		part := comp[:l]
		ix.probeNames(&ix.globPrefixT, ix.globPrefix, hashFold(part), part, m)
	}
}

func (ix *pathIndex) visitGlobSuffixes(comp string, m *match) {
	for _, l := range ix.suffixLens {
		if l > len(comp) {
			break
		}
		part := comp[len(comp)-l:]
		ix.probeNames(&ix.globSuffixT, ix.globSuffix, hashFold(part), part, m)
	}
}

// probeNames records the name entries of t that hash to h and equal text,
// ignoring ASCII case.
func (ix *pathIndex) probeNames(t *hashTable, entries []nameEntry, h uint64, text string, m *match) {
	h = nonZero(h)
	for s := h & t.mask; t.keys[s] != 0; s = (s + 1) & t.mask {
		if t.keys[s] != h {
			continue
		}
		e := &entries[t.vals[s]]
		if !equalFoldASCII(text, e.text) {
			continue
		}
		setOnce(&m.readDeny, e.readDeny)
		setOnce(&m.writeDeny, e.writeDeny)
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
