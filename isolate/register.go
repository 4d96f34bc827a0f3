package isolate

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
)

// entry is one registered function, erased to JSON in and out.
type entry struct {
	name   string
	in     reflect.Type
	invoke func(ctx context.Context, in []byte) (out []byte, err error, bad *Error)
}

var registry sync.Map // name -> *entry

// Func is a registered function; Call runs it isolated with typed input
// and output.
type Func[In, Out any] struct{ name string }

// Name is the name it was registered under.
func (f *Func[In, Out]) Name() string { return f.name }

// Call runs the function in a sandboxed child (see the package Call).
func (f *Func[In, Out]) Call(ctx context.Context, in In, opts ...Option) (Out, error) {
	var out Out
	err := Call(ctx, f.name, in, &out, opts...)
	return out, err
}

// Register makes fn callable by name in an isolated child. In and Out must
// survive a JSON round trip (the Go analogue of "picklable"): no channels,
// functions, complex numbers or unsafe pointers anywhere in them, maps
// keyed by strings, integers or encoding.TextMarshaler, and at least one
// exported field in every struct (or a json.Marshaler); a type that breaks
// these rules is refused here, with the path to the offending part.
//
// Register must run in the child too, before main does anything: call it
// from an init function or a package-level variable. The child is the
// same binary re-executed; it serves the call as soon as the function
// is registered, so nothing registered later, and nothing of main, runs
// there. Registering a name twice is an error.
func Register[In, Out any](name string, fn func(ctx context.Context, in In) (Out, error)) (*Func[In, Out], error) {
	if name == "" || fn == nil {
		return nil, errors.New("isolate: Register needs a name and a function")
	}
	inT, outT := reflect.TypeFor[In](), reflect.TypeFor[Out]()
	if err := checkJSON(inT); err != nil {
		return nil, fmt.Errorf("isolate: Register %q: input %v is not JSON-serialisable: %w", name, inT, err)
	}
	if err := checkJSON(outT); err != nil {
		return nil, fmt.Errorf("isolate: Register %q: output %v is not JSON-serialisable: %w", name, outT, err)
	}
	e := &entry{name: name, in: inT}
	e.invoke = func(ctx context.Context, raw []byte) ([]byte, error, *Error) {
		var in In
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, nil, &Error{Name: name, Kind: BadInput, Msg: err.Error()}
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err, nil
		}
		b, merr := json.Marshal(out)
		if merr != nil {
			return nil, nil, &Error{Name: name, Kind: BadResult, Msg: "encoding " + outT.String() + ": " + merr.Error()}
		}
		return b, nil, nil
	}
	if _, loaded := registry.LoadOrStore(name, e); loaded {
		return nil, fmt.Errorf("isolate: %q is already registered", name)
	}
	if child.active && child.name == name {
		os.Exit(serve(e))
	}
	return &Func[In, Out]{name: name}, nil
}

// MustRegister is Register that panics on error, for package-level
// variables.
func MustRegister[In, Out any](name string, fn func(ctx context.Context, in In) (Out, error)) *Func[In, Out] {
	f, err := Register(name, fn)
	if err != nil {
		panic(err)
	}
	return f
}

func lookup(name string) *entry {
	e, _ := registry.Load(name)
	v, _ := e.(*entry)
	return v
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// checkJSON reports the first part of t that encoding/json cannot carry
// across processes.
func checkJSON(t reflect.Type) error {
	return checkType(t, "", map[reflect.Type]bool{})
}

func checkType(t reflect.Type, path string, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil // recursive types are fine; the first visit checks them
	}
	seen[t] = true
	at := func(msg string) error {
		if path == "" {
			return errors.New(msg)
		}
		return fmt.Errorf("%s: %s", strings.TrimPrefix(path, "."), msg)
	}
	// A type that marshals itself is trusted to round-trip.
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
		return at(t.Kind().String() + " cannot be encoded as JSON")
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return checkType(t.Elem(), path+"[]", seen)
	case reflect.Map:
		k := t.Key()
		switch {
		case k.Kind() == reflect.String, k.Implements(textMarshaler), reflect.PointerTo(k).Implements(textMarshaler):
		case k.Kind() >= reflect.Int && k.Kind() <= reflect.Uintptr:
		default:
			return at("map key " + k.String() + " cannot be a JSON object key")
		}
		return checkType(t.Elem(), path+"[key]", seen)
	case reflect.Struct:
		exported := 0
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			if tag := f.Tag.Get("json"); tag == "-" {
				continue
			}
			exported++
			if err := checkType(f.Type, path+"."+f.Name, seen); err != nil {
				return err
			}
		}
		if exported == 0 && t.NumField() > 0 {
			return at("struct " + t.String() + " has no exported fields, so its value would be lost")
		}
	}
	return nil
}
