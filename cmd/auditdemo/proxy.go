package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/netguard"
)

const proxyUsage = "usage: auditdemo proxy --policy FILE --listen ADDR [--log FILE]\n" +
	"  ADDR is host:port (127.0.0.1:8080) or unix:/path/to/socket"

// proxyContext is the context the proxy runs under until it ends: until
// SIGINT or SIGTERM. Tests replace it.
var proxyContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// cmdProxy runs netguard's egress proxy standalone, smokescreen-style:
// HTTP (absolute URIs and CONNECT) and SOCKS5 on one address, every
// request decided by the policy file (rules and modes). It logs JSON lines
// to stdout (or --log): "proxy listening" once, then one audit record per
// decision (allows included) and one "proxy request" line per request.
// On SIGINT or SIGTERM it closes every tunnel and exits 0.
//
// Exit status: 0 after a signal; 1 when serving fails; 2 on a usage error,
// a policy file that does not load, or an address it cannot listen on.
func cmdProxy(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("auditdemo proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("policy", "", "the policy `FILE`")
	listen := fs.String("listen", "", "the `ADDR` to serve on: host:port or unix:/path")
	logPath := fs.String("log", "", "write JSON lines to `FILE` instead of stdout")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *path == "" || *listen == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, proxyUsage)
		return 2
	}
	var out io.Writer = stdout
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(stderr, "auditdemo proxy:", err)
			return 2
		}
		defer f.Close()
		out = f
	}
	logger := slog.New(slog.NewJSONHandler(out, nil))
	_, g, err := loadGuard(*path, audit.WithLogger(logger), audit.WithLogAllows())
	if err != nil {
		printLoadError(stderr, *path, err)
		return 2
	}
	network, addr := "tcp", *listen
	if rest, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, addr = "unix", rest
	}
	// The proxy's own socket is host infrastructure, not guarded code:
	// it is opened directly.
	ln, err := net.Listen(network, addr)
	if err != nil {
		fmt.Fprintln(stderr, "auditdemo proxy:", err)
		return 2
	}
	ctx, stop := proxyContext()
	defer stop()
	scope, release, err := g.Enter(context.Background())
	if err != nil {
		ln.Close()
		fmt.Fprintln(stderr, "auditdemo proxy:", err)
		return 2
	}
	defer release()
	p := netguard.NewProxy(scope)
	p.Logger = logger
	logger.Info("proxy listening", slog.String("network", network), slog.String("addr", ln.Addr().String()),
		slog.String("policy", *path))
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	select {
	case <-ctx.Done():
		p.Close()
		<-served
		logger.Info("proxy stopped")
		return 0
	case err := <-served:
		p.Close()
		if errors.Is(err, netguard.ErrProxyClosed) {
			return 0
		}
		fmt.Fprintln(stderr, "auditdemo proxy:", err)
		return 1
	}
}
