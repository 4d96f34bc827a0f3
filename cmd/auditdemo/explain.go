package main

import (
	"fmt"
	"io"
)

func cmdExplain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "auditdemo explain: not built yet")
	return 2
}
