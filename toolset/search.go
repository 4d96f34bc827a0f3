package toolset

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// GlobInput is the glob tool's input.
type GlobInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"` // the workspace when empty
}

// GrepInput is the grep tool's input.
type GrepInput struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path,omitempty"` // the workspace when empty
	Glob       string `json:"glob,omitempty"`
	IgnoreCase bool   `json:"ignore_case,omitempty"`
	MaxResults int    `json:"max_results,omitempty"` // 200 when 0
}

const (
	maxGlobResults   = 1000
	defaultGrepHits  = 200
	maxGrepLineRunes = 400
)

// maxWalkEntries is how many entries one walk visits at most (a variable
// for tests).
var maxWalkEntries = 200_000

// walker visits every entry under a directory (not following links to
// directories), in lexical order, through the guard. An entry the policy
// forbids reading is passed to denied (dir: a directory that could not be
// entered) and not to fn; fn gets the entry's path relative to the
// start, in slash form. .git directories are not entered unless withGit.
// A false from fn stops the walk.
type walker struct {
	e       *env
	withGit bool
	denied  func(abs, rel string, dir bool)
	visited int
	tooMany bool // stopped at maxWalkEntries
}

// note says the walk stopped early, if it did.
func (w *walker) note(b *strings.Builder) {
	if w.tooMany {
		fmt.Fprintf(b, "[stopped after %d entries: the tree is too large; narrow the path]\n", maxWalkEntries)
	}
}

func (w *walker) walk(abs, rel string, fn func(abs, rel string, d fs.FileInfo) bool) bool {
	names, err := w.e.readDirNames(abs)
	if err != nil {
		if isDenied(err) {
			w.denied(abs, rel, true)
		}
		return true
	}
	sort.Strings(names)
	for _, name := range names {
		if w.visited++; w.visited > maxWalkEntries {
			w.tooMany = true
			return false
		}
		full := filepath.Join(abs, name)
		r := path.Join(rel, name)
		fi, _, err := w.e.fs.LstatIfPossible(full)
		if err != nil {
			if isDenied(err) {
				w.denied(full, r, false)
			}
			continue
		}
		if !fn(full, r, fi) {
			return false
		}
		if fi.IsDir() && (w.withGit || name != ".git") {
			if !w.walk(full, r, fn) {
				return false
			}
		}
	}
	return true
}

// matchGlob reports whether the slash path rel matches pattern: path.Match
// per segment, with ** standing for any number of segments.
func matchGlob(pattern, rel string) bool {
	return matchSegs(strings.Split(pattern, "/"), strings.Split(rel, "/"))
}

func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if matchSegs(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// mayHold reports whether something under the directory rel could match
// pattern: whether rel's segments can begin a matching path.
func mayHold(pattern, rel string) bool {
	pat, segs := strings.Split(pattern, "/"), strings.Split(rel, "/")
	for len(segs) > 0 {
		if len(pat) == 0 {
			return false
		}
		if pat[0] == "**" {
			return true
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(pat) > 0
}

// checkGlob says what is wrong with a pattern, or nil.
func checkGlob(pattern string) error {
	if strings.HasPrefix(pattern, "/") {
		return inputErr("the pattern %q is absolute; give the directory as path and the pattern relative to it", pattern)
	}
	for _, seg := range strings.Split(pattern, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return inputErr("the pattern %q is malformed (an unclosed [ or a trailing \\)", pattern)
		}
	}
	return nil
}

// searchRoot is the directory a glob or grep starts from.
func (s *Set) searchRoot(p string) string {
	if p == "" {
		return s.ws
	}
	return s.abs(p)
}

func deniedNote(b *strings.Builder, denied []string, s *Set) {
	if len(denied) == 0 {
		return
	}
	fmt.Fprintf(b, "\nskipped, read denied by policy (%d): ", len(denied))
	for i, d := range denied {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.display(d))
	}
	b.WriteByte('\n')
}

// Glob is the glob tool: the paths under path matching pattern, sorted.
func (s *Set) Glob(ctx context.Context, in GlobInput) (Result, error) {
	return call(s, ctx, "glob", in, func(e *env, in GlobInput) (string, error) {
		if in.Pattern == "" {
			return "", inputErr("pattern is required")
		}
		if err := checkGlob(in.Pattern); err != nil {
			return "", err
		}
		root := s.searchRoot(in.Path)
		if err := e.isDir(root); err != nil {
			return "", err
		}
		var matches, denied []string
		w := &walker{e: e, withGit: strings.Contains(in.Pattern, ".git"), denied: func(abs, rel string, dir bool) {
			if matchGlob(in.Pattern, rel) || mayHold(in.Pattern, rel) {
				denied = append(denied, abs)
			}
		}}
		more := false
		w.walk(root, "", func(abs, rel string, _ fs.FileInfo) bool {
			if matchGlob(in.Pattern, rel) {
				if len(matches) == maxGlobResults {
					more = true
					return false
				}
				matches = append(matches, s.display(abs))
			}
			return true
		})
		var b strings.Builder
		if len(matches) == 0 {
			fmt.Fprintf(&b, "no paths under %s match %q\n", s.display(root), in.Pattern)
		}
		for _, m := range matches {
			b.WriteString(m)
			b.WriteByte('\n')
		}
		if more {
			fmt.Fprintf(&b, "[stopped at %d matches; narrow the pattern or the path]\n", maxGlobResults)
		}
		w.note(&b)
		deniedNote(&b, denied, s)
		return b.String(), nil
	})
}

// isDir says p is a directory, or why not in the model's terms.
func (e *env) isDir(p string) error {
	fi, err := e.fs.Stat(p)
	if err != nil {
		return e.fsErr(err, p)
	}
	if !fi.IsDir() {
		return inputErr("%s is a file, not a directory", e.set.display(p))
	}
	return nil
}

// Grep is the grep tool: every line matching a regular expression in the
// text files under path. Files the policy forbids reading are skipped
// and listed, never printed.
func (s *Set) Grep(ctx context.Context, in GrepInput) (Result, error) {
	return call(s, ctx, "grep", in, func(e *env, in GrepInput) (string, error) {
		if in.Pattern == "" {
			return "", inputErr("pattern is required")
		}
		expr := in.Pattern
		if in.IgnoreCase {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return "", inputErr("the pattern is not a valid RE2 regular expression: %v", errors.Unwrap(err))
		}
		if in.Glob != "" {
			if err := checkGlob(in.Glob); err != nil {
				return "", err
			}
		}
		if in.MaxResults < 0 {
			return "", inputErr("max_results must be positive")
		}
		limit := in.MaxResults
		if limit == 0 {
			limit = defaultGrepHits
		}
		root := s.searchRoot(in.Path)
		fi, err := e.fs.Stat(root)
		if err != nil {
			return "", e.fsErr(err, root)
		}
		g := &grepper{e: e, re: re, limit: limit}
		var w *walker
		if !fi.IsDir() {
			g.file(root)
		} else {
			wanted := func(rel string) bool {
				return in.Glob == "" || matchGlob(in.Glob, rel) || (!strings.Contains(in.Glob, "/") && matchGlob(in.Glob, path.Base(rel)))
			}
			w = &walker{e: e, denied: func(abs, rel string, dir bool) {
				// A denied entry may be a directory (its type is not read):
				// it counts when what the glob takes could lie under it.
				if wanted(rel) || in.Glob == "" || !strings.Contains(in.Glob, "/") || mayHold(in.Glob, rel) {
					g.denied = append(g.denied, abs)
				}
			}}
			w.walk(root, "", func(abs, rel string, fi fs.FileInfo) bool {
				if !fi.Mode().IsRegular() || !wanted(rel) {
					return true
				}
				return g.file(abs)
			})
		}
		var b strings.Builder
		b.WriteString(g.out.String())
		if g.hits == 0 {
			fmt.Fprintf(&b, "no matches for %q in %s (%d files searched)\n", in.Pattern, s.display(root), g.files)
		} else if g.full {
			fmt.Fprintf(&b, "[stopped at %d matching lines; narrow the pattern, path or glob, or raise max_results]\n", limit)
		}
		if w != nil {
			w.note(&b)
		}
		if g.binary > 0 {
			fmt.Fprintf(&b, "(%d binary files skipped)\n", g.binary)
		}
		if len(g.big) > 0 {
			fmt.Fprintf(&b, "(skipped, larger than %d bytes: %s)\n", s.opts.MaxFileBytes, strings.Join(g.big, ", "))
		}
		deniedNote(&b, g.denied, s)
		return b.String(), nil
	})
}

type grepper struct {
	e      *env
	re     *regexp.Regexp
	limit  int
	hits   int
	files  int
	binary int
	full   bool
	big    []string
	denied []string
	out    strings.Builder
	br     *bufio.Reader // reused from file to file
}

// file searches one file; false once the limit is reached.
func (g *grepper) file(abs string) bool {
	f, err := g.e.fs.Open(abs)
	if err != nil {
		if isDenied(err) {
			g.denied = append(g.denied, abs)
		}
		return true
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > g.e.set.opts.MaxFileBytes {
		g.big = append(g.big, g.e.set.display(abs))
		return true
	}
	g.files++
	if g.br == nil {
		g.br = bufio.NewReaderSize(f, 4*sniffLen)
	} else {
		g.br.Reset(f)
	}
	br := g.br
	head, _ := br.Peek(sniffLen)
	if binaryKind(head, len(head) < sniffLen) != "" {
		g.binary++
		return true
	}
	name := g.e.set.display(abs)
	for line := 1; ; line++ {
		text, err := br.ReadString('\n')
		if text == "" && err != nil {
			break
		}
		text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
		if g.re.MatchString(text) {
			if g.hits == g.limit {
				g.full = true
				return false
			}
			g.hits++
			if utf8.RuneCountInString(text) > maxGrepLineRunes {
				text = string([]rune(text)[:maxGrepLineRunes]) + " [line cut]"
			}
			fmt.Fprintf(&g.out, "%s:%d: %s\n", name, line, text)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return true
		}
	}
	return true
}
