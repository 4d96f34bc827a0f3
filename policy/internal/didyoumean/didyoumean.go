// Package didyoumean finds the likely intended word for a misspelt one:
// the closest candidate by optimal-string-alignment distance, when it is
// close enough to be a typo. The policy core uses it for profile names, the
// policy file format for keys and values.
package didyoumean

import "strings"

// Closest returns the candidate closest to word, or "" when none is close
// enough to be a likely typo. Case is ignored, and so are '-' versus '_'
// ("write-roots" finds "write_roots"). Ties go to the earlier candidate.
func Closest(word string, candidates []string) string {
	w := Normalize(word)
	best, bestD := "", -1
	for _, c := range candidates {
		d := osaDistance(w, Normalize(c))
		if d > maxTypos(len(w), len(c)) {
			continue
		}
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// maxTypos is how many edits still count as a typo: one for short words, a
// third of the shorter word's length for longer ones.
func maxTypos(a, b int) int {
	n := min(a, b)
	if n <= 4 {
		return 1
	}
	return max(2, n/3)
}

// Normalize is the form words are compared in: lower case, '-' as '_'.
func Normalize(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "-", "_")
}

// osaDistance is the optimal-string-alignment distance between a and b:
// insertions, deletions, substitutions and swaps of two adjacent bytes each
// cost one.
func osaDistance(a, b string) int {
	if a == b {
		return 0
	}
	// Three rolling rows: i-2, i-1, i.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
