package netguard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// serveHTTP serves HTTP proxy requests on one client connection: CONNECT
// opens a tunnel (and ends the HTTP exchange); an absolute http:// URI is
// forwarded, and the connection is kept for the client's next request.
// Each request is its own decision.
func (p *Proxy) serveHTTP(ctx context.Context, cc *clientConn) {
	var up net.Conn        // the upstream of the last forwarded request
	var upKey string       // its host:port
	var upBR *bufio.Reader // its response reader
	defer func() { p.closeUpstream(up) }()
	for n := 0; ; n++ {
		if n > 0 {
			// Wait for the next request as long as an idle connection may
			// stay, then give its head HeaderTimeout.
			cc.headMode(time.Now().Add(p.idleTimeout()))
			if _, err := cc.br.Peek(1); err != nil {
				return
			}
		}
		cc.headMode(time.Now().Add(p.headerTimeout()))
		req, err := http.ReadRequest(cc.br)
		if err != nil {
			if n > 0 && errors.Is(err, io.EOF) {
				return
			}
			status, reason := http.StatusBadRequest, "malformed request"
			if cc.headTooLarge() {
				status, reason = http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("request head larger than %d bytes", p.maxHeader())
			} else if isTimeout(err) {
				status, reason = http.StatusRequestTimeout, "request head not received in time"
			}
			p.logFault(ctx, cc.Conn, "http", err)
			writeError(cc.Conn, status, "", reason)
			return
		}
		cc.bodyMode()
		start := time.Now()
		if req.Method == http.MethodConnect {
			p.httpConnect(ctx, cc, req, start)
			return
		}
		keep := p.httpForward(ctx, cc, req, start, &up, &upKey, &upBR)
		if !keep {
			return
		}
	}
}

// httpConnect handles CONNECT host:port: one decision, then a tunnel.
func (p *Proxy) httpConnect(ctx context.Context, cc *clientConn, req *http.Request, start time.Time) {
	rl := &requestLog{proto: "http", method: req.Method, target: req.Host, start: start}
	defer p.logRequest(ctx, cc.Conn, rl)
	// The authority form: req.Host is "host:port" and the URL has no path.
	if req.URL == nil || req.URL.Host == "" || req.URL.Path != "" {
		rl.status = http.StatusBadRequest
		writeError(cc.Conn, rl.status, "", "CONNECT needs host:port")
		return
	}
	up, err := p.connect(ctx, req.URL.Host, "CONNECT "+req.URL.Host)
	if err != nil {
		rl.status, rl.err = writeDialError(cc.Conn, err)
		return
	}
	defer p.closeUpstream(up)
	if _, err := io.WriteString(idleWriter{cc.Conn, p.idleTimeout()}, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		rl.err = err
		return
	}
	rl.status = http.StatusOK
	rl.up, rl.down, rl.err = p.tunnel(cc, up)
}

// httpForward forwards one absolute-URI request and its response. It
// reports whether the client connection may carry another request.
func (p *Proxy) httpForward(ctx context.Context, cc *clientConn, req *http.Request, start time.Time, up *net.Conn, upKey *string, upBR **bufio.Reader) bool {
	rl := &requestLog{proto: "http", method: req.Method, target: req.RequestURI, start: start}
	defer p.logRequest(ctx, cc.Conn, rl)
	defer req.Body.Close()
	u := req.URL
	if !u.IsAbs() || u.Host == "" {
		rl.status = http.StatusBadRequest
		writeError(cc.Conn, rl.status, "", "a proxy request needs an absolute http:// URI (or CONNECT host:port)")
		return false
	}
	if u.Scheme != "http" {
		rl.status = http.StatusBadRequest
		writeError(cc.Conn, rl.status, "", "only http:// URIs are forwarded; use CONNECT for "+u.Scheme)
		return false
	}
	target := targetAddr(u)
	rl.target = u.Scheme + "://" + u.Host
	// Reuse the upstream only for the same host:port, and only when this
	// request's own decision approved the address it is connected to.
	if *up != nil && *upKey != target {
		p.closeUpstream(*up)
		*up, *upBR = nil, nil
	}
	d := p.Dialer
	if d == nil {
		d = &Dialer{}
	}
	if *up != nil {
		g, err := authorizeProxied(ctx, target, d.Resolver, proxyDetail(ctx, req.Method+" "+rl.target))
		if err != nil {
			rl.status, rl.err = writeDialError(cc.Conn, err)
			return false
		}
		if !g.off && !grantHas(g, (*up).RemoteAddr()) {
			p.closeUpstream(*up)
			*up, *upBR = nil, nil
			c, err := d.dial(ctx, "tcp", target, g)
			if err != nil {
				rl.status, rl.err = writeDialError(cc.Conn, err)
				return false
			}
			if !p.trackUpstream(c) {
				c.Close()
				return false
			}
			*up = c
		}
	} else {
		c, err := p.connect(ctx, target, req.Method+" "+rl.target)
		if err != nil {
			rl.status, rl.err = writeDialError(cc.Conn, err)
			return false
		}
		*up, *upKey = c, target
	}
	if *upBR == nil {
		*upBR = bufio.NewReaderSize(&idleReader{c: *up, idle: p.idleTimeout()}, 16<<10)
	}
	if req.Header.Get("Expect") == "100-continue" {
		// Answer it here: the client may then send its body, which is
		// forwarded as it arrives.
		req.Header.Del("Expect")
		if _, err := io.WriteString(idleWriter{cc.Conn, p.idleTimeout()}, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			rl.err = err
			return false
		}
	}
	out := req.Clone(ctx)
	out.Body = &countReader{r: req.Body, n: &rl.up}
	out.RequestURI = ""
	out.Close = false
	removeHopHeaders(out.Header)
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header.Set("User-Agent", "") // Request.Write would add Go's own
	}
	if err := out.Write(idleWriter{*up, p.idleTimeout()}); err != nil {
		rl.err = err
		rl.status = http.StatusBadGateway
		writeError(cc.Conn, rl.status, "destination_write_error", "the upstream connection failed while sending the request")
		return false
	}
	resp, err := http.ReadResponse(*upBR, out)
	if err != nil {
		rl.err = err
		rl.status = http.StatusBadGateway
		writeError(cc.Conn, rl.status, "http_response_incomplete", "the upstream answered no valid HTTP response")
		return false
	}
	defer resp.Body.Close()
	rl.status = resp.StatusCode
	upClose := resp.Close
	removeHopHeaders(resp.Header)
	resp.Close = req.Close
	resp.Body = &countReader{r: resp.Body, n: &rl.down}
	if err := resp.Write(idleWriter{cc.Conn, p.idleTimeout()}); err != nil {
		rl.err = err
		return false
	}
	if upClose {
		p.closeUpstream(*up)
		*up, *upBR = nil, nil
	}
	// resp.Write sets Close when the body was delimited by the end of
	// the connection.
	return !resp.Close && !req.Close
}

// grantHas reports whether addr (a connected socket's remote address) is
// one of the grant's approved addresses and port.
func grantHas(g grant, addr net.Addr) bool {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil || ap.Port() != g.port {
		return false
	}
	a := ap.Addr().Unmap()
	for _, x := range g.addrs {
		if x == a {
			return true
		}
	}
	return false
}

// hopHeaders are the hop-by-hop headers of RFC 9110 section 7.6.1 (and
// Proxy-Connection, which some clients still send), never forwarded.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

type countReader struct {
	r io.Reader
	n *int64
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	*c.n += int64(n)
	return n, err
}

func (c *countReader) Close() error {
	if rc, ok := c.r.(io.Closer); ok {
		return rc.Close()
	}
	return nil
}

// writeDialError answers a failed decision or dial: 403 for a denial, 502
// or 504 for the upstream's failures, with RFC 9209 Proxy-Status.
func writeDialError(c net.Conn, err error) (int, error) {
	status, kind := http.StatusBadGateway, "destination_unavailable"
	var de *audit.DenyError
	var dns *net.DNSError
	switch {
	case errors.As(err, &de):
		status, kind = http.StatusForbidden, "destination_ip_prohibited"
		if de.Decision.Tier == policy.TierInvalid {
			kind = "http_request_error"
		}
	case errors.As(err, &dns):
		kind = "dns_error"
	case isTimeout(err):
		status, kind = http.StatusGatewayTimeout, "connection_timeout"
	case errors.Is(err, ErrProxyClosed):
		status, kind = http.StatusServiceUnavailable, "proxy_internal_error"
	default:
		if strings.Contains(err.Error(), "refused") {
			kind = "connection_refused"
		}
	}
	writeError(c, status, kind, shortReason(err))
	return status, err
}

// writeError writes a complete error response and asks the client to
// close.
func writeError(c net.Conn, status int, kind, reason string) {
	body := reason + "\n"
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
	if kind != "" {
		fmt.Fprintf(&b, "Proxy-Status: auditguard; error=%s; details=%s\r\n", kind, strconv.Quote(oneLine(errors.New(reason))))
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, b.String())
}

// shortReason is the one-line reason a refused client sees: what was
// denied and by which rule, without the caller or the scope (the guard's
// record has those).
func shortReason(err error) string {
	var de *audit.DenyError
	if !errors.As(err, &de) {
		return "auditguard proxy: " + oneLine(err)
	}
	var b strings.Builder
	b.WriteString("auditguard: connect ")
	b.WriteString(strconv.Quote(de.Target))
	if de.Resolved != "" && de.Resolved != de.Target {
		b.WriteString(" (resolves to " + de.Resolved + ")")
	}
	b.WriteString(" denied: ")
	if de.Err != nil {
		b.WriteString(strings.TrimPrefix(de.Err.Error(), "auditguard: ") + "; ")
	}
	b.WriteString(de.Decision.Rule.String())
	if de.Decision.Detail != "" {
		b.WriteString(": " + de.Decision.Detail)
	}
	b.WriteString(" [" + de.Decision.Tier.String() + "]")
	return b.String()
}

// oneLine is err's message on one line.
func oneLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
