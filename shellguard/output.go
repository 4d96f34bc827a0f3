package shellguard

import (
	"io"
	"strconv"
	"sync"
)

// capBuffer keeps the first and the last bytes written to it, up to max in
// all, and counts what it dropped in between. It never blocks a writer and
// never fails a write, so a program past the cap keeps running and its
// pipe keeps draining. It is safe for concurrent use: a pipeline's stages
// and background jobs write to one stream at once.
type capBuffer struct {
	mu    sync.Mutex
	head  []byte // the first headMax bytes
	tail  []byte // a ring of the last len(tail) bytes once head is full
	next  int    // where the ring writes next
	full  bool   // the ring has wrapped
	total int64  // bytes written
	max   int
}

func newCapBuffer(max int) *capBuffer {
	return &capBuffer{max: max}
}

func (b *capBuffer) headMax() int { return b.max - b.max/2 }

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if room := b.headMax() - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	tailMax := b.max / 2
	if len(p) == 0 || tailMax == 0 {
		return n, nil
	}
	if len(p) >= tailMax {
		// Only the last tailMax bytes of p can survive.
		if cap(b.tail) < tailMax {
			b.tail = make([]byte, tailMax)
		}
		b.tail = b.tail[:tailMax]
		copy(b.tail, p[len(p)-tailMax:])
		b.next, b.full = 0, true
		return n, nil
	}
	for len(p) > 0 {
		if !b.full && len(b.tail) < tailMax {
			k := min(tailMax-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			if len(b.tail) == tailMax {
				b.full, b.next = true, 0
			}
			continue
		}
		k := copy(b.tail[b.next:], p)
		p = p[k:]
		b.next = (b.next + k) % tailMax
	}
	return n, nil
}

// result returns what was kept, with a line saying what was cut where the
// cut is, and how many bytes were cut.
func (b *capBuffer) result() (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := len(b.head) + len(b.tail)
	cut := int(b.total) - kept
	out := make([]byte, 0, kept+64)
	out = append(out, b.head...)
	if cut > 0 {
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		out = append(out, "[output truncated: "...)
		out = strconv.AppendInt(out, int64(cut), 10)
		out = append(out, " bytes omitted]\n"...)
	}
	if b.full {
		out = append(out, b.tail[b.next:]...)
		out = append(out, b.tail[:b.next]...)
	} else {
		out = append(out, b.tail...)
	}
	return string(out), cut
}

// switchWriter writes to whichever writer it currently points at. The
// interpreter keeps the writer it had at its first reset for process
// substitutions (>(cmd)); pointing that writer at each call's buffer
// sends their output to the call that runs them.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	w := s.w
	s.mu.Unlock()
	if w == nil {
		return len(p), nil
	}
	return w.Write(p)
}
