package policy

import (
	"math/bits"
)

// The path index answers, in one pass over a resolved path and without
// allocating, which roots contain it and which deny entries match it. Its cost
// depends on the path's length and depth, never on how many entries exist:
//
//   - absolute entries (roots, "/etc/shadow", "~/.ssh") live in a hash table
//     keyed by a hash of their components, built so that the hash of every
//     ancestor of the path falls out of the walk for free, and probed only
//     at the depths where some entry exists;
//   - names (".bashrc", ".git/hooks") live in a hash table keyed by the hash
//     of a window of trailing components;
//   - globs (".env.*", "*.pem") live in two tries of their literal parts,
//     walked from a component's first byte (prefix globs) or from its last
//     (suffix globs): one step per byte the component shares with some
//     literal, whatever the number of globs or of their lengths.
//
// Each component is hashed once, eight bytes per multiplication, in the same
// pass that finds the separator ending it, with a fold that maps upper-case
// ASCII letters onto lower-case ones (and a few other pairs of bytes onto
// each other). Every hash hit is confirmed by comparing strings (exactly for
// absolute entries, ignoring ASCII case for names), so neither a hash
// collision nor the fold can make a rule match a path it does not name; the
// tries compare bytes as they go. Filters in front of the tables (a Bloom
// filter for one-component names, a byte set for window heads and glob ends,
// the depths that hold absolute entries) skip most lookups that cannot hit.
//
// Precedence, when several entries match (index_ref_test.go checks it
// against a plain matcher): the deepest write root and the deepest read
// root; for deny entries the first found, walking components from the top,
// and within one component the absolute entry ending there, then the names
// ending there from one component up, then prefix globs from the shortest
// literal up, then suffix globs likewise.

// hashSlot is one slot of a hashTable: a hash and the entry it leads to.
type hashSlot struct {
	key uint64 // 0 marks an empty slot
	val int32
}

// hashTable maps 64-bit hashes to entry indexes with open addressing.
// Several entries may share a hash; lookups visit them all.
type hashTable struct {
	slots []hashSlot
	mask  uint64
}

func newHashTable(n int) hashTable {
	size := 8
	for size < 2*n {
		size <<= 1
	}
	return hashTable{slots: make([]hashSlot, size), mask: uint64(size - 1)}
}

func nonZero(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

// mayHold reports whether h may be in the table: false when its first
// slot is empty, the common case of a miss. Inlined, it saves the call.
func (t *hashTable) mayHold(h uint64) bool {
	return t.slots[nonZero(h)&t.mask].key != 0
}

func (t *hashTable) insert(h uint64, v int32) {
	h = nonZero(h)
	i := h & t.mask
	for t.slots[i].key != 0 {
		i = (i + 1) & t.mask
	}
	t.slots[i] = hashSlot{h, v}
}

const (
	hashK1    = 0x9E3779B97F4A7C15
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

const (
	ones = 0x0101010101010101
	high = ones * 0x80
)

// slashes marks the '/' bytes among eight packed bytes: the lowest marked
// byte is the first '/' (marks above a true one may be spurious).
func slashes(x uint64) uint64 {
	y := x ^ ones*'/'
	return (y - ones) &^ y & high
}

// le64 packs the first eight bytes of s, little-endian. The compiler turns
// it into one load.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// tail packs p[i:] (fewer than eight bytes), zero-padded. Where p is long
// enough it is one load that ends at the end of p, shifted down.
func tail(p string, i int) uint64 {
	if len(p) >= 8 {
		// A shift by 64 (i == len(p)) gives zero.
		return le64(p[len(p)-8:]) >> (8 * (i + 8 - len(p)))
	}
	return tailShort(p, i)
}

// tailShort packs p[i:] when p is shorter than eight bytes.
func tailShort(p string, i int) uint64 {
	var w uint64
	for k := i; k < len(p); k++ {
		w |= uint64(p[k]) << (8 * (k - i))
	}
	return w
}

// Component hashes chain one multiplication per eight bytes, the last
// chunk zero-padded and always present (empty for a component whose length
// is a multiple of eight), so that the walk can hash a component in the
// pass that finds the separator ending it, and get what hashFold gets for
// the component alone. Bytes are folded by setting their 0x20 bit: coarser
// than ASCII case folding (it also pairs "_" with DEL, "@" with "`"), which
// costs at most a string comparison, and one instruction per eight bytes.
const compSeed = 0x452821E638D01377

func fold8(w uint64) uint64 { return w | ones*0x20 }

// hashFold hashes s, a component, case-insensitively (ASCII).
func hashFold(s string) uint64 {
	h := uint64(compSeed)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		h = mum(h^fold8(le64(s[i:])), hashK1)
	}
	return mum(h^fold8(tail(s, i)), hashK1)
}

// scanComponent finds the end j of the component that starts at i (the
// next '/' or the end of p) and hashes p[i:j] as hashFold does, eight bytes
// at a time. walk has it inlined by hand; tests use it.
func scanComponent(p string, i int) (j int, h uint64) {
	h = compSeed
	for j = i; ; j += 8 {
		var w uint64
		if j+8 <= len(p) {
			w = le64(p[j:])
		} else {
			w = tail(p, j)
		}
		if z := slashes(w); z != 0 {
			// z's lowest mark is bit 7 of the first '/': below it, the
			// component's bytes.
			low := z & -z
			return j + bits.TrailingZeros64(z)>>3, mum(h^fold8(w&(low>>7-1)), hashK1)
		}
		h = mum(h^fold8(w), hashK1)
		if j+8 > len(p) {
			return len(p), h
		}
	}
}

// bloom is a one-hash Bloom filter over the top bits of 64-bit hashes,
// sized to sixteen bits per key: a component that is nobody's name passes
// it about once in sixteen, and skips the table otherwise.
type bloom struct {
	bits  []uint64
	shift uint // 64 - log2(len(bits)*64)
}

func newBloom(n int) bloom {
	words := 8
	for words*64 < 16*n && words < 1<<14 {
		words <<= 1
	}
	return bloom{bits: make([]uint64, words), shift: uint(64 - bits.TrailingZeros(uint(words*64)))}
}

func (b *bloom) add(h uint64) {
	x := h >> b.shift
	b.bits[x>>6] |= 1 << (x & 63)
}

func (b *bloom) has(h uint64) bool {
	x := h >> b.shift
	return b.bits[x>>6]&(1<<(x&63)) != 0
}

// byteSet is a set of byte values, used to skip lookups that cannot hit.
type byteSet [4]uint64

func (b *byteSet) add(c byte)      { b[c>>6] |= 1 << (c & 63) }
func (b *byteSet) has(c byte) bool { return b[c>>6]&(1<<(c&63)) != 0 }

// foldByte lowers an ASCII upper-case letter, as the names are stored.
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
	dep       bool // a dependency tree (protected.go)
}

// nameEntry is a name pattern: a window of one or more components, or the
// literal part of a single-component glob.
type nameEntry struct {
	text      string // case-folded; for globs, the literal part
	readDeny  *Rule
	writeDeny *Rule
	dep       bool // a dependency tree (protected.go)
}

// trie holds the literal parts of one kind of glob, byte by byte: from the
// first byte for prefix globs, from the last for suffix globs. A node's
// edges are sorted by byte.
type trie struct {
	nodes []trieNode
	edgeB []byte  // edge bytes, each node's in order
	edgeN []int32 // the node each edge leads to
}

type trieNode struct {
	lo, hi    int32 // the node's edges: edgeB[lo:hi]
	readDeny  *Rule // the rules of the literal that ends here, if any
	writeDeny *Rule
}

// child returns the node reached from n by the (folded) byte c, or -1.
func (t *trie) child(n int32, c byte) int32 {
	nd := &t.nodes[n]
	lo, hi := nd.lo, nd.hi
	if hi-lo > 8 {
		for lo < hi {
			mid := int32(uint32(lo+hi) >> 1)
			if t.edgeB[mid] < c {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if lo < nd.hi && t.edgeB[lo] == c {
			return t.edgeN[lo]
		}
		return -1
	}
	for e := lo; e < hi; e++ {
		if t.edgeB[e] == c {
			return t.edgeN[e]
		}
	}
	return -1
}

// visitPrefixes records the prefix globs whose literal starts comp.
func (t *trie) visitPrefixes(comp string, depth int, m *match) {
	n := int32(0)
	for i := 0; i < len(comp); i++ {
		if n = t.child(n, foldByte(comp[i])); n < 0 {
			return
		}
		nd := &t.nodes[n]
		setOnce(&m.readDeny, nd.readDeny)
		m.denyWrite(nd.writeDeny, depth)
	}
}

// visitSuffixes records the suffix globs whose literal ends comp.
func (t *trie) visitSuffixes(comp string, depth int, m *match) {
	n := int32(0)
	for i := len(comp) - 1; i >= 0; i-- {
		if n = t.child(n, foldByte(comp[i])); n < 0 {
			return
		}
		nd := &t.nodes[n]
		setOnce(&m.readDeny, nd.readDeny)
		m.denyWrite(nd.writeDeny, depth)
	}
}

type pathIndex struct {
	prefixDepth int // components of the deepest absolute entry
	// prefixAt has bit d set when an absolute entry has d components
	// (bit 63 stands for 63 and more): the walk probes only there.
	prefixAt    uint64
	prefixes    []prefixEntry
	prefixTable hashTable
	names       []nameEntry
	nameTable   hashTable // exact windows of 1..maxWindow components
	oneNames    bloom     // the hashes of the one-component names
	maxWindow   int
	globPrefix  []nameEntry // "name*", as collected
	globSuffix  []nameEntry // "*name"
	prefixTrie  trie        // built from globPrefix
	suffixTrie  trie        // built from globSuffix, literals reversed
	// globEnds skips most trie walks: globStarts marks the bytes (both
	// cases) that start a prefix glob's literal, globFinishes those that
	// end a suffix glob's.
	globEnds [256]uint8
	// windowHeads filters windows: the top byte of the hash of every
	// multi-component pattern's first component.
	windowHeads byteSet
	// git: the walk notes the first ".git" component (gitmeta.go).
	git bool
}

const (
	globStarts   = 1 << iota // in pathIndex.globEnds
	globFinishes             //
)

// match collects what one walk found.
type match struct {
	write, read         *Rule  // deepest containing roots
	writeRoot, readRoot string // their spellings that matched (prefixes of the path)
	writeExact          bool   // the path is itself a write root
	readDeny, writeDeny *Rule
	// depAt is the depth (components from "/") of the component that ends
	// the first dependency tree on the path, 0 when none: credential-class
	// entries matched deeper do not apply.
	depAt int
	// gitEnd is where the first ".git" component of the path ends (an
	// index into the path), 0 when it has none or the walk does not look.
	gitEnd int
}

// denyWrite records r, a protected entry's rule that matched a component
// at depth, as the write denial, unless one was recorded already or r is
// a credential inside a dependency tree (ended above depth).
func (m *match) denyWrite(r *Rule, depth int) {
	if r == nil || m.writeDeny != nil {
		return
	}
	if r.Class == ClassCredential && m.depAt != 0 && m.depAt < depth {
		return
	}
	m.writeDeny = r
}

// gitHash is hashFold(".git"), which the walk compares each component's
// hash with when the index looks for git metadata.
var gitHash = hashFold(GitEntry)

// depthBit is the bit of prefixAt for depth d.
func depthBit(d int) uint64 { return 1 << min(d, 63) }

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
// of its trailing components, recording the matches in m. It is the hot
// path of every filesystem decision: the component scan and the filters
// that skip most lookups are written out here rather than called.
func (ix *pathIndex) walk(p string, m *match) {
	if ix.prefixAt&1 != 0 {
		ix.visitPrefix(pathSeed0, "/", len(p) == 1, 0, m)
	}
	var (
		ring   [maxWindowLimit]uint64 // hashes of the last components
		starts [maxWindowLimit]int    // where each of those components starts
		n      int                    // components seen, for windows
		depth  int                    // components seen
		h      = uint64(pathSeed0)
	)
	names := len(ix.names) > 0
	for i := 1; i < len(p); {
		// scanComponent, by hand.
		j, ch := i, uint64(compSeed)
		for {
			var w uint64
			if j+8 <= len(p) {
				w = le64(p[j:])
			} else if len(p) >= 8 {
				w = le64(p[len(p)-8:]) >> (8 * (j + 8 - len(p)))
			} else {
				w = tailShort(p, j)
			}
			if z := slashes(w); z != 0 {
				low := z & -z
				ch = mum(ch^fold8(w&(low>>7-1)), hashK1)
				j += bits.TrailingZeros64(z) >> 3
				break
			}
			ch = mum(ch^fold8(w), hashK1)
			if j+8 > len(p) {
				j = len(p)
				break
			}
			j += 8
		}
		if depth++; depth <= ix.prefixDepth {
			h = mix(h, ch)
			if ix.prefixAt&depthBit(depth) != 0 && ix.prefixTable.mayHold(h) {
				ix.visitPrefix(h, p[:j], j == len(p), depth, m)
			}
		}
		if ix.git && ch == gitHash && j-i == len(GitEntry) && m.gitEnd == 0 && equalFoldASCII(p[i:j], GitEntry) {
			m.gitEnd = j
		}
		if j-i <= maxName {
			slot := n & (maxWindowLimit - 1)
			ring[slot] = ch
			starts[slot] = i
			n++
			if names {
				if ix.oneNames.has(ch) {
					ix.probeNames(ch, p[i:j], depth, m)
				}
				// Windows of two components are filtered here; longer
				// ones, rarer, in visitWindows.
				if n > 1 && (ix.maxWindow > 2 || ix.maxWindow == 2 && ix.windowHeads.has(byte(ring[(n-2)&(maxWindowLimit-1)]>>56))) {
					ix.visitWindows(p[:j], &ring, &starts, n, depth, m)
				}
			}
			if j > i {
				if ix.globEnds[p[i]]&globStarts != 0 {
					ix.prefixTrie.visitPrefixes(p[i:j], depth, m)
				}
				if ix.globEnds[p[j-1]]&globFinishes != 0 {
					ix.suffixTrie.visitSuffixes(p[i:j], depth, m)
				}
			}
		} else {
			n = 0 // a component too long to match breaks every window
		}
		i = j + 1
	}
}

func (ix *pathIndex) visitPrefix(h uint64, prefix string, last bool, depth int, m *match) {
	t := &ix.prefixTable
	h = nonZero(h)
	for s := h & t.mask; t.slots[s].key != 0; s = (s + 1) & t.mask {
		if t.slots[s].key != h {
			continue
		}
		e := &ix.prefixes[t.slots[s].val]
		if e.path != prefix {
			continue
		}
		if e.write != nil {
			m.write, m.writeRoot = e.write, e.path
			m.writeExact = last
		}
		if e.read != nil {
			m.read, m.readRoot = e.read, e.path
		}
		setOnce(&m.readDeny, e.readDeny)
		m.denyWrite(e.writeDeny, depth)
		if e.dep && m.depAt == 0 {
			m.depAt = depth
		}
	}
}

// visitWindows looks up the windows of 2..maxWindow components ending at the
// component just seen (the end of upto).
func (ix *pathIndex) visitWindows(upto string, ring *[maxWindowLimit]uint64, starts *[maxWindowLimit]int, n, depth int, m *match) {
	const mask = maxWindowLimit - 1
	for k := 2; k <= ix.maxWindow && k <= n; k++ {
		if !ix.windowHeads.has(byte(ring[(n-k)&mask] >> 56)) {
			continue
		}
		wh := uint64(winSeed)
		for x := n - k; x < n; x++ {
			wh = mix(wh, ring[x&mask])
		}
		ix.probeNames(wh, upto[starts[(n-k)&mask]:], depth, m)
	}
}

// probeNames records the name entries that hash to h and equal text,
// ignoring ASCII case; text ends the component at depth.
func (ix *pathIndex) probeNames(h uint64, text string, depth int, m *match) {
	t := &ix.nameTable
	h = nonZero(h)
	for s := h & t.mask; t.slots[s].key != 0; s = (s + 1) & t.mask {
		if t.slots[s].key != h {
			continue
		}
		e := &ix.names[t.slots[s].val]
		if !equalFoldASCII(text, e.text) {
			continue
		}
		setOnce(&m.readDeny, e.readDeny)
		m.denyWrite(e.writeDeny, depth)
		if e.dep && m.depAt == 0 {
			m.depAt = depth
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
