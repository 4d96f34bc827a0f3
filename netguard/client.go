package netguard

import (
	"context"
	"io"
	"net/http"
	"net/url"
)

// HTTPClient is an http.Client on NewTransport(ctx) under a type of its
// own. A *http.Client made by NewClient and a zero http.Client have the
// same type, so static reach checks (capslock, docs/reach.md) must count
// every http.Client call as network access; calls through HTTPClient's
// methods are netguard's and can be told apart. Behaviour is NewClient's.
type HTTPClient struct {
	c *http.Client
}

// NewHTTPClient returns an HTTPClient whose requests are checked in the
// scope of ctx (or their own context's scope).
func NewHTTPClient(ctx context.Context) *HTTPClient {
	return &HTTPClient{c: NewClient(ctx)}
}

// Do sends req, as http.Client.Do.
func (h *HTTPClient) Do(req *http.Request) (*http.Response, error) { return h.c.Do(req) }

// Get issues a GET, as http.Client.Get.
func (h *HTTPClient) Get(url string) (*http.Response, error) { return h.c.Get(url) }

// Head issues a HEAD, as http.Client.Head.
func (h *HTTPClient) Head(url string) (*http.Response, error) { return h.c.Head(url) }

// Post issues a POST, as http.Client.Post.
func (h *HTTPClient) Post(url, contentType string, body io.Reader) (*http.Response, error) {
	return h.c.Post(url, contentType, body)
}

// PostForm issues a POST of form data, as http.Client.PostForm.
func (h *HTTPClient) PostForm(url string, data url.Values) (*http.Response, error) {
	return h.c.PostForm(url, data)
}

// CloseIdleConnections closes idle pooled connections.
func (h *HTTPClient) CloseIdleConnections() { h.c.CloseIdleConnections() }

// Client returns the underlying *http.Client, for APIs that take one (a
// static reach check then sees an http.Client again).
func (h *HTTPClient) Client() *http.Client { return h.c }
