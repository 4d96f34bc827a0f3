package policyfile

import (
	"strconv"
	"strings"
)

// FileError is one problem in a policy file, with where it is written.
type FileError struct {
	File string // the file as named to the loader
	Line int    // 1-based; 0 when the problem has no single place
	Col  int    // 1-based; 0 when unknown
	Key  string // the dotted key ("fs.write_roots"), when there is one
	Msg  string // what is wrong
	// Suggest is the key or value that was probably meant ("write_roots").
	Suggest string
	Err     error // the underlying error, if any
}

// Location renders "file:line:col", leaving out what is unknown.
func (e *FileError) Location() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
		if e.Col > 0 {
			s += ":" + strconv.Itoa(e.Col)
		}
	}
	return s
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.Location())
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Suggest != "" {
		b.WriteString(" (did you mean ")
		b.WriteString(strconv.Quote(e.Suggest))
		b.WriteString("?)")
	}
	return b.String()
}

func (e *FileError) Unwrap() error { return e.Err }

// LoadError is every problem found while loading policy files. When it is
// returned nothing was loaded: a policy file is applied whole or not at all.
type LoadError struct {
	Problems []*FileError
}

func (e *LoadError) Error() string {
	if len(e.Problems) == 1 {
		return "policy: " + e.Problems[0].Error()
	}
	var b strings.Builder
	b.WriteString("policy: ")
	b.WriteString(strconv.Itoa(len(e.Problems)))
	b.WriteString(" problems:")
	for _, p := range e.Problems {
		b.WriteString("\n\t")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap lets errors.As find each *FileError.
func (e *LoadError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}
