package main

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Merging writes suggest's additions into the policy file the log was
// written under, keeping the file as it is everywhere else (comments,
// order, layout), so that the result reads as the old file plus the
// additions and a diff shows only them:
//
//   - write and read roots go into the file's [fs] write_roots and
//     read_roots lists (a TOML list cannot be extended from a second
//     place), before the closing bracket; a list the file lacks is added
//     under its [fs] header, and an [fs] table it lacks is appended;
//   - [[exec.allow]] and [[net.allow]] tables are appended at the end (an
//     array of tables may continue anywhere in the file);
//   - unless modes are kept, a "warn" mode in [modes] becomes "enforce":
//     the merged policy is the one to enforce once the additions are
//     reviewed ("off" stays: it was chosen for its own reason);
//   - the denials no addition overturns follow as comments.
//
// The caller loads the result before printing it: a merge that does not
// load is an error, never output.

// tomlDoc is where the keys of a policy file are written.
type tomlDoc struct {
	data []byte
	// lists maps "fs.write_roots" to the offset of its array's closing
	// bracket and the offset just after its last element (or its opening
	// bracket when empty).
	lists map[string]listAt
	// headers maps a [table] header ("fs") to the offset of the line after
	// it.
	headers map[string]int
	// keys holds every dotted key path the file sets or opens as a table,
	// and its prefixes ("fs", "fs.write_roots").
	keys map[string]bool
	// tableArrays holds the [[array.of.tables]] the file has ("exec.allow").
	tableArrays map[string]bool
	// modes are the [modes] values as written, by the byte range of the
	// string.
	modes []modeAt
}

type listAt struct {
	lastElemEnd int // after the last element; the '[' + 1 when empty
	closing     int // the ']'
	empty       bool
}

type modeAt struct {
	key        string // "modes.fs"
	value      string
	start, end int // of the quoted string
}

// scanTOML finds where the keys of data are written. data must be valid
// TOML (it was loaded first).
func scanTOML(data []byte) (*tomlDoc, error) {
	d := &tomlDoc{data: data, lists: map[string]listAt{}, headers: map[string]int{},
		keys: map[string]bool{}, tableArrays: map[string]bool{}}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		var key []string
		var last *unstable.Node
		for it := e.Key(); it.Next(); {
			last = it.Node()
			key = append(key, string(last.Data))
		}
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = key
			d.addKeys(key)
			name := strings.Join(key, ".")
			if e.Kind == unstable.ArrayTable {
				d.tableArrays[name] = true
				continue
			}
			if last != nil {
				if nl := bytes.IndexByte(data[last.Raw.Offset:], '\n'); nl >= 0 {
					d.headers[name] = int(last.Raw.Offset) + nl + 1
				} else {
					d.headers[name] = len(data)
				}
			}
		case unstable.KeyValue:
			full := append(slices.Clone(table), key...)
			d.addKeys(full)
			name := strings.Join(full, ".")
			v := e.Value()
			switch v.Kind {
			case unstable.Array:
				end := int(e.Raw.Offset + e.Raw.Length)
				if e.Raw.Length == 0 || end > len(data) || data[end-1] != ']' {
					return nil, fmt.Errorf("cannot find the end of %s", name)
				}
				at := listAt{closing: end - 1, empty: true}
				for it := v.Children(); it.Next(); {
					n := it.Node()
					at.lastElemEnd = int(n.Raw.Offset + n.Raw.Length)
					at.empty = false
				}
				if at.empty {
					at.lastElemEnd = bytes.LastIndexByte(data[:at.closing], '[') + 1
				}
				d.lists[name] = at
			case unstable.String:
				if len(full) == 2 && full[0] == "modes" && v.Raw.Length > 0 {
					d.modes = append(d.modes, modeAt{key: name, value: string(v.Data),
						start: int(v.Raw.Offset), end: int(v.Raw.Offset + v.Raw.Length)})
				}
			}
		}
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *tomlDoc) addKeys(key []string) {
	for i := range key {
		d.keys[strings.Join(key[:i+1], ".")] = true
	}
}

// edit is one insertion or replacement at a byte offset of the original.
type edit struct {
	start, end int // replaced range; start == end inserts
	text       string
}

// mergePolicy returns base with the additions written into it (see the
// comment at the top of this file).
func (s *suggester) mergePolicy(base []byte, keepModes bool, logName string) ([]byte, error) {
	d, err := scanTOML(base)
	if err != nil {
		return nil, err
	}
	a := s.additions()
	var edits []edit
	var appendFS bytes.Buffer
	for _, l := range []struct {
		key  string
		list []entry
	}{{"write_roots", a.writeRoots}, {"read_roots", a.readRoots}} {
		if len(l.list) == 0 {
			continue
		}
		var elems bytes.Buffer
		writeElements(&elems, l.list)
		name := "fs." + l.key
		if at, ok := d.lists[name]; ok {
			if !at.empty && !d.commaAfter(at.lastElemEnd, at.closing) {
				edits = append(edits, edit{at.lastElemEnd, at.lastElemEnd, ","})
			}
			// Before the bracket, on lines of their own: at the start of
			// the bracket's line when nothing else is on it.
			lineStart := bytes.LastIndexByte(base[:at.closing], '\n') + 1
			if strings.TrimSpace(string(base[lineStart:at.closing])) == "" && lineStart > at.lastElemEnd {
				edits = append(edits, edit{lineStart, lineStart, elems.String()})
			} else {
				edits = append(edits, edit{at.closing, at.closing, "\n" + elems.String()})
			}
			continue
		}
		if d.keys[name] {
			return nil, fmt.Errorf("%s is not written as a list; add the entries by hand", name)
		}
		list := l.key + " = [\n" + elems.String() + "]\n"
		switch off, ok := d.headers["fs"]; {
		case ok:
			edits = append(edits, edit{off, off, list})
		case d.keys["fs"]:
			return nil, errors.New("[fs] is written with dotted keys or as an inline table; add the entries by hand")
		default:
			appendFS.WriteString(list)
		}
	}
	for _, t := range []struct {
		key string
		n   int
	}{{"exec.allow", len(a.execAllow)}, {"net.allow", len(a.netAllow)}} {
		if t.n > 0 && d.keys[t.key] && !d.tableArrays[t.key] {
			return nil, fmt.Errorf("%s is written as an inline array; add the [[%s]] tables by hand", t.key, t.key)
		}
	}
	if !keepModes {
		for _, m := range d.modes {
			if m.value == "warn" {
				edits = append(edits, edit{m.start, m.end, `"enforce"`})
			}
		}
	}

	slices.SortStableFunc(edits, func(x, y edit) int { return x.start - y.start })
	var out bytes.Buffer
	prev := 0
	for _, e := range edits {
		out.Write(base[prev:e.start])
		out.WriteString(e.text)
		prev = e.end
	}
	out.Write(base[prev:])

	var tail bytes.Buffer
	if appendFS.Len() > 0 {
		tail.WriteString("\n[fs]\n")
		tail.Write(appendFS.Bytes())
	}
	writeTables(&tail, a)
	s.writeCannot(&tail)
	if tail.Len() > 0 {
		if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
			out.WriteByte('\n')
		}
		fmt.Fprintf(&out, "\n# Added by auditdemo suggest from %s.\n", oneLine(logName))
		out.Write(bytes.TrimLeft(tail.Bytes(), "\n"))
	}
	return out.Bytes(), nil
}

// commaAfter reports whether a comma follows the last element of a list
// before its closing bracket (only blanks, newlines and comments may sit
// between them).
func (d *tomlDoc) commaAfter(from, closing int) bool {
	for i := from; i < closing; i++ {
		switch c := d.data[i]; c {
		case ',':
			return true
		case '#':
			for i < closing && d.data[i] != '\n' {
				i++
			}
		}
	}
	return false
}
