package toolset

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/auditguard/auditguard/policy"
)

// ReadInput is the read tool's input.
type ReadInput struct {
	Path   string `json:"path"`
	Offset int    `json:"offset,omitempty"` // first line, 1-based (1 when 0)
	Limit  int    `json:"limit,omitempty"`  // lines (Options.MaxReadLines when 0)
}

// WriteInput is the write tool's input.
type WriteInput struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// EditInput is the edit tool's input.
type EditInput struct {
	Path       string `json:"path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

// ListInput is the list tool's input.
type ListInput struct {
	Path string `json:"path,omitempty"` // the workspace when empty
}

// maxLineRunes is where read cuts one long line.
const maxLineRunes = 2000

// sniffLen is how much of a file decides whether it is text.
const sniffLen = 8 << 10

func (s *Set) fileTools() []*Tool {
	return []*Tool{
		newTool("read", "Read a text file, with line numbers (\"   12\\tline\"). Give offset (1-based first line) and limit (number of lines) to page through a long file. Binary files are refused. Paths are relative to the workspace unless absolute.",
			[]param{
				{name: "path", typ: "string", desc: "the file to read", required: true},
				{name: "offset", typ: "integer", desc: "the first line to show, 1-based (default 1)", min: minimum(1)},
				{name: "limit", typ: "integer", desc: fmt.Sprintf("how many lines to show (default %d)", s.opts.MaxReadLines), min: minimum(1)},
			}, s.Read),
		newTool("write", "Write a file whole: create it (and its missing parent directories) or replace its contents. To change part of a file, use edit.",
			[]param{
				{name: "path", typ: "string", desc: "the file to write", required: true},
				{name: "content", typ: "string", desc: "the file's whole new contents", required: true},
			}, s.Write),
		newTool("edit", "Replace exact text in a file. old_string must occur exactly once (copy it from read's output without the line numbers, with its whitespace), unless replace_all is true. Fails, changing nothing, when old_string is missing or occurs more than once.",
			[]param{
				{name: "path", typ: "string", desc: "the file to edit", required: true},
				{name: "old_string", typ: "string", desc: "the exact text to replace", required: true},
				{name: "new_string", typ: "string", desc: "the text to put in its place", required: true},
				{name: "replace_all", typ: "boolean", desc: "replace every occurrence (default false)"},
			}, s.Edit),
		newTool("glob", "Find files by name pattern: * and ? within a name, ** for any number of directories, [abc] for one of the characters (\"**/*.go\", \"cmd/*/main.go\"). Lists matching paths, sorted.",
			[]param{
				{name: "pattern", typ: "string", desc: "the pattern, relative to path", required: true},
				{name: "path", typ: "string", desc: "the directory to search (default the workspace)"},
			}, s.Glob),
		newTool("grep", "Search file contents with a regular expression (RE2 syntax: no backreferences or lookaround). Prints path:line: text for each matching line. Binary files and .git directories are skipped; files the policy forbids reading are skipped and listed.",
			[]param{
				{name: "pattern", typ: "string", desc: "the regular expression", required: true},
				{name: "path", typ: "string", desc: "a file or directory to search (default the workspace)"},
				{name: "glob", typ: "string", desc: "search only files whose path (relative to path) matches this pattern, e.g. \"*.go\" or \"**/*_test.go\""},
				{name: "ignore_case", typ: "boolean", desc: "match without regard to case (default false)"},
				{name: "max_results", typ: "integer", desc: "stop after this many matching lines (default 200)", min: minimum(1)},
			}, s.Grep),
		newTool("list", "List a directory: one entry per line, directories ending in /, symbolic links as name -> target, files with their size.",
			[]param{
				{name: "path", typ: "string", desc: "the directory (default the workspace)"},
			}, s.List),
	}
}

// fsErr turns a filesystem error into one the model can act on: a denial
// stays a denial; a missing name is invalid input.
func (e *env) fsErr(err error, path string) error {
	switch {
	case isDenied(err):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return inputErr("%s does not exist (paths are relative to the workspace %s unless absolute; use list or glob to find it)", e.set.display(path), e.set.ws)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %s: %w", e.set.display(path), pe.Err.Error(), err)
	}
	return err
}

// Read is the read tool: lines offset to offset+limit-1 of a text file,
// numbered.
func (s *Set) Read(ctx context.Context, in ReadInput) (Result, error) {
	return call(s, ctx, "read", in, func(e *env, in ReadInput) (string, error) {
		if in.Path == "" {
			return "", inputErr("path is required")
		}
		if in.Offset < 0 || in.Limit < 0 {
			return "", inputErr("offset and limit must be positive")
		}
		offset, limit := max(in.Offset, 1), in.Limit
		if limit == 0 {
			limit = s.opts.MaxReadLines
		}
		p := s.abs(in.Path)
		f, err := e.fs.Open(p)
		if err != nil {
			return "", e.fsErr(err, p)
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return "", inputErr("%s is a directory; use the list tool to see what it holds", s.display(p))
		}
		br := bufio.NewReaderSize(f, 2*sniffLen)
		head, _ := br.Peek(sniffLen)
		if kind := binaryKind(head, len(head) < sniffLen); kind != "" {
			return "", inputErr("%s is a binary file (%s), not text; read shows text files only", s.display(p), kind)
		}
		var out strings.Builder
		line, shown := 0, 0
		for {
			text, err := br.ReadString('\n')
			if text == "" && err != nil {
				if err != io.EOF {
					return "", e.fsErr(err, p)
				}
				break
			}
			line++
			if line >= offset {
				if shown == limit {
					fmt.Fprintf(&out, "[more lines follow: call read with offset=%d to continue]\n", line)
					return out.String(), nil
				}
				text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
				if !utf8.ValidString(text) {
					return "", inputErr("%s is not UTF-8 text (line %d); read shows text files only", s.display(p), line)
				}
				if utf8.RuneCountInString(text) > maxLineRunes {
					text = string([]rune(text)[:maxLineRunes]) + " [line cut]"
				}
				fmt.Fprintf(&out, "%6d\t%s\n", line, text)
				shown++
			}
			if err != nil {
				break
			}
		}
		switch {
		case line == 0:
			return fmt.Sprintf("(%s is empty)\n", s.display(p)), nil
		case shown == 0:
			return "", inputErr("offset %d is past the end of %s, which has %d lines", offset, s.display(p), line)
		}
		return out.String(), nil
	})
}

// binaryKind says why b (a file's head, or all of it) is not text, or "".
// A cut rune at the end of a head is not held against it.
func binaryKind(b []byte, whole bool) string {
	if bytes.IndexByte(b, 0) >= 0 {
		return "it holds NUL bytes"
	}
	if !whole {
		// The head's end may cut a rune: leave out an incomplete last one.
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	if !utf8.Valid(b) {
		return "it is not valid UTF-8"
	}
	return ""
}

// Write is the write tool: the whole file, created with its missing
// parents, or replaced. A denied write creates no directory.
func (s *Set) Write(ctx context.Context, in WriteInput) (Result, error) {
	return call(s, ctx, "write", in, func(e *env, in WriteInput) (string, error) {
		if in.Path == "" {
			return "", inputErr("path is required")
		}
		p := s.abs(in.Path)
		// Decide the write before making its directories, so a denied
		// write leaves nothing behind. Check is a dry run and records
		// nothing: the denial is then made for real (and recorded) by an
		// open for writing that neither creates nor truncates, so even a
		// policy that changed in between sees no change made.
		if d := e.fs.Check(policy.OpWrite, p); !d.Allowed && isDenied(d.Err) {
			if f, err := e.fs.OpenFile(p, os.O_WRONLY, 0); err != nil {
				return "", e.fsErr(err, p)
			} else {
				f.Close()
			}
			return "", d.Err
		}
		existed := false
		if fi, err := e.fs.Stat(p); err == nil {
			if fi.IsDir() {
				return "", inputErr("%s is a directory; give the path of a file", s.display(p))
			}
			existed = true
		} else if errors.Is(err, fs.ErrNotExist) {
			if err := e.fs.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", e.fsErr(err, filepath.Dir(p))
			}
		}
		if err := writeFile(e, p, []byte(in.Content)); err != nil {
			return "", e.fsErr(err, p)
		}
		verb := "created"
		if existed {
			verb = "replaced"
		}
		return fmt.Sprintf("%s %s: %d bytes, %d lines", verb, s.display(p), len(in.Content), lineCount(in.Content)), nil
	})
}

// writeFile writes data to p through the guard: the decision is made at
// open, before the file is truncated. An existing file keeps its mode.
func writeFile(e *env, p string, data []byte) error {
	f, err := e.fs.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// Edit is the edit tool: an exact replacement of old_string by
// new_string, once, or everywhere with replace_all. The file is
// untouched when the old text is missing or ambiguous, or the write is
// denied.
func (s *Set) Edit(ctx context.Context, in EditInput) (Result, error) {
	return call(s, ctx, "edit", in, func(e *env, in EditInput) (string, error) {
		switch {
		case in.Path == "":
			return "", inputErr("path is required")
		case in.OldString == "":
			return "", inputErr("old_string is empty; give the exact text to replace (to write a whole file, use write)")
		case in.OldString == in.NewString:
			return "", inputErr("old_string and new_string are the same; there is nothing to change")
		}
		p := s.abs(in.Path)
		data, err := e.readText(p)
		if err != nil {
			return "", err
		}
		text := string(data)
		n := strings.Count(text, in.OldString)
		switch {
		case n == 0:
			msg := fmt.Sprintf("old_string was not found in %s; nothing was changed. Read the file again and copy the text exactly, whitespace and indentation included, without the line-number prefix", s.display(p))
			if strings.Contains(strings.Join(strings.Fields(text), " "), strings.Join(strings.Fields(in.OldString), " ")) {
				msg += " (the text is there with different whitespace)"
			}
			return "", inputErr("%s", msg)
		case n > 1 && !in.ReplaceAll:
			return "", inputErr("old_string occurs %d times in %s (lines %s); nothing was changed. Include more surrounding lines to make it unique, or set replace_all to replace every occurrence", n, s.display(p), occurrenceLines(text, in.OldString, 10))
		}
		first := strings.Index(text, in.OldString)
		var out string
		if in.ReplaceAll {
			out = strings.ReplaceAll(text, in.OldString, in.NewString)
		} else {
			out = text[:first] + in.NewString + text[first+len(in.OldString):]
		}
		if err := writeFile(e, p, []byte(out)); err != nil {
			return "", e.fsErr(err, p)
		}
		line := strings.Count(text[:first], "\n") + 1
		return fmt.Sprintf("edited %s: %d replacement(s), the first at line %d\n%s", s.display(p), map[bool]int{true: n, false: 1}[in.ReplaceAll], line,
			numbered(out, line-2, lineCount(in.NewString)+4)), nil
	})
}

// readText reads a whole text file through the guard, with the errors
// read gives.
func (e *env) readText(p string) ([]byte, error) {
	f, err := e.fs.Open(p)
	if err != nil {
		return nil, e.fsErr(err, p)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, inputErr("%s is a directory, not a file", e.set.display(p))
	}
	data, over, err := readAll(f, e.set.opts.MaxFileBytes)
	if err != nil {
		return nil, e.fsErr(err, p)
	}
	if over {
		return nil, inputErr("%s is larger than %d bytes; this tool takes it whole and cannot", e.set.display(p), e.set.opts.MaxFileBytes)
	}
	if kind := binaryKind(data, true); kind != "" {
		return nil, inputErr("%s is a binary file (%s), not text", e.set.display(p), kind)
	}
	return data, nil
}

// occurrenceLines lists the lines old occurs at in text, up to n of them.
func occurrenceLines(text, old string, n int) string {
	var lines []string
	at := 0
	for len(lines) < n {
		i := strings.Index(text[at:], old)
		if i < 0 {
			break
		}
		lines = append(lines, fmt.Sprint(strings.Count(text[:at+i], "\n")+1))
		at += i + len(old)
	}
	if strings.Count(text, old) > n {
		lines = append(lines, "...")
	}
	return strings.Join(lines, ", ")
}

// numbered renders n lines of text from line from (1-based), numbered as
// read numbers them.
func numbered(text string, from, n int) string {
	from = max(from, 1)
	lines := strings.SplitAfter(text, "\n")
	var b strings.Builder
	for i := from; i < from+n && i <= len(lines); i++ {
		l := strings.TrimSuffix(lines[i-1], "\n")
		if i == len(lines) && l == "" {
			break
		}
		fmt.Fprintf(&b, "%6d\t%s\n", i, l)
	}
	return b.String()
}

// List is the list tool: a directory's entries, sorted.
func (s *Set) List(ctx context.Context, in ListInput) (Result, error) {
	return call(s, ctx, "list", in, func(e *env, in ListInput) (string, error) {
		p := s.ws
		if in.Path != "" {
			p = s.abs(in.Path)
		}
		names, err := e.readDirNames(p)
		if err != nil {
			return "", err
		}
		sort.Strings(names)
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %d entries\n", s.display(p), len(names))
		for _, name := range names {
			full := filepath.Join(p, name)
			fi, _, err := e.fs.LstatIfPossible(full)
			switch {
			case isDenied(err):
				fmt.Fprintf(&b, "%s  [read denied by policy]\n", name)
			case err != nil:
				fmt.Fprintf(&b, "%s  [%v]\n", name, errors.Unwrap(err))
			case fi.IsDir():
				fmt.Fprintf(&b, "%s/\n", name)
			case fi.Mode()&fs.ModeSymlink != 0:
				target, err := e.fs.ReadlinkIfPossible(full)
				if err != nil {
					target = "?"
				}
				fmt.Fprintf(&b, "%s -> %s\n", name, target)
			default:
				fmt.Fprintf(&b, "%s  (%s)\n", name, size(fi.Size()))
			}
		}
		return b.String(), nil
	})
}

// readDirNames lists a directory through the guard.
func (e *env) readDirNames(p string) ([]string, error) {
	d, err := e.fs.Open(p)
	if err != nil {
		return nil, e.fsErr(err, p)
	}
	defer d.Close()
	if fi, err := d.Stat(); err == nil && !fi.IsDir() {
		return nil, inputErr("%s is a file, not a directory; use read to see it", e.set.display(p))
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, e.fsErr(err, p)
	}
	return names, nil
}

func size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}
