package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
)

// param is one argument of a tool: its schema and how it is checked.
type param struct {
	name     string
	typ      string // JSON Schema type: string, integer, boolean
	desc     string
	required bool
	min      *int64 // minimum, for integers
}

func minimum(v int64) *int64 { return &v }

// schemaOf renders the JSON Schema of an object with params.
func schemaOf(params []param) json.RawMessage {
	type prop struct {
		Type        string `json:"type"`
		Description string `json:"description,omitempty"`
		Minimum     *int64 `json:"minimum,omitempty"`
	}
	props := make(map[string]prop, len(params))
	required := []string{}
	for _, p := range params {
		props[p.name] = prop{Type: p.typ, Description: p.desc, Minimum: p.min}
		if p.required {
			required = append(required, p.name)
		}
	}
	b, err := json.Marshal(struct {
		Type                 string          `json:"type"`
		Properties           map[string]prop `json:"properties"`
		Required             []string        `json:"required"`
		AdditionalProperties bool            `json:"additionalProperties"`
	}{"object", props, required, false})
	if err != nil {
		panic(err) // static data
	}
	return b
}

// newTool makes a Tool whose JSON input is decoded into In, checked
// against params, and passed to fn, the plain Go function.
func newTool[In any](name, desc string, params []param, fn func(context.Context, In) (Result, error)) *Tool {
	t := &Tool{Name: name, Description: desc, InputSchema: schemaOf(params)}
	t.run = func(ctx context.Context, input json.RawMessage) (Result, error) {
		var in In
		if err := decode(input, params, &in); err != nil {
			return Result{}, &Error{Tool: name, ID: CallIDFrom(ctx), Kind: KindInput,
				Msg: err.Error() + "\n(the " + name + " tool's arguments: " + paramList(params) + ")", Err: err}
		}
		return fn(ctx, in)
	}
	return t
}

// decode checks input against params and unmarshals it into dst. Its
// errors name the argument and say what was expected.
func decode(input json.RawMessage, params []param, dst any) error {
	input = bytes.TrimSpace(input)
	if len(input) == 0 || bytes.Equal(input, []byte("null")) {
		input = []byte("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(input, &fields); err != nil {
		return errors.New("the input must be a JSON object of arguments")
	}
	known := map[string]param{}
	for _, p := range params {
		known[p.name] = p
	}
	var unknown []string
	for k := range fields {
		if _, ok := known[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return errors.New("unknown argument " + quoteList(unknown))
	}
	for _, p := range params {
		v, ok := fields[p.name]
		if !ok || bytes.Equal(v, []byte("null")) {
			if p.required {
				return errors.New("missing required argument \"" + p.name + "\" (" + p.typ + ")")
			}
			continue
		}
		if got := jsonType(v); got != p.typ && !(p.typ == "integer" && got == "number" && isInteger(v)) {
			return errors.New("argument \"" + p.name + "\" must be " + article(p.typ) + ", got " + article(got) + " (" + excerpt(string(v), 40) + ")")
		}
		if p.min != nil {
			var n int64
			if json.Unmarshal(v, &n) == nil && n < *p.min {
				return errors.New("argument \"" + p.name + "\" must be at least " + itoa(*p.min) + ", got " + string(v))
			}
		}
	}
	if err := json.Unmarshal(input, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return errors.New("argument \"" + te.Field + "\" has the wrong type: " + te.Value)
		}
		return errors.New("the input could not be read: " + err.Error())
	}
	return nil
}

// jsonType names the JSON type of a value.
func jsonType(v json.RawMessage) string {
	switch v[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case '{':
		return "object"
	case '[':
		return "array"
	case 'n':
		return "null"
	}
	if isInteger(v) {
		return "integer"
	}
	return "number"
}

func isInteger(v json.RawMessage) bool {
	var n int64
	return json.Unmarshal(v, &n) == nil
}

func article(typ string) string {
	switch typ {
	case "integer", "object", "array":
		return "an " + typ
	}
	return "a " + typ
}

func paramList(params []param) string {
	parts := make([]string, len(params))
	for i, p := range params {
		s := p.name + " (" + p.typ
		if p.required {
			s += ", required"
		}
		parts[i] = s + ")"
	}
	return strings.Join(parts, ", ")
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "\"" + n + "\""
	}
	return strings.Join(q, ", ")
}

func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
