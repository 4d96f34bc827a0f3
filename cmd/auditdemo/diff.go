package main

import (
	"fmt"
	"strings"
)

// unifiedDiff returns the unified diff (3 lines of context, as diff -u)
// that turns a into b, or "" when they are equal. Policy files are small,
// so the longest common subsequence is found by the plain quadratic
// table rather than Myers' algorithm.
func unifiedDiff(aName, bName string, a, b []byte) string {
	x, y := splitLines(string(a)), splitLines(string(b))
	// lcs[i][j]: the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte // ' ', '-', '+'
		text string
		i, j int // 0-based line numbers in a and b before this line
	}
	var script []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			script = append(script, line{' ', x[i], i, j})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			// Removals before additions, as diff -u prints them.
			script = append(script, line{'-', x[i], i, j})
			i++
		default:
			script = append(script, line{'+', y[j], i, j})
			j++
		}
	}

	const context = 3
	var out strings.Builder
	for k := 0; k < len(script); {
		if script[k].op == ' ' {
			k++
			continue
		}
		// A hunk: from context lines before this change to context lines
		// after the last change that is within 2*context of the next.
		start := max(0, k-context)
		end := k
		for end < len(script) {
			if script[end].op != ' ' {
				end++
				continue
			}
			run := end
			for run < len(script) && script[run].op == ' ' {
				run++
			}
			if run == len(script) || run-end > 2*context {
				end = min(len(script), end+context)
				break
			}
			end = run
		}
		if out.Len() == 0 {
			fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
		}
		var na, nb int
		for _, l := range script[start:end] {
			if l.op != '+' {
				na++
			}
			if l.op != '-' {
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(script[start].i, na), hunkRange(script[start].j, nb))
		for _, l := range script[start:end] {
			out.WriteByte(l.op)
			out.WriteString(l.text)
			if !strings.HasSuffix(l.text, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		k = end
	}
	return out.String()
}

// hunkRange renders "start,count" as diff -u does: 1-based, and the line
// before the hunk when it is empty.
func hunkRange(before, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", before)
	}
	if n == 1 {
		return fmt.Sprintf("%d", before+1)
	}
	return fmt.Sprintf("%d,%d", before+1, n)
}

// splitLines splits s after each newline, keeping them.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}
