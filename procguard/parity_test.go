package procguard_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

// lockedBuffer is a bytes.Buffer a copier writes and a test polls.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls out for want, failing after 20s.
func waitFor(t *testing.T, out *lockedBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out.String(), want); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %q", want, out.String())
		}
	}
}

// TestCancel: as with exec.Cmd, a Cancel runs instead of the kill when
// the context ends; a program that stops on it cleans up, one that does
// not is killed WaitDelay later. Each child is bounded by the command's
// timeout and its group is checked empty by Wait.
func TestCancel(t *testing.T) {
	e := setup(t, policy.ExecSpec{Rules: allow("sh", "sleep"), Timeout: 30 * time.Second}, pastArgv()...)
	for _, tc := range []struct {
		name   string
		script string
		want   string // in the output after the cancel
	}{
		{"stops on interrupt", `trap 'echo cleaned-up; exit 0' INT; echo ready; while :; do sleep 0.05; done`, "cleaned-up"},
		{"ignores interrupt", `trap '' INT; echo ready; while :; do sleep 0.05; done`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(e.ctx)
			defer cancel()
			c := procguard.CommandContext(ctx, "sh", "-c", tc.script)
			c.Dir = e.dir
			out := &lockedBuffer{}
			c.Stdout = out
			c.WaitDelay = 300 * time.Millisecond
			called := false
			c.Cancel = func() error {
				called = true
				return c.Process.Signal(os.Interrupt)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, out, "ready")
			t0 := time.Now()
			cancel()
			err := c.Wait()
			var ke *procguard.KilledError
			if !errors.As(err, &ke) || !errors.Is(err, context.Canceled) {
				t.Fatalf("Wait: %v, want a *KilledError for context.Canceled", err)
			}
			if !called {
				t.Error("Cancel was not called")
			}
			if tc.want != "" && !strings.Contains(out.String(), tc.want) {
				t.Errorf("output %q: the program did not get the interrupt", out.String())
			}
			if tc.want == "" && time.Since(t0) < c.WaitDelay {
				t.Errorf("killed after %v, before WaitDelay", time.Since(t0))
			}
		})
	}
}

// TestExtraFiles: the program finds ExtraFiles at 3, 4, ..., sandboxed or
// not.
func TestExtraFiles(t *testing.T) {
	for _, noSandbox := range []bool{false, true} {
		t.Run(map[bool]string{false: "sandbox", true: "landlock"}[noSandbox], func(t *testing.T) {
			e := setup(t, policy.ExecSpec{Rules: allow("sh", "cat"), NoSandbox: noSandbox}, pastArgv()...)
			pr, pw, err := os.Pipe()
			must(t, err)
			defer pr.Close()
			defer pw.Close()
			in, inW, err := os.Pipe()
			must(t, err)
			defer in.Close()
			_, err = inW.WriteString("through-fd-3")
			must(t, err)
			inW.Close()
			c := procguard.CommandContext(e.ctx, "sh", "-c", `cat <&3 >&4`)
			c.Dir = e.dir
			c.ExtraFiles = []*os.File{in, pw}
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			pw.Close()
			got, _ := io.ReadAll(pr)
			if string(got) != "through-fd-3" {
				t.Errorf("fd 4 got %q", got)
			}
		})
	}
}
