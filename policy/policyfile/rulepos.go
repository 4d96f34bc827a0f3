package policyfile

import (
	"strconv"
	"strings"

	"github.com/auditguard/auditguard/policy"
)

// fileRule is where one exec or net rule of a policy file is written: the
// position of its table ("[[exec.allow]]" header or inline table) and its
// dotted key ("exec.allow[2]"). Its Source is file:line of that position.
type fileRule struct {
	file  string
	at    filePos
	key   string
	value string // the program, or the host, CIDR or path: tells apart rules on one line
}

func (r fileRule) source() string { return r.file + ":" + strconv.Itoa(r.at.line) }

// ruleEntryError maps a Builder error about an exec or net rule back to the
// rule's position in its file, by the rule's Source. It returns nil when the
// error is not about a rule loaded from one of specs.
func ruleEntryError(specs []*fileSpec, ee *policy.EntryError) *FileError {
	var rules []fileRule
	for _, s := range specs {
		switch ee.Field {
		case "exec rule":
			rules = append(rules, s.exec.rules...)
		case "net rule":
			rules = append(rules, s.net.rules...)
		}
	}
	var found *fileRule
	for i, r := range rules {
		if r.source() != ee.Source {
			continue
		}
		// Rules written on one line (inline tables) share a source: prefer
		// the one whose program or address the error names.
		if found == nil || (!strings.Contains(ee.Value, found.value) && strings.Contains(ee.Value, r.value)) {
			found = &rules[i]
		}
	}
	if found == nil {
		return nil
	}
	return &FileError{File: found.file, Line: found.at.line, Col: found.at.col, Key: found.key,
		Msg: strconv.Quote(ee.Value) + ": " + ee.Err.Error(), Err: ee}
}
