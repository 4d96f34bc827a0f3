package isolate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
)

// GoRun builds a Go module directory and runs the program, both in the
// sandbox. The build (go build, CGO_ENABLED=0) may write only to the build
// cache and a fresh output directory, may not read what the caller's
// policy read-denies, and gets no network unless every policy of the
// caller's scope allows dialing the module proxy the host's go command
// uses (the first URL of its GOPROXY), in which case it shares the host's
// network to fetch modules through that proxy only; otherwise GOPROXY=off
// and every dependency must be in the cache (or vendored). The program then
// runs in the sandbox built from the caller's guard scope, like a tool
// call: its writes, execs and dials are held by the kernel to the policy.
type GoRun struct {
	// Dir is the module directory (it has a go.mod); it is only read.
	Dir string
	// Args are the program's arguments.
	Args []string
	// Stdin is the program's standard input (nil: none).
	Stdin io.Reader
	// Cache is GOCACHE (and GOMODCACHE under it); empty means a directory
	// under os.TempDir() shared by this user's runs. It must not be inside
	// Dir.
	Cache string
	// Timeout bounds the run (DefaultTimeout when 0); BuildTimeout the
	// build (2 minutes when 0).
	Timeout, BuildTimeout time.Duration
	// Limits override the caller's exec limits for the run.
	Limits policy.ExecLimits
	// OutputLimit caps each of stdout and stderr (16 MiB when 0).
	OutputLimit int
}

// GoResult is what a generated program did.
type GoResult struct {
	Stdout, Stderr []byte
	// ExitCode is the program's exit code, -1 when a signal (Signal)
	// ended it.
	ExitCode int
	Signal   syscall.Signal
	// BuildOutput is what go build printed.
	BuildOutput []byte
	// Confinement is what was enforced on the run.
	Confinement procguard.Confinement
}

// BuildError is a build that failed; Output is the compiler's.
type BuildError struct {
	Output []byte
	Err    error
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("isolate: go build failed: %v\n%s", e.Err, e.Output)
}

func (e *BuildError) Unwrap() error { return e.Err }

// RunGo builds the Go module in dir and runs it with args, both sandboxed
// (see GoRun). A program that exits non-zero is a result, not an error;
// errors are a failed build (*BuildError), a kill by timeout or
// cancellation (*procguard.KilledError) and set-up failures.
func RunGo(ctx context.Context, dir string, args ...string) (*GoResult, error) {
	return (&GoRun{Dir: dir, Args: args}).Run(ctx)
}

// Run builds and runs the program.
func (r *GoRun) Run(ctx context.Context) (*GoResult, error) {
	scope := audit.From(ctx)
	if err := scope.Err(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(r.Dir)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return nil, err
	}
	goBin, goroot, err := findGo()
	if err != nil {
		return nil, err
	}
	cache := r.Cache
	if cache == "" {
		cache = filepath.Join(os.TempDir(), "auditguard-gocache-"+strconv.Itoa(os.Getuid()))
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return nil, err
	}
	if cache, err = filepath.EvalSymlinks(cache); err != nil {
		return nil, err
	}
	out, err := os.MkdirTemp("", "auditguard-rungo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(out)
	if out, err = filepath.EvalSymlinks(out); err != nil {
		return nil, err
	}
	res := &GoResult{}
	bin := filepath.Join(out, "prog")
	if res.BuildOutput, err = r.build(ctx, scope, goBin, goroot, dir, cache, out, bin); err != nil {
		return res, err
	}

	limit := r.OutputLimit
	if limit <= 0 {
		limit = 16 << 20
	}
	stdout, stderr := &capBuffer{max: limit}, &capBuffer{max: limit}
	pol := scope.Policies()[0]
	wd, _ := os.Getwd()
	env, _ := pol.ExecEnv(policy.ExecEnvInput{Host: os.Environ(), Home: firstNonEmpty(pol.Exec().Home, wd), Tmp: firstNonEmpty(pol.Exec().TmpDir, wd)})
	timeout := r.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	hp, err := procguard.StartHost(ctx, &procguard.HostCommand{
		Path: bin, Args: append([]string{filepath.Base(dir)}, r.Args...), Env: env,
		Stdin: r.Stdin, Stdout: stdout, Stderr: stderr, Timeout: timeout, Limits: r.Limits,
	})
	if err != nil {
		return res, err
	}
	werr := hp.Wait()
	res.Stdout, res.Stderr, res.Confinement = stdout.Bytes(), stderr.Bytes(), hp.Confinement
	res.Signal = hp.Signal
	res.ExitCode = -1
	if hp.ProcessState != nil && hp.Signal == 0 {
		res.ExitCode = hp.ProcessState.ExitCode()
	}
	var ke *procguard.KilledError
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ke):
		return res, werr
	case errors.As(werr, &ee), werr == nil:
		return res, nil
	}
	return res, werr
}

// build runs go build in a sandbox of its own: a guard whose only write
// roots are the cache and the output directory, with the caller's
// read-deny entries, the Go toolchain executable and the network only when
// the caller allows the module proxy. The caller's cancellation and scope
// release end it.
func (r *GoRun) build(ctx context.Context, scope *audit.Scope, goBin, goroot, dir, cache, out, bin string) ([]byte, error) {
	tmp := filepath.Join(out, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	spec := policy.Spec{WriteRoots: []string{cache, out}, Source: "isolate build",
		Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: goBin, Source: "isolate build"}}}}
	proxyURL, proxyHost, proxyPort := moduleProxy(goBin)
	proxy := proxyHost != ""
	for _, p := range scope.Policies() {
		spec.ReadDeny = append(spec.ReadDeny, p.FileSpec("").ReadDeny...)
		if proxy {
			if d := p.CheckNet(policy.OpConnect, "tcp", proxyHost, proxyPort, nil); !d.Allowed {
				proxy = false
			}
		}
	}
	env := []string{"PATH=" + filepath.Join(goroot, "bin") + ":/usr/bin:/bin", "HOME=" + out, "TMPDIR=" + tmp,
		"GOROOT=" + goroot, "GOCACHE=" + filepath.Join(cache, "build"), "GOMODCACHE=" + filepath.Join(cache, "mod"),
		"GOPATH=" + filepath.Join(cache, "gopath"), "GOTMPDIR=" + tmp, "CGO_ENABLED=0", "GOTOOLCHAIN=local",
		"GOTELEMETRY=off", "GOENV=off", "GOWORK=off", "GOFLAGS=-mod=mod"}
	if proxy {
		spec.Exec.HostNetwork = true
		env = append(env, "GOPROXY="+proxyURL)
	} else {
		env = append(env, "GOPROXY=off", "GOSUMDB=off")
	}
	pol, err := policy.New(spec)
	if err != nil {
		return nil, err
	}
	g, err := audit.New(pol, audit.WithLogger(discardLogger))
	if err != nil {
		return nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	go func() {
		select {
		case <-scope.Done():
			cancel()
		case <-base.Done():
		}
	}()
	bctx, release, err := g.Enter(base)
	if err != nil {
		return nil, err
	}
	defer release()
	timeout := r.BuildTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	var output bytes.Buffer
	hp, err := procguard.StartHost(bctx, &procguard.HostCommand{
		Path: goBin, Args: []string{"go", "build", "-trimpath", "-o", bin, "."}, Env: env, Dir: dir,
		Stdout: &output, Stderr: &output, Executable: []string{goroot}, Timeout: timeout,
		// The toolchain runs several compilers at once.
		Limits: policy.ExecLimits{Processes: 256},
	})
	if err != nil {
		return nil, err
	}
	if err := hp.Wait(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		}
		return output.Bytes(), &BuildError{Output: output.Bytes(), Err: err}
	}
	return output.Bytes(), nil
}

var discardLogger = slog.New(slog.DiscardHandler)

var (
	goOnce           sync.Once
	goBin, goRoot    string
	goErr            error
	errNoGoToolchain = errors.New("isolate: no Go toolchain found (go in PATH, or GOROOT/bin/go)")
)

// findGo finds the go command (GOROOT/bin/go, else go in PATH) and its
// GOROOT, symbolic links resolved.
func findGo() (string, string, error) {
	goOnce.Do(func() {
		cands := []string{}
		if r := os.Getenv("GOROOT"); r != "" {
			cands = append(cands, filepath.Join(r, "bin", "go"))
		}
		if p, err := exec.LookPath("go"); err == nil {
			cands = append(cands, p)
		}
		for _, c := range cands {
			real, err := filepath.EvalSymlinks(c)
			if err != nil {
				continue
			}
			root := filepath.Dir(filepath.Dir(real))
			if _, err := os.Stat(filepath.Join(root, "pkg", "tool")); err == nil {
				goBin, goRoot = real, root
				return
			}
		}
		goErr = errNoGoToolchain
	})
	return goBin, goRoot, goErr
}

var (
	proxyOnce           sync.Once
	proxyURL, proxyHost string
	proxyPort           uint16
)

// moduleProxy is the first proxy URL of the host's GOPROXY (the
// environment, else go env), with its host and port; empty when the host
// uses none ("direct", "off").
func moduleProxy(goBin string) (string, string, uint16) {
	proxyOnce.Do(func() {
		v := os.Getenv("GOPROXY")
		if v == "" {
			out, err := exec.Command(goBin, "env", "GOPROXY").Output()
			if err != nil {
				return
			}
			v = strings.TrimSpace(string(out))
		}
		first := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' })
		if len(first) == 0 {
			return
		}
		u, err := url.Parse(first[0])
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
			return
		}
		port := uint16(443)
		if u.Scheme == "http" {
			port = 80
		}
		if p := u.Port(); p != "" {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return
			}
			port = uint16(n)
		}
		proxyURL, proxyHost, proxyPort = first[0], u.Hostname(), port
	})
	return proxyURL, proxyHost, proxyPort
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// capBuffer keeps the first max bytes written and drops the rest.
type capBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capBuffer) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.b.Bytes())
}
