package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/auditguard/auditguard/netguard"
	"github.com/auditguard/auditguard/policy"
)

// netTimeout bounds every dial and request of the net rows.
const netTimeout = 10 * time.Second

// dialRow is a loopback TCP dial and close through netguard.Dialer against
// net.Dialer, to a listener of this process that accepts and closes.
func dialRow(e *env) (*row, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	})
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	ctx, _, err := e.enter(policy.Spec{Net: policy.NetSpec{Rules: []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{port}}}}})
	if err != nil {
		ln.Close()
		return nil, err
	}
	dial := func(d func(context.Context, string, string) (net.Conn, error)) func(int) error {
		return func(int) error {
			dctx, cancel := context.WithTimeout(ctx, netTimeout)
			c, err := d(dctx, "tcp", addr)
			cancel()
			if err != nil {
				return err
			}
			// A reset instead of a FIN: no TIME_WAIT piles up and skews
			// later blocks, on every side alike.
			if err := setLinger0(c); err != nil {
				c.Close()
				return err
			}
			return c.Close()
		}
	}
	raw := &net.Dialer{}
	guarded := &netguard.Dialer{}
	return &row{
		group: "net", call: "loopback TCP dial+close", base: "raw",
		sides: []*side{
			{name: "raw", op: dial(raw.DialContext), note: "net.Dialer.DialContext to 127.0.0.1; the listener's accept loop runs in this process (its allocations count on both sides)"},
			{name: "guarded", op: dial(guarded.DialContext), note: "netguard.Dialer.DialContext; policy: one net rule for 127.0.0.1 and the port"},
		},
		maxN:    200,
		targets: []target{{side: "guarded", vs: "raw", maxRatio: 1.10, text: "<= 1.10x raw"}},
		cleanup: func() { ln.Close(); wg.Wait() },
	}, nil
}

// setLinger0 sets SO_LINGER to 0 on c or the connection it wraps.
func setLinger0(c net.Conn) error {
	for {
		switch x := c.(type) {
		case interface{ SetLinger(int) error }:
			return x.SetLinger(0)
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return fmt.Errorf("cannot set SO_LINGER on a %T", c)
		}
	}
}

// httpRow is an HTTP GET of a 2-byte body through netguard.NewClient
// against an http.Client with its own transport, both keeping connections
// alive, to an httptest server on loopback.
func httpRow(e *env) (*row, error) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ctx, _, err := e.enter(policy.Spec{Net: policy.NetSpec{Rules: []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{port}}}}})
	if err != nil {
		srv.Close()
		return nil, err
	}
	raw := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: netTimeout}
	guarded := netguard.NewClient(ctx)
	guarded.Timeout = netTimeout
	get := func(c *http.Client) func(int) error {
		buf := make([]byte, 64)
		return func(int) error {
			resp, err := c.Get(srv.URL)
			if err != nil {
				return err
			}
			n, err := io.ReadFull(resp.Body, buf[:2])
			resp.Body.Close()
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK || string(buf[:n]) != "ok" {
				return errors.New("unexpected answer: " + strconv.Itoa(resp.StatusCode) + " " + string(buf[:n]))
			}
			return nil
		}
	}
	return &row{
		group: "net", call: "HTTP GET (keep-alive)", base: "raw",
		sides: []*side{
			{name: "raw", op: get(raw), note: "http.Client on a clone of http.DefaultTransport; the httptest server runs in this process (its allocations count on both sides)"},
			{name: "guarded", op: get(guarded), note: "netguard.NewClient; policy: one net rule for 127.0.0.1 and the port"},
		},
		maxN: 200,
		cleanup: func() {
			raw.CloseIdleConnections()
			guarded.CloseIdleConnections()
			srv.Close()
		},
	}, nil
}
