package nettest_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/netguard"
	"github.com/auditguard/auditguard/netguard/nettest"
	"github.com/auditguard/auditguard/policy"
)

// Handle serves an HTTP client made with netguard.NewClient: the policy
// decides the dial, the handler answers, no DNS query and no packet leaves
// the host.
func ExampleFake_Handle() {
	var fake nettest.Fake
	defer fake.Close()
	fake.Handle("api.example.com:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))

	pol, _ := policy.New(policy.Spec{Net: policy.NetSpec{Rules: []policy.NetRule{{Host: "api.example.com", Ports: []string{"80"}}}}})
	g, _ := audit.New(pol, audit.WithLogger(quiet), netguard.WithDouble(&fake))
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	resp, err := netguard.NewClient(ctx).Get("http://api.example.com/v1/user")
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, string(b))
	_, err = netguard.NewClient(ctx).Get("http://metadata.example.com/")
	fmt.Println("other host denied:", err != nil)
	fmt.Println("verify:", fake.Verify())
	// Output:
	// 200 OK {"path":"/v1/user"}
	// other host denied: true
	// verify: <nil>
}

// Expect scripts a conversation, step by step, for a dial.
func ExampleFake_Expect() {
	var fake nettest.Fake
	defer fake.Close()
	fake.Expect("tcp", "127.0.0.1:6379").Recv("PING\r\n").Send("+PONG\r\n")

	pol, _ := policy.New(policy.Spec{Net: policy.NetSpec{Rules: []policy.NetRule{{CIDR: "127.0.0.1", Ports: []string{"6379"}}}}})
	g, _ := audit.New(pol, audit.WithLogger(quiet), netguard.WithDouble(&fake))
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	var d netguard.Dialer
	c, err := d.DialContext(ctx, "tcp", "127.0.0.1:6379")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	io.WriteString(c, "PING\r\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Printf("%q\n", line)
	fmt.Println("verify:", fake.Verify())
	// Output:
	// "+PONG\r\n"
	// verify: <nil>
}
