package policy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// probeTimeout bounds one query command of a profile.
const probeTimeout = 10 * time.Second

// probeKey identifies a query: the program file (by identity, so an
// upgraded tool is asked again) and its arguments.
type probeKey struct {
	path       string
	dev, ino   uint64
	size, mtim int64
	args       string
}

var (
	probeMu    sync.Mutex
	probeCache = map[probeKey]string{}
)

// probeTool runs prog with args and returns its trimmed standard output.
// It runs on the host, unconfined, so it is kept to read-only queries of
// the tool's own layout (`git --exec-path`, `go env GOTOOLDIR`), with an
// environment of PATH alone plus what keeps the tool from reading the
// user's configuration (GOENV=off, GOTOOLCHAIN=local), in "/", under a
// timeout. Results are cached per program file, so reloading a policy does
// not run the tools again.
func probeTool(prog string, path []string, args ...string) (string, error) {
	fi, err := os.Stat(prog)
	if err != nil {
		return "", err
	}
	k := probeKey{path: prog, size: fi.Size(), mtim: fi.ModTime().UnixNano(), args: strings.Join(args, "\x00")}
	k.dev, k.ino = fileID(fi)
	probeMu.Lock()
	out, ok := probeCache[k]
	probeMu.Unlock()
	if ok {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=" + strings.Join(path, ":"), "GOENV=off", "GOTOOLCHAIN=local", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		return "", fmt.Errorf("%s %s: %w %s", prog, strings.Join(args, " "), err, msg)
	}
	out = strings.TrimSpace(stdout.String())
	probeMu.Lock()
	probeCache[k] = out
	probeMu.Unlock()
	return out, nil
}
