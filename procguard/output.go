package procguard

import (
	"errors"
	"io"
	"strconv"
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

// safeBuffer collects Output and CombinedOutput, safe for their two copy
// goroutines. Its capacity never grows past limit (the policy's output
// cap, set by Start), and Bytes hands over the slice without a copy, so
// the memory held stays about the cap: bytes.Buffer's doubling plus a
// clone held up to four times as much.
type safeBuffer struct {
	mu    sync.Mutex
	b     []byte
	limit int64 // 0: no cap known
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if need := len(s.b) + len(p); need > cap(s.b) {
		c := max(2*cap(s.b), need, 512)
		if s.limit > 0 && int64(c) > s.limit && int64(need) <= s.limit {
			c = int(s.limit)
		}
		nb := make([]byte, len(s.b), c)
		copy(nb, s.b)
		s.b = nb
	}
	s.b = append(s.b, p...)
	return len(p), nil
}

// Bytes returns what was written; call it once the writers are done.
func (s *safeBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b
}

// TruncatedError is returned by Output and CombinedOutput when a stream
// passed the policy's OutputLimit: the bytes returned are the first Limit
// bytes, the rest was drained and dropped. The command itself succeeded.
type TruncatedError struct {
	Stream string // "stdout", "stderr" or "output"
	Limit  int64
}

func (e *TruncatedError) Error() string {
	return "procguard: " + e.Stream + " cut at the output limit of " + strconv.FormatInt(e.Limit, 10) + " bytes (ExecSpec.OutputLimit)"
}

// ErrTruncated matches every *TruncatedError with errors.Is.
var ErrTruncated = errors.New("procguard: output truncated")

func (e *TruncatedError) Is(target error) bool { return target == ErrTruncated }
