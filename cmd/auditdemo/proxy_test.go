package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the proxy's goroutines and the
// test reading it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func TestProxyCommand(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "origin") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	pol := filepath.Join(t.TempDir(), "proxy.toml")
	if err := os.WriteFile(pol, []byte(fmt.Sprintf("[[net.allow]]\ncidr = \"127.0.0.1\"\nports = [%s]\n", port)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old := proxyContext
	proxyContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	defer func() { proxyContext = old }()

	var out lockedBuffer
	var errb bytes.Buffer
	code := make(chan int, 1)
	go func() { code <- run([]string{"proxy", "--policy", pol, "--listen", "127.0.0.1:0"}, &out, &errb) }()
	var addr string
	for end := time.Now().Add(5 * time.Second); addr == "" && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		for _, l := range out.lines() {
			if l["msg"] == "proxy listening" {
				addr, _ = l["addr"].(string)
			}
		}
	}
	if addr == "" {
		cancel()
		t.Fatalf("no listening line: %v", out.lines())
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr})}}
	defer client.CloseIdleConnections()
	for _, tc := range []struct {
		url  string
		want int
	}{
		{srv.URL + "/", 200},
		{"http://169.254.169.254/latest/", 403},
	} {
		resp, err := client.Get(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.url, resp.StatusCode, tc.want)
		}
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d: %s", c, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy did not stop")
	}
	var allowed, denied, requests bool
	for _, l := range out.lines() {
		switch {
		case l["outcome"] == "allowed" && strings.Contains(fmt.Sprint(l["detail"]), "via proxy"):
			allowed = true
		case l["outcome"] == "denied" && strings.Contains(fmt.Sprint(l["target"]), "169.254.169.254"):
			denied = true
		case l["msg"] == "proxy request":
			requests = true
		}
	}
	if !allowed || !denied || !requests {
		t.Errorf("JSON lines lack an allow, a denial or a request line:\n%s", out.b.String())
	}
}

func TestProxyCommandUsage(t *testing.T) {
	if r := cli(t, "proxy", "--policy", "x.toml"); r.code != 2 || !strings.Contains(r.stderr, "usage: auditdemo proxy") {
		t.Errorf("%v", r)
	}
}
