package netguard

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// Transport is an http.RoundTripper whose every connection is dialed by a
// guarded Dialer. It keeps one connection pool per guard scope, so a
// connection approved in one scope is never reused by another, and a
// released scope's pool is closed. Requests are checked in the scope their
// context carries, or in the scope of Transport.Context when it carries
// none.
//
// The inner http.Transport is not reachable: nothing can set a
// DialTLSContext, a Dial or a Proxy that goes around the dialer. TLS runs
// over the guarded connection.
type Transport struct {
	// Context supplies the scope for requests whose context carries none.
	Context context.Context
	// Dialer dials every connection; nil means a zero Dialer (pure-Go
	// resolver). Its Context field is not used.
	Dialer *Dialer
	// Proxy, when set, chooses a proxy per request (http.ProxyURL,
	// http.ProxyFromEnvironment). The dial to the proxy is checked like any
	// other, and so is each request's own host:port, before it is sent:
	// otherwise the proxy would connect anywhere. nil means no proxy;
	// HTTP_PROXY and friends are ignored.
	Proxy func(*http.Request) (*url.URL, error)
	// TLSClientConfig is cloned into each pool.
	TLSClientConfig *tls.Config
	// Timeouts and limits of each pool; zero values take
	// http.DefaultTransport's.
	TLSHandshakeTimeout   time.Duration
	ResponseHeaderTimeout time.Duration
	IdleConnTimeout       time.Duration
	MaxIdleConnsPerHost   int

	mu    sync.Mutex
	pools map[*audit.Scope]*http.Transport
}

var _ http.RoundTripper = (*Transport)(nil)

// NewTransport returns a Transport that checks requests without a scope of
// their own in the scope of ctx.
func NewTransport(ctx context.Context) *Transport { return &Transport{Context: ctx} }

// NewClient returns an http.Client on NewTransport(ctx). Every redirect
// hop is a new request through the Transport: a hop to another host dials
// again and is checked; a hop through a proxy is checked before it is sent.
func NewClient(ctx context.Context) *http.Client {
	return &http.Client{Transport: NewTransport(ctx)}
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	s := audit.From(ctx)
	if s == nil && t.Context != nil && audit.From(t.Context) != nil {
		ctx = &scopedContext{Context: ctx, values: t.Context}
		req = req.WithContext(ctx)
		s = audit.From(ctx)
	}
	if err := s.Err(); err != nil {
		if s != nil {
			t.drop(s)
		}
		closeBody(req)
		ev := &audit.Event{Protocol: audit.Net, Op: policy.OpConnect, Target: req.URL.Host, Detail: "http"}
		return nil, audit.Check(ctx, ev, nil)
	}
	// The round trip is a call in flight: release waits for the response
	// (up to its deadline) before it closes the scope's connections.
	if s.Begin() == nil {
		defer s.End()
	}
	// net/http dials from its pool's goroutine: carry the requesting code's
	// stack so denials name it rather than net/http.
	ctx = audit.WithCallerStack(ctx, "net/http.")
	req = req.WithContext(ctx)
	inner := t.pool(s)
	if t.Proxy != nil {
		pu, err := t.Proxy(req)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		if pu != nil {
			if _, err := authorize(ctx, policy.OpConnect, "tcp", targetAddr(req.URL), resolverFor(ctx, t.dialer().Resolver), "tcp (request target, sent through a proxy)"); err != nil {
				closeBody(req)
				return nil, err
			}
		}
	}
	return inner.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of every pool.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.pools {
		p.CloseIdleConnections()
	}
}

func (t *Transport) dialer() *Dialer {
	if t.Dialer == nil {
		return &Dialer{}
	}
	return t.Dialer
}

// pool returns the scope's own http.Transport, making it on first use and
// closing the pools of released scopes.
func (t *Transport) pool(s *audit.Scope) *http.Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.pools[s]; ok {
		return p
	}
	if t.pools == nil {
		t.pools = map[*audit.Scope]*http.Transport{}
	}
	for old, p := range t.pools {
		if old.Err() != nil {
			p.CloseIdleConnections()
			delete(t.pools, old)
		}
	}
	d := *t.dialer()
	d.Context = nil
	def := http.DefaultTransport.(*http.Transport)
	p := &http.Transport{
		DialContext:           d.DialContext,
		Proxy:                 t.Proxy,
		TLSClientConfig:       t.TLSClientConfig.Clone(),
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   or(t.TLSHandshakeTimeout, def.TLSHandshakeTimeout),
		ResponseHeaderTimeout: t.ResponseHeaderTimeout,
		IdleConnTimeout:       or(t.IdleConnTimeout, def.IdleConnTimeout),
		MaxIdleConns:          def.MaxIdleConns,
		MaxIdleConnsPerHost:   t.MaxIdleConnsPerHost,
		ExpectContinueTimeout: def.ExpectContinueTimeout,
	}
	t.pools[s] = p
	return p
}

func (t *Transport) drop(s *audit.Scope) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.pools[s]; ok {
		p.CloseIdleConnections()
		delete(t.pools, s)
	}
}

func or(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// targetAddr is the host:port a request is for, with the scheme's default
// port.
func targetAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// scopedContext gives a request without a scope the Transport's scope
// (and other values), keeping the request's deadline and cancellation.
type scopedContext struct {
	context.Context
	values context.Context
}

func (c *scopedContext) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}
