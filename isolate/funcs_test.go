package isolate_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/isolate"
	"github.com/auditguard/auditguard/netguard"
)

// The functions the tests call, registered in init as the package doc
// asks: the test binary is also the child.

type WriteIn struct {
	Root string // a write root of the caller's policy
}

// WriteOut says what each attempt gave ("" for success).
type WriteOut struct {
	GuardedOutside, GuardedHook string // through fsguard
	RawOutside, RawHook         string // straight through os
	InsideOK                    bool
}

type ForkOut struct {
	Started  int
	FirstErr string
}

type DialOut struct {
	Guarded, Raw string
}

type Bad struct{ F float64 }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// typedAdd is registered as a package-level variable, the other way to
// register before main.
var typedAdd = isolate.MustRegister("typed-add", func(ctx context.Context, in [2]int) (int, error) {
	return in[0] + in[1], nil
})

func init() {
	isolate.MustRegister("echo", func(ctx context.Context, s string) (string, error) {
		return "echo: " + s, nil
	})
	isolate.MustRegister("fail", func(ctx context.Context, s string) (string, error) {
		return "", errors.New("no luck with " + s)
	})
	isolate.MustRegister("panic", func(ctx context.Context, s string) (string, error) {
		panic("boom: " + s)
	})
	isolate.MustRegister("panic-goroutine", func(ctx context.Context, s string) (string, error) {
		go func() { panic("background boom") }()
		time.Sleep(time.Minute)
		return "", nil
	})
	isolate.MustRegister("spin", func(ctx context.Context, _ struct{}) (int, error) {
		n := 0
		for {
			n++
		}
	})
	isolate.MustRegister("sleep", func(ctx context.Context, d time.Duration) (struct{}, error) {
		fmt.Println("sleeping") // tells the test the call runs
		time.Sleep(d)
		return struct{}{}, nil
	})
	isolate.MustRegister("hog", func(ctx context.Context, mib int) (int, error) {
		var keep [][]byte
		for i := range mib {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = byte(i) // touch every page, so it is charged
			}
			keep = append(keep, b)
		}
		return len(keep), nil
	})
	isolate.MustRegister("fork", func(ctx context.Context, n int) (ForkOut, error) {
		// An over-eager tool: n background processes straight through
		// os/exec, nothing waits for them.
		var out ForkOut
		for range n {
			c := exec.Command("/bin/sleep", "60")
			if err := c.Start(); err != nil {
				if out.FirstErr == "" {
					out.FirstErr = err.Error()
				}
				continue
			}
			out.Started++
		}
		return out, nil
	})
	isolate.MustRegister("write", func(ctx context.Context, in WriteIn) (WriteOut, error) {
		fsys := fsguard.New(ctx, afero.NewOsFs())
		hook := filepath.Join(in.Root, "repo/.git/hooks/pre-commit")
		outside := filepath.Join(os.TempDir(), "isolate-outside-"+fmt.Sprint(os.Getpid()))
		var out WriteOut
		out.GuardedOutside = errText(afero.WriteFile(fsys, "/etc/isolate-test", []byte("x"), 0o644))
		out.GuardedHook = errText(afero.WriteFile(fsys, hook, []byte("evil"), 0o755))
		out.RawOutside = errText(os.WriteFile(outside, []byte("x"), 0o644))
		out.RawHook = errText(os.WriteFile(hook, []byte("evil"), 0o755))
		out.InsideOK = afero.WriteFile(fsys, filepath.Join(in.Root, "ok.txt"), []byte("fine"), 0o644) == nil
		return out, nil
	})
	isolate.MustRegister("dial", func(ctx context.Context, addr string) (DialOut, error) {
		var out DialOut
		d := &netguard.Dialer{}
		c, err := d.DialContext(ctx, "tcp", addr)
		if c != nil {
			c.Close()
		}
		out.Guarded = errText(err)
		raw, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if raw != nil {
			raw.Close()
		}
		out.Raw = errText(err)
		return out, nil
	})
	isolate.MustRegister("denied", func(ctx context.Context, path string) (string, error) {
		fsys := fsguard.New(ctx, afero.NewOsFs())
		return "", afero.WriteFile(fsys, path, []byte("x"), 0o644)
	})
	isolate.MustRegister("print", func(ctx context.Context, s string) (string, error) {
		fmt.Println("to stdout:", s)
		fmt.Fprintln(os.Stderr, "to stderr:", s)
		return "printed", nil
	})
	isolate.MustRegister("exit", func(ctx context.Context, code int) (string, error) {
		os.Exit(code)
		return "", nil
	})
	isolate.MustRegister("kill-self", func(ctx context.Context, _ struct{}) (string, error) {
		if self, err := os.FindProcess(os.Getpid()); err == nil {
			_ = self.Kill() // SIGKILL on Unix
		}
		time.Sleep(time.Minute)
		return "", nil
	})
	isolate.MustRegister("nan", func(ctx context.Context, _ struct{}) (Bad, error) {
		return Bad{F: math.NaN()}, nil
	})
}
