package proctest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard"
	"github.com/auditguard/auditguard/procguard/proctest"
)

// Installed on a guard, the fake serves procguard.CommandContext: the
// policy decides first, then the script plays; nothing is spawned.
func ExampleFake() {
	dir, _ := os.MkdirTemp("", "proctest")
	defer os.RemoveAll(dir)
	dir, _ = filepath.EvalSymlinks(dir)

	var fake proctest.Fake
	fake.Expect("git", "rev-list", "--count", "HEAD").Stdout("42\n")
	fake.ExpectPrefix("git", "log").Stdout("abc123 fix\n").AnyTimes()

	pol, _ := policy.New(policy.Spec{WriteRoots: []string{dir},
		Exec: policy.ExecSpec{Rules: []policy.ExecRule{{Program: "git", Args: []string{"rev-list"}}, {Program: "git", Args: []string{"log"}}}}})
	g, _ := audit.New(pol, audit.WithLogger(quiet), procguard.WithDouble(&fake))
	ctx, release, _ := g.Enter(context.Background())
	defer release()

	cmd := procguard.CommandContext(ctx, "git", "rev-list", "--count", "HEAD")
	cmd.Dir = dir
	out, err := cmd.Output()
	fmt.Printf("%q %v\n", out, err)

	cmd = procguard.CommandContext(ctx, "git", "push") // no rule: denied before the fake
	cmd.Dir = dir
	fmt.Println("push denied:", errors.Is(cmd.Run(), audit.ErrDenied))

	fmt.Println("calls:", len(fake.Calls()), "verify:", fake.Verify())
	// Output:
	// "42\n" <nil>
	// push denied: true
	// calls: 1 verify: <nil>
}

// countCommits is host code written against procguard.Runner.
func countCommits(ctx context.Context, r procguard.Runner) (string, error) {
	res, err := r.Run(ctx, procguard.Request{Name: "git", Args: []string{"rev-list", "--count", "HEAD"}})
	if err != nil {
		return "", err
	}
	return string(res.Stdout), nil
}

// The fake is also a procguard.Runner; without a scope in ctx it plays
// without a policy.
func ExampleFake_Run() {
	var fake proctest.Fake
	fake.Expect("git", "rev-list", "--count", "HEAD").Stdout("42\n")

	n, err := countCommits(context.Background(), &fake)
	fmt.Printf("%q %v\n", n, err)

	_, err = fake.Run(context.Background(), procguard.Request{Name: "git", Args: []string{"push"}})
	fmt.Println("unexpected command:", errors.Is(err, proctest.ErrUnexpected))
	fmt.Println("unexpected:", len(fake.Unexpected()), "unused:", len(fake.Unused()))
	// Output:
	// "42\n" <nil>
	// unexpected command: true
	// unexpected: 1 unused: 0
}
