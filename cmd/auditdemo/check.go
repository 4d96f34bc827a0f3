package main

import (
	"fmt"
	"io"
)

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "auditdemo check: not built yet")
	return 2
}
