package shellguard

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// The cap keeps exactly the first and the last bytes, whatever the sizes
// of the writes, and says how many it cut.
func TestCapBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, max := range []int{1, 2, 7, 64, 1000} {
		for range 200 {
			b := newCapBuffer(max)
			var all bytes.Buffer
			for range rng.IntN(20) {
				p := make([]byte, rng.IntN(3*max+2))
				for i := range p {
					p[i] = byte('a' + rng.IntN(26))
				}
				if n, err := b.Write(p); n != len(p) || err != nil {
					t.Fatalf("Write: %d, %v", n, err)
				}
				all.Write(p)
			}
			got, cut := b.result()
			full := all.String()
			if len(full) <= max {
				if got != full || cut != 0 {
					t.Fatalf("max %d: %q (cut %d) for %q", max, got, cut, full)
				}
				continue
			}
			head, tail := full[:max-max/2], full[len(full)-max/2:]
			want := head
			if !strings.HasSuffix(want, "\n") && want != "" {
				want += "\n"
			}
			want += fmt.Sprintf("[output truncated: %d bytes omitted]\n", len(full)-max) + tail
			if got != want || cut != len(full)-max {
				t.Fatalf("max %d: got %q (cut %d)\nwant %q", max, got, cut, want)
			}
		}
	}
}

func TestCapBufferConcurrent(t *testing.T) {
	b := newCapBuffer(100)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				b.Write([]byte("0123456789"))
			}
		})
	}
	wg.Wait()
	got, cut := b.result()
	if cut != 40000-100 || !strings.Contains(got, "[output truncated: 39900 bytes omitted]") {
		t.Fatalf("cut %d: %q", cut, got)
	}
}
