package proctest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/proctest"
)

// countCommits is host code under test: it takes a procguard.Runner, so a
// test can script the program it would run.
func countCommits(ctx context.Context, r procguard.Runner) (string, error) {
	res, err := r.Run(ctx, procguard.Request{Name: "git", Args: []string{"rev-list", "--count", "HEAD"}})
	if err != nil {
		return "", err
	}
	return string(res.Stdout), nil
}

func ExampleFake() {
	var fake proctest.Fake
	fake.On([]string{"git", "rev-list", "--count", "HEAD"}, proctest.Response{Stdout: "42\n"})

	n, err := countCommits(context.Background(), &fake)
	fmt.Printf("%q %v\n", n, err)

	_, err = fake.Run(context.Background(), procguard.Request{Name: "git", Args: []string{"push"}})
	fmt.Println("unexpected command:", errors.Is(err, proctest.ErrUnexpected))
	fmt.Println("calls:", len(fake.Calls()), "unused responses:", len(fake.Unused()))
	// Output:
	// "42\n" <nil>
	// unexpected command: true
	// calls: 2 unused responses: 0
}
