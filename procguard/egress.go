package procguard

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/auditguard/auditguard/netguard"
)

// egress is a sandboxed command's route out: with net rules, the child's
// network namespace has no route but a loopback port (egressPort) that
// init forwards to the host, where each connection is served by a netguard
// proxy deciding every request with the command's scope, as a netguard
// dial would (events, callbacks, modes, records, attributed to the
// command). HTTP and SOCKS5 share the port; the child finds it through
// the proxy variables (proxyEnv). A program that ignores them has no
// route.
type egress struct {
	port  uint16
	proxy *netguard.Proxy
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
}

// defaultEgressPort is the proxy's port inside the sandbox, unless a
// forwarded loopback port has it.
const defaultEgressPort = 3128

func newEgress(ctx context.Context, name string, forwarded []uint16) *egress {
	port := uint16(defaultEgressPort)
	for forwardedHas(forwarded, port) {
		port++
	}
	ctx, stop := context.WithCancel(netguard.WithClient(ctx, "sandbox of "+name))
	return &egress{port: port, proxy: netguard.NewProxy(ctx), ctx: ctx, stop: stop}
}

func forwardedHas(ports []uint16, p uint16) bool {
	for _, q := range ports {
		if q == p {
			return true
		}
	}
	return false
}

// close ends every proxied connection and waits for the proxy.
func (e *egress) close() {
	if e == nil {
		return
	}
	e.stop()
	e.proxy.Close()
	e.wg.Wait()
}

// proxyVars are the variables clients read their proxy from; the host's
// are never passed on (policy's ExecEnv drops them), and a sandboxed
// command's are set to its egress port.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}

// proxyEnv replaces every proxy variable of env (in any case) with ones
// naming the egress port: HTTP for http and https URLs, SOCKS5 with remote
// name resolution for the rest, and no exceptions (NO_PROXY unset), so
// every connection a client makes is judged by the policy.
func proxyEnv(env []string, port uint16) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, v := range proxyVars {
			if strings.EqualFold(name, v) {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	p := strconv.Itoa(int(port))
	httpURL, socksURL := "http://127.0.0.1:"+p, "socks5h://127.0.0.1:"+p
	return append(out,
		"HTTP_PROXY="+httpURL, "http_proxy="+httpURL,
		"HTTPS_PROXY="+httpURL, "https_proxy="+httpURL,
		"ALL_PROXY="+socksURL, "all_proxy="+socksURL)
}
