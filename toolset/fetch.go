package toolset

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/auditguard/auditguard/netguard"
)

// FetchInput is the fetch tool's input.
type FetchInput struct {
	URL      string `json:"url"`
	MaxBytes int64  `json:"max_bytes,omitempty"` // Options.MaxFetchBytes when 0; never more
}

func (s *Set) fetchTool() *Tool {
	return newTool("fetch", fmt.Sprintf("Fetch an http or https URL with GET and return its body as text. Text, JSON, XML and HTML (returned as-is) are shown; binary content is refused. Bodies over max_bytes (at most %d) are refused whole. Which hosts can be reached is the policy's decision.", s.opts.MaxFetchBytes),
		[]param{
			{name: "url", typ: "string", desc: "the http or https URL", required: true},
			{name: "max_bytes", typ: "integer", desc: fmt.Sprintf("the largest body to accept (default and most %d)", s.opts.MaxFetchBytes), min: minimum(1)},
		}, s.Fetch)
}

// Fetch is the fetch tool: a GET through netguard's HTTP client (every
// connection and redirect decided by the guard), the body returned as
// text when it is text and no larger than the cap.
func (s *Set) Fetch(ctx context.Context, in FetchInput) (Result, error) {
	return call(s, ctx, "fetch", in, func(e *env, in FetchInput) (string, error) {
		if in.URL == "" {
			return "", inputErr("url is required")
		}
		u, err := url.Parse(in.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", inputErr("%q is not an http or https URL", in.URL)
		}
		limit := s.opts.MaxFetchBytes
		if in.MaxBytes < 0 {
			return "", inputErr("max_bytes must be positive")
		}
		if in.MaxBytes > 0 {
			limit = min(in.MaxBytes, limit)
		}
		ctx, cancel := context.WithTimeout(e.ctx, s.opts.FetchTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return "", inputErr("%q cannot be requested: %v", in.URL, err)
		}
		req.Header.Set("Accept", "text/*, application/json, application/xml;q=0.9, */*;q=0.1")
		client := netguard.NewClient(e.ctx)
		defer client.CloseIdleConnections()
		resp, err := client.Do(req)
		if err != nil {
			if isDenied(err) {
				return "", err
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return "", fmt.Errorf("fetch of %s timed out after %v", in.URL, s.opts.FetchTimeout)
			}
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return "", fmt.Errorf("fetch of %s failed: %v", in.URL, err)
		}
		defer resp.Body.Close()
		final := resp.Request.URL.String()
		if resp.ContentLength > limit {
			return "", inputErr("the body of %s is %d bytes, over the %d-byte cap; nothing was read", final, resp.ContentLength, limit)
		}
		body, over, err := readAll(resp.Body, limit)
		if over {
			return "", inputErr("the body of %s is over the %d-byte cap; nothing is returned", final, limit)
		}
		if err != nil {
			return "", fmt.Errorf("reading the body of %s failed: %v", final, err)
		}
		ctype := resp.Header.Get("Content-Type")
		if ctype == "" {
			ctype = http.DetectContentType(body)
		}
		mt, _, _ := mime.ParseMediaType(ctype)
		html := mt == "text/html" || mt == "application/xhtml+xml"
		if !textual(mt) {
			return "", inputErr("%s answered %s (%d bytes), which is not text; fetch returns text only", final, ctype, len(body))
		}
		if kind := binaryKind(body, true); kind != "" {
			return "", inputErr("%s answered %s but the body is not text (%s); fetch returns text only", final, ctype, kind)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s, %s, %d bytes", final, resp.Status, ctype, len(body))
		if final != u.String() {
			fmt.Fprintf(&b, " (redirected from %s)", u.String())
		}
		b.WriteString("\n")
		if html {
			b.WriteString("[HTML, returned as-is: markup included]\n")
		}
		b.WriteString("\n")
		b.Write(body)
		if resp.StatusCode >= 400 {
			return "", &Error{Kind: KindFailed, Msg: "the server answered with an error status: " + b.String()}
		}
		return b.String(), nil
	})
}

// textual reports whether a media type is text a model can read.
func textual(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/x-javascript", "application/xhtml+xml", "application/yaml", "application/x-yaml",
		"application/toml", "application/x-sh", "application/sql", "application/graphql",
		"application/x-ndjson", "application/jsonl", "image/svg+xml":
		return true
	}
	return false
}
