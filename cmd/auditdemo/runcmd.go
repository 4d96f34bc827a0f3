package main

import (
	"fmt"
	"io"
)

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "auditdemo run: not built yet")
	return 2
}
