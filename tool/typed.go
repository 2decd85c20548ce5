package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Option adjusts a tool built by New.
type Option func(*Info)

// WithReplay declares the body safe to run again, up to attempts in all.
func WithReplay(attempts int) Option { return func(i *Info) { i.Replay = attempts } }

// WithTimeout overrides the agent's tool timeout for this tool.
func WithTimeout(d time.Duration) Option { return func(i *Info) { i.Timeout = d } }

// External declares the tool external (see Info.External): its body is
// never run; the result comes from outside the run.
func External() Option { return func(i *Info) { i.External = true } }

// Func is a typed tool body.
type Func[In, Out any] func(ctx context.Context, in In) (Out, error)

// typed binds a Func to the Tool interface.
type typed[In, Out any] struct {
	info     Info
	resolved *jsonschema.Resolved
	// flat, when In and its inferred schema are flat (see flatArgs),
	// lets arguments skip the schema when a plain decode settles them.
	flat *flatArgs
	fn   Func[In, Out]
}

var _ Tool = (*typed[struct{}, string])(nil)

// New binds fn as a tool. In's JSON Schema is inferred (struct fields use
// their json tags; a `jsonschema:"..."` tag gives a field's description), and
// the arguments are checked against it before fn runs. Out is sent to the
// model as is when it is a string, and as JSON otherwise.
func New[In, Out any](name, description string, fn Func[In, Out], opts ...Option) (Tool, error) {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: infer schema: %w", name, err)
	}
	if schema.Type != "object" {
		return nil, fmt.Errorf("tool %s: arguments must be a struct, got schema type %q", name, schema.Type)
	}
	t, err := NewWithSchema(name, description, schema, fn, opts...)
	if err != nil {
		return nil, err
	}
	// Only an inferred schema says of each field what its Go type does.
	t.(*typed[In, Out]).flat = flatOf(reflect.TypeFor[In](), schema)
	return t, nil
}

// NewWithSchema is New with an explicit schema, for arguments whose Go type
// says too little.
func NewWithSchema[In, Out any](name, description string, schema *jsonschema.Schema, fn Func[In, Out], opts ...Option) (Tool, error) {
	if name == "" {
		return nil, fmt.Errorf("tool: name is empty")
	}
	c, err := CompileSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	return NewWithCompiled(name, description, c, fn, opts...)
}

// Schema is an input schema resolved and encoded once, for a tool built
// many times over (one per agent of a config, say): tools built from one
// Schema share it, and none may change it.
type Schema struct {
	raw      json.RawMessage
	resolved *jsonschema.Resolved
}

// CompileSchema resolves and encodes s.
func CompileSchema(s *jsonschema.Schema) (*Schema, error) {
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("resolve schema: %w", err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode schema: %w", err)
	}
	return &Schema{raw: raw, resolved: resolved}, nil
}

// NewWithCompiled is NewWithSchema with a schema compiled once.
func NewWithCompiled[In, Out any](name, description string, schema *Schema, fn Func[In, Out], opts ...Option) (Tool, error) {
	if name == "" {
		return nil, fmt.Errorf("tool: name is empty")
	}
	if schema == nil {
		return nil, fmt.Errorf("tool %s: schema is nil", name)
	}
	t := &typed[In, Out]{
		info:     Info{Name: name, Description: description, Schema: schema.raw},
		resolved: schema.resolved,
		fn:       fn,
	}
	for _, o := range opts {
		o(&t.info)
	}
	return t, nil
}

// MustNew is New for package-level tool values; it panics on error.
func MustNew[In, Out any](name, description string, fn Func[In, Out], opts ...Option) Tool {
	t, err := New(name, description, fn, opts...)
	if err != nil {
		panic(err)
	}
	return t
}

func (t *typed[In, Out]) Info() Info { return t.info }

func (t *typed[In, Out]) Call(ctx context.Context, args json.RawMessage) (string, error) {
	in, err := t.decode(args)
	if err != nil {
		return "", err
	}
	out, err := t.fn(ctx, in)
	if err != nil {
		return "", err
	}
	return Encode(out)
}

func (t *typed[In, Out]) decode(args json.RawMessage) (In, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if t.flat != nil {
		if in, ok := decodeFlat[In](t.flat, args); ok {
			return in, nil
		}
	}
	return t.checked(args)
}

// checked decodes args after the schema has checked them.
func (t *typed[In, Out]) checked(args json.RawMessage) (In, error) {
	var in In
	var instance any
	if err := json.Unmarshal(args, &instance); err != nil {
		return in, &ArgumentError{Tool: t.info.Name, Reason: "not valid JSON: " + err.Error()}
	}
	if err := t.resolved.Validate(instance); err != nil {
		return in, &ArgumentError{Tool: t.info.Name, Reason: err.Error()}
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return in, &ArgumentError{Tool: t.info.Name, Reason: err.Error()}
	}
	return in, nil
}

// Encode renders a tool's output for the model: strings as they are,
// everything else as JSON.
func Encode(out any) (string, error) {
	if s, ok := out.(string); ok {
		return s, nil
	}
	if v := reflect.ValueOf(out); !v.IsValid() {
		return "null", nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encode output: %w", err)
	}
	return string(b), nil
}
