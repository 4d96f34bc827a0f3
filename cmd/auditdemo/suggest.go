package main

import (
	"fmt"
	"io"
)

func cmdSuggest(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "auditdemo suggest: not built yet")
	return 2
}
