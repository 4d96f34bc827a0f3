package procguard

import (
	"bytes"
	"io"
	"sync"
)

// capWriter passes at most limit bytes to w and drops the rest while
// reporting full writes, so the child is never blocked on a full pipe.
type capWriter struct {
	mu        sync.Mutex
	w         io.Writer
	limit     int64
	n         int64
	truncated bool
	err       error // first error from w; later bytes are drained
}

func (c *capWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := 0
	if c.err == nil && c.n < c.limit {
		keep := p
		if int64(len(keep)) > c.limit-c.n {
			keep = keep[:c.limit-c.n]
		}
		m, err := c.w.Write(keep)
		c.n += int64(m)
		kept = m
		if err != nil {
			c.err = err
		}
	}
	if kept < len(p) {
		c.truncated = true
	}
	return len(p), nil
}

// Truncated reports whether bytes were dropped.
func (c *capWriter) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.truncated
}

// safeBuffer is a bytes.Buffer safe for the two copy goroutines of
// CombinedOutput.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}
