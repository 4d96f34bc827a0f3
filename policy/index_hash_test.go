package policy

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestScanComponentHashesAsHashFold: the walk hashes a component in the
// pass that finds its end, reading words that straddle separators or the
// end of the path; the index is built with hashFold on the component
// alone. Both must agree wherever the component sits, and find its end.
func TestScanComponentHashesAsHashFold(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 16))
	const alpha = "aZ.-_/é\x7f@`"
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		p := "/" + string(b)
		for i := 1; i < len(p); {
			j, h := scanComponent(p, i)
			want := strings.IndexByte(p[i:], '/')
			if want < 0 {
				want = len(p)
			} else {
				want += i
			}
			if j != want {
				t.Fatalf("scanComponent(%q, %d) ends at %d, want %d", p, i, j, want)
			}
			if hf := hashFold(p[i:j]); h != hf {
				t.Fatalf("scanComponent(%q, %d) hashes %q to %#x, hashFold to %#x", p, i, p[i:j], h, hf)
			}
			if hf, hu := hashFold(p[i:j]), hashFold(upperASCII(p[i:j])); hf != hu {
				t.Fatalf("hashFold(%q) differs by case", p[i:j])
			}
			i = j + 1
		}
	}
}

func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}
