package policyfile

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// This file turns TOML text into a small tree whose every key and every
// value, array elements included, knows its line and column. The policy
// schema is then decoded from the tree by hand (load.go), so that an unknown
// key, a wrong type or an invalid value can always be reported where it is
// written, and so that every rule can keep "file:line" as its provenance.
//
// github.com/pelletier/go-toml/v2 is used rather than BurntSushi/toml because
// BurntSushi's MetaData exposes no positions (v1.6.0 keeps them private and
// only reports the line of the first error), while go-toml's parser gives the
// byte range of every key and scalar. The document is first decoded in full
// by go-toml, which enforces the TOML rules (duplicate keys, redefined tables)
// and reports syntax errors with their position; only a valid document is
// walked to build the tree.

// filePos is a 1-based line and column in a policy file.
type filePos struct{ line, col int }

// tkind is the TOML type of a tree value.
type tkind uint8

const (
	tTable tkind = iota + 1
	tArray
	tString
	tBool
	tInt
	tFloat
	tDatetime
)

var tkindNames = [...]string{tTable: "a table", tArray: "an array", tString: "a string",
	tBool: "a boolean", tInt: "an integer", tFloat: "a float", tDatetime: "a date-time"}

func (k tkind) String() string {
	if int(k) < len(tkindNames) && tkindNames[k] != "" {
		return tkindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// tval is one value of the tree.
type tval struct {
	kind tkind
	pos  filePos // where the value is written (its key or header for tables)
	str  string  // string value; raw text of floats and date-times
	b    bool
	i    int64

	elems  []*tval   // arrays
	fields []*tfield // tables, in the order the keys first appear
	byKey  map[string]*tfield
	// tableArray marks an array built from [[header]] sections.
	tableArray bool
}

// tfield is one key of a table with its value.
type tfield struct {
	key string
	pos filePos // where the key is written
	val *tval
}

func newTable(at filePos) *tval { return &tval{kind: tTable, pos: at, byKey: map[string]*tfield{}} }

func (t *tval) field(key string) *tfield { return t.byKey[key] }

func (t *tval) add(key string, at filePos, v *tval) (*tfield, error) {
	if _, dup := t.byKey[key]; dup {
		return nil, fmt.Errorf("key %q is defined twice", key)
	}
	f := &tfield{key: key, pos: at, val: v}
	t.fields = append(t.fields, f)
	t.byKey[key] = f
	return f, nil
}

// tomlSyntaxError is a TOML error that is not about the policy schema.
type tomlSyntaxError struct {
	at  filePos
	key string
	msg string
}

func (e *tomlSyntaxError) Error() string { return e.msg }

// parseTree validates data as TOML and returns its positioned tree.
func parseTree(data []byte) (*tval, error) {
	var check map[string]any
	if err := toml.Unmarshal(data, &check); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, &tomlSyntaxError{at: filePos{line, col}, key: strings.Join(de.Key(), "."),
				msg: strings.TrimPrefix(de.Error(), "toml: ")}
		}
		return nil, &tomlSyntaxError{msg: strings.TrimPrefix(err.Error(), "toml: ")}
	}
	tb := treeBuilder{}
	for i, c := range data {
		if c == '\n' {
			tb.lines = append(tb.lines, i+1)
		}
	}
	tb.p.Reset(data)
	root := newTable(filePos{1, 1})
	cur := root
	for tb.p.NextExpression() {
		e := tb.p.Expression()
		var err error
		switch e.Kind {
		case unstable.KeyValue:
			err = tb.keyValue(cur, e)
		case unstable.Table, unstable.ArrayTable:
			cur, err = tb.header(root, e)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := tb.p.Error(); err != nil {
		return nil, &tomlSyntaxError{msg: err.Error()}
	}
	return root, nil
}

type treeBuilder struct {
	p     unstable.Parser
	lines []int // byte offsets where lines 2, 3, ... start
}

// at returns where n starts, from its byte range, or fallback when the
// parser gives it no range.
func (tb *treeBuilder) at(n *unstable.Node, fallback filePos) filePos {
	if n == nil || n.Raw.Length == 0 {
		return fallback
	}
	off := int(n.Raw.Offset)
	line, _ := slices.BinarySearch(tb.lines, off+1) // lines starting at or before off
	start := 0
	if line > 0 {
		start = tb.lines[line-1]
	}
	return filePos{line + 1, off - start + 1}
}

// descend returns the table named by key under t, creating implicit tables.
// Inside an array of tables it continues in the last element.
func (tb *treeBuilder) descend(t *tval, key string, at filePos) (*tval, error) {
	f := t.field(key)
	if f == nil {
		nt := newTable(at)
		if _, err := t.add(key, at, nt); err != nil {
			return nil, &tomlSyntaxError{at: at, key: key, msg: err.Error()}
		}
		return nt, nil
	}
	switch {
	case f.val.kind == tTable:
		return f.val, nil
	case f.val.kind == tArray && f.val.tableArray && len(f.val.elems) > 0:
		return f.val.elems[len(f.val.elems)-1], nil
	}
	return nil, &tomlSyntaxError{at: at, key: key, msg: fmt.Sprintf("key %q is %s, not a table", key, f.val.kind)}
}

func (tb *treeBuilder) header(root *tval, e *unstable.Node) (*tval, error) {
	var parts []*unstable.Node
	for it := e.Key(); it.Next(); {
		parts = append(parts, it.Node())
	}
	t := root
	for i, k := range parts {
		at := tb.at(k, filePos{})
		name := string(k.Data)
		if i < len(parts)-1 || e.Kind == unstable.Table {
			nt, err := tb.descend(t, name, at)
			if err != nil {
				return nil, err
			}
			if i == len(parts)-1 {
				nt.pos = at // an explicit header says where the table is
			}
			t = nt
			continue
		}
		// The last part of an [[array.of.tables]] header.
		f := t.field(name)
		if f == nil {
			arr := &tval{kind: tArray, pos: at, tableArray: true}
			var err error
			if f, err = t.add(name, at, arr); err != nil {
				return nil, &tomlSyntaxError{at: at, key: name, msg: err.Error()}
			}
		}
		if f.val.kind != tArray || !f.val.tableArray {
			return nil, &tomlSyntaxError{at: at, key: name, msg: fmt.Sprintf("key %q is %s, not an array of tables", name, f.val.kind)}
		}
		nt := newTable(at)
		f.val.elems = append(f.val.elems, nt)
		t = nt
	}
	return t, nil
}

func (tb *treeBuilder) keyValue(t *tval, e *unstable.Node) error {
	var parts []*unstable.Node
	for it := e.Key(); it.Next(); {
		parts = append(parts, it.Node())
	}
	for _, k := range parts[:len(parts)-1] {
		var err error
		if t, err = tb.descend(t, string(k.Data), tb.at(k, filePos{})); err != nil {
			return err
		}
	}
	last := parts[len(parts)-1]
	at := tb.at(last, filePos{})
	v, err := tb.value(e.Value(), at)
	if err != nil {
		return err
	}
	if _, err := t.add(string(last.Data), at, v); err != nil {
		return &tomlSyntaxError{at: at, key: string(last.Data), msg: err.Error()}
	}
	return nil
}

func (tb *treeBuilder) value(n *unstable.Node, fallback filePos) (*tval, error) {
	at := tb.at(n, fallback)
	v := &tval{pos: at}
	switch n.Kind {
	case unstable.String:
		v.kind, v.str = tString, string(n.Data)
	case unstable.Bool:
		v.kind, v.b = tBool, string(n.Data) == "true"
	case unstable.Integer:
		v.kind, v.str = tInt, string(n.Data)
		i, err := strconv.ParseInt(string(n.Data), 0, 64)
		if err != nil {
			return nil, &tomlSyntaxError{at: at, msg: "integer out of range: " + string(n.Data)}
		}
		v.i = i
	case unstable.Float:
		v.kind, v.str = tFloat, string(n.Data)
	case unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		v.kind, v.str = tDatetime, string(n.Data)
	case unstable.Array:
		// An array has no range of its own: it is where its key is.
		v.kind, v.pos = tArray, fallback
		for it := n.Children(); it.Next(); {
			c := it.Node()
			if c.Kind == unstable.Comment {
				continue
			}
			ev, err := tb.value(c, fallback)
			if err != nil {
				return nil, err
			}
			v.elems = append(v.elems, ev)
		}
	case unstable.InlineTable:
		v = newTable(at)
		for it := n.Children(); it.Next(); {
			c := it.Node()
			if c.Kind != unstable.KeyValue {
				continue
			}
			if err := tb.keyValue(v, c); err != nil {
				return nil, err
			}
		}
	default:
		return nil, &tomlSyntaxError{at: at, msg: "unsupported TOML value " + n.Kind.String()}
	}
	return v, nil
}
