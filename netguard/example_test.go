package netguard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/netguard"
	"github.com/auditguard/auditguard/policy"
)

func quiet() audit.Option { return audit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))) }

// A host allows one API host; generated code reaching for the cloud
// metadata endpoint is denied before any socket exists.
func ExampleDialer_DialContext() {
	pol, _ := policy.New(policy.Spec{Net: policy.NetSpec{Rules: []policy.NetRule{
		{Host: "api.example.com", Ports: []string{"443"}, Source: "host config"},
	}}})
	g, _ := audit.New(pol, quiet())
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	_, err := (&netguard.Dialer{}).DialContext(ctx, "tcp", "169.254.169.254:80")
	var de *audit.DenyError
	errors.As(err, &de)
	fmt.Println(errors.Is(err, fs.ErrPermission), de.Decision.Tier)
	fmt.Println(de.Decision.Rule.Pattern)
	// Output:
	// true hard
	// special-purpose 169.254.169.254/32 cloud metadata (AWS, GCP, Azure, OCI, OpenStack, DigitalOcean, Hetzner)
}

// Check answers without dialing; numeric spellings that C resolvers read as
// loopback are invalid input.
func ExampleCheck() {
	pol, _ := policy.New(policy.Spec{})
	g, _ := audit.New(pol, quiet())
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	for _, addr := range []string{"127.1:80", "[::ffff:127.0.0.1]:80", ":80"} {
		d := netguard.Check(ctx, "tcp", addr)
		why := d.Detail
		if why == "" {
			why = d.Rule.Pattern
		}
		fmt.Printf("%s: %v, %s\n", addr, d.Tier, why)
	}
	// Output:
	// 127.1:80: invalid, non-canonical numeric IPv4 spelling (write the dotted quad, e.g. 127.0.0.1)
	// [::ffff:127.0.0.1]:80: hard, special-purpose 127.0.0.0/8 loopback
	// :80: invalid, empty host (it would reach the local system)
}

// A loopback server is reachable only with an address rule naming it.
func ExampleNewClient() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)

	pol, _ := policy.New(policy.Spec{Net: policy.NetSpec{Rules: []policy.NetRule{
		{CIDR: "127.0.0.1", Ports: []string{u.Port()}},
	}}})
	g, _ := audit.New(pol, quiet())
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	c := netguard.NewClient(ctx)
	defer c.CloseIdleConnections()
	resp, err := c.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(string(body))

	_, err = c.Get("http://127.0.0.1:1/")
	fmt.Println(errors.Is(err, fs.ErrPermission))
	// Output:
	// hello
	// true
}
