package netguard

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/auditguard/auditguard/policy"
)

var proxySeeds = []string{
	"CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n",
	"CONNECT 93.184.216.34:80 HTTP/1.1\r\n\r\n",
	"CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n",
	"CONNECT [::ffff:a9fe:a9fe]:80 HTTP/1.1\r\n\r\n",
	"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
	"GET http://metadata.test/ HTTP/1.1\r\nHost: x\r\n\r\nGET http://allowed.test/ HTTP/1.1\r\n\r\n",
	"POST http://allowed.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"GET / HTTP/1.1\r\n\r\n",
	"\x05\x01\x00\x05\x01\x00\x03\x0callowed.test\x00\x50",
	"\x05\x01\x00\x05\x01\x00\x01\x5d\xb8\xd8\x22\x00\x50",
	"\x05\x01\x00\x05\x01\x00\x01\xa9\xfe\xa9\xfe\x00\x50",
	"\x05\x01\x00\x05\x01\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xa9\xfe\xa9\xfe\x00\x50",
	"\x05\x01\x00\x05\x01\x00\x03\x0dmetadata.test\x00\x50",
	"\x05\x02\x00\x02\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00",
	"\x04\x01\x00\x50\x7f\x00\x00\x01\x00",
}

// FuzzProxyServe feeds arbitrary bytes to a proxy connection. Whatever
// arrives, serve returns (bounded by its timeouts) without panicking, and
// the only address it ever asks the kernel to connect to is the one the
// policy approves (93.184.216.34:80, which the probe aborts before any
// packet).
func FuzzProxyServe(f *testing.F) {
	for _, s := range proxySeeds {
		f.Add([]byte(s))
	}
	ctx, _ := enter(f, []policy.NetRule{{Host: "allowed.test", Ports: []string{"80"}}, {CIDR: "93.184.216.34", Ports: []string{"80"}}})
	res := newFakeResolver().set("allowed.test", []string{"93.184.216.34"}).set("metadata.test", []string{"169.254.169.254"})
	pr := &probe{allow: map[string]bool{}}
	p := &Proxy{
		Dialer:        &Dialer{Resolver: res, Base: net.Dialer{ControlContext: pr.control}},
		HeaderTimeout: 20 * time.Millisecond, // the pipe has no half-close: input ends by timeout
		IdleTimeout:   20 * time.Millisecond, // the pipe has no half-close: input ends by timeout
	}
	f.Cleanup(func() { p.Close() })
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := net.Pipe()
		done := make(chan error, 1)
		go func() { done <- p.ServeConn(ctx, b) }()
		go func() {
			a.Write(in)
		}()
		a.SetReadDeadline(time.Now().Add(5 * time.Second))
		io.Copy(io.Discard, a)
		a.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("serve did not return")
		}
		for _, addr := range pr.addresses() {
			if addr != "93.184.216.34:80" {
				t.Fatalf("the proxy tried to connect to %s", addr)
			}
		}
	})
}

// FuzzSOCKSRequest: the SOCKS5 parsers never panic, and a request they
// accept with an address type names a host:port that splits back into its
// parts (domain names are taken as bytes; the dialer's canonicalisation,
// fuzzed in policy, refuses odd ones).
func FuzzSOCKSRequest(f *testing.F) {
	for _, s := range proxySeeds {
		if strings.HasPrefix(s, "\x05") {
			f.Add([]byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		ok, err := readSOCKSGreeting(r)
		if err != nil || !ok {
			return
		}
		req, err := readSOCKSRequest(r)
		if err != nil {
			return
		}
		if _, _, err := net.SplitHostPort(req.target); err != nil && req.atyp != socksAtypDomain {
			t.Fatalf("target %q of an address type %d does not split: %v", req.target, req.atyp, err)
		}
	})
}
