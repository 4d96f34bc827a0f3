package toolset_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/toolset"
)

// fetchServer serves a few kinds of content on loopback and counts the
// requests it got.
func fetchServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("hello from the server\n"))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	})
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<html><body><p>docs</p></body></html>"))
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00"))
	})
	mux.HandleFunc("/lying", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("text\x00\x01\x02"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "5000")
		w.Write([]byte(strings.Repeat("a", 5000)))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for range 10 {
			w.Write([]byte(strings.Repeat("b", 1000)))
			w.(http.Flusher).Flush() // no Content-Length: chunked
		}
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	mux.HandleFunc("/to-metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("/to-text", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/text", http.StatusFound)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestFetch(t *testing.T) {
	srv, hits := fetchServer(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	f := newFixture(t, policy.NetRule{CIDR: "127.0.0.1", Ports: []string{port}})
	u := srv.URL

	ok := []struct {
		name  string
		input map[string]any
		want  []string
	}{
		{"text", map[string]any{"url": u + "/text"}, []string{u + "/text 200 OK, text/plain; charset=utf-8, 22 bytes\n\nhello from the server\n"}},
		{"json", map[string]any{"url": u + "/json"}, []string{"application/json", `{"ok":true}`}},
		{"html as-is", map[string]any{"url": u + "/page"}, []string{"[HTML, returned as-is: markup included]", "<p>docs</p>"}},
		{"redirect", map[string]any{"url": u + "/to-text"}, []string{"(redirected from " + u + "/to-text)", "hello from the server"}},
		{"under a lowered cap", map[string]any{"url": u + "/big", "max_bytes": 5000}, []string{"5000 bytes"}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			got := f.ok(t, "f1", "fetch", tc.input)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("result lacks %q:\n%s", w, got)
				}
			}
		})
	}

	bad := []struct {
		name  string
		input map[string]any
		kind  toolset.Kind
		want  []string
		sent  bool // whether the request reached the loopback server
	}{
		{"metadata address", map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}, toolset.KindDenied,
			[]string{"auditguard: net connect denied", "169.254.169.254:80", "not a transient failure"}, false},
		{"redirect to metadata", map[string]any{"url": u + "/to-metadata"}, toolset.KindDenied,
			[]string{"net connect denied", "169.254.169.254"}, true},
		{"loopback port not allowed", map[string]any{"url": "http://127.0.0.1:1/"}, toolset.KindDenied,
			[]string{"net connect denied", "127.0.0.1:1"}, false},
		{"binary", map[string]any{"url": u + "/image"}, toolset.KindInput, []string{"image/png", "not text"}, true},
		{"binary claiming text", map[string]any{"url": u + "/lying"}, toolset.KindInput, []string{"NUL"}, true},
		{"over the cap by length", map[string]any{"url": u + "/big", "max_bytes": 4999}, toolset.KindInput,
			[]string{"is 5000 bytes, over the 4999-byte cap"}, true},
		{"over the cap streaming", map[string]any{"url": u + "/stream", "max_bytes": 2500}, toolset.KindInput,
			[]string{"over the 2500-byte cap"}, true},
		{"error status", map[string]any{"url": u + "/missing"}, toolset.KindFailed, []string{"404 Not Found", "no such page"}, true},
		{"not http", map[string]any{"url": "ftp://example.com/x"}, toolset.KindInput, []string{"not an http or https URL"}, false},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			before := hits.Load()
			res, err := f.call("f2", "fetch", tc.input)
			te := mustFail(t, res, err, tc.kind, tc.want...)
			if tc.kind == toolset.KindDenied && !errors.Is(te, audit.ErrDenied) {
				t.Errorf("a denial that does not unwrap to audit.ErrDenied: %v", te)
			}
			if sent := hits.Load() > before; sent != tc.sent {
				t.Errorf("request reached the server: %v, want %v", sent, tc.sent)
			}
		})
	}
}
