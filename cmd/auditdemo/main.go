// Command auditdemo shows auditguard at work and helps write policies.
//
// With no arguments it runs a scripted session of over-eager generated code
// through guarded handles, on a temporary workspace and a temporary fake
// home, and prints what was allowed, denied or rescued, by which rule, and
// from which line. It touches nothing outside its temp dirs.
//
//	auditdemo [--log FILE]                     the scripted session
//	auditdemo check --policy FILE              validate; print the effective rules
//	auditdemo explain --policy FILE write PATH | read PATH | exec CMD ARGS... | dial HOST:PORT
//	auditdemo run --policy FILE [--log FILE] [--file-calls] -- CMD ARGS...
//	auditdemo suggest --log FILE                  TOML that would allow a Warn run's would-denies
//	auditdemo suggest --log FILE --policy FILE [--diff] [--keep-modes]  that policy with them merged
//	auditdemo proxy --policy FILE --listen ADDR [--log FILE]  the egress proxy, logging JSON lines
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/auditguard/auditguard/procguard"
)

func main() {
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	procguard.Shutdown() // leave no cgroup of this process behind
	os.Exit(code)
}

const usage = `usage:
  auditdemo [--log FILE]                       run the scripted demonstration
  auditdemo check --policy FILE                validate a policy and print its effective rules
  auditdemo explain --policy FILE write PATH   what would happen to a write, and why
  auditdemo explain --policy FILE read PATH
  auditdemo explain --policy FILE exec CMD ARGS...
  auditdemo explain --policy FILE dial HOST:PORT
  auditdemo run --policy FILE [--log FILE] [--file-calls] -- CMD ARGS...
                                               run a command under procguard and print the decision
  auditdemo suggest --log FILE                 print the narrowest TOML additions that would allow
                                               the would-deny events of a Warn-mode log
  auditdemo suggest --log FILE --policy FILE [--diff] [--keep-modes]
                                               print the policy the log was written under with the
                                               additions merged in and its warn modes set to enforce
                                               (--keep-modes: kept), or a unified diff (--diff)
  auditdemo proxy --policy FILE --listen ADDR [--log FILE]
                                               serve netguard's HTTP and SOCKS5 egress proxy on ADDR
                                               (host:port or unix:/path), logging JSON lines
  auditdemo gocode [--cache DIR]               build and run an over-eager generated Go program in
                                               the sandbox (isolate.RunGo) and show what was refused
`

// run dispatches a command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return cmdDemo(args, stdout, stderr)
	}
	switch args[0] {
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "explain":
		return cmdExplain(args[1:], stdout, stderr)
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "suggest":
		return cmdSuggest(args[1:], stdout, stderr)
	case "proxy":
		return cmdProxy(args[1:], stdout, stderr)
	case "gocode":
		return cmdGocode(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "auditdemo: unknown command %q\n%s", args[0], usage)
	return 2
}

// openLog returns a logger appending audit records as JSON lines to path
// (so a warn-mode trial over several runs keeps every would-deny), or a
// discarding logger when path is empty. close flushes and closes the file.
func openLog(path string) (logger *slog.Logger, close func() error, err error) {
	if path == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil)), func() error { return nil }, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	return slog.New(slog.NewJSONHandler(f, nil)), f.Close, nil
}
