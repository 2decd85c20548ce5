package tool

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Checking arguments against a JSON Schema costs far more than decoding
// them. For the commonest arguments — a struct of scalars and slices of
// scalars, its schema inferred from it — a plain decode checks the same
// things, once it is known that the arguments are an object whose keys are
// exactly the struct's, with every required one present and no null
// anywhere. Arguments that pass that, and decode, skip the schema; all
// others take the schema's path, so a refusal reads as it always did.

// flatArgs is what the schema of a flat struct checks besides types.
type flatArgs struct {
	props    map[string]flatProp
	required int
}

// flatProp is one property of a flat struct: its place among them (at most
// 64, so that a walk of the keys marks those seen in one word) and whether
// the schema requires it.
type flatProp struct {
	index    uint
	required bool
}

// flatOf returns the flat shape of t and its inferred schema, or nil when
// either is not flat.
func flatOf(t reflect.Type, schema *jsonschema.Schema) *flatArgs {
	if t.Kind() != reflect.Struct || !flatSchema(schema) {
		return nil
	}
	f := &flatArgs{props: map[string]flatProp{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() || sf.Anonymous {
			return nil
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		ft := sf.Type
		if ft.Kind() == reflect.Slice {
			ft = ft.Elem()
			if ft.Kind() == reflect.Uint8 {
				return nil // []byte and json.RawMessage take what a schema may refuse
			}
		}
		if !scalar(ft.Kind()) {
			return nil
		}
		if _, ok := schema.Properties[name]; !ok {
			return nil
		}
		if len(f.props) == 64 {
			return nil
		}
		f.props[name] = flatProp{index: uint(len(f.props))}
	}
	if len(f.props) != len(schema.Properties) {
		return nil
	}
	for _, name := range schema.Required {
		p, ok := f.props[name]
		if !ok {
			return nil
		}
		if !p.required {
			p.required = true
			f.props[name] = p
			f.required++
		}
	}
	return f
}

func scalar(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// flatSchema reports whether a schema says nothing but an object's
// properties, each of one scalar type or an array of one scalar type, which
// ones are required, and that no others are allowed.
func flatSchema(s *jsonschema.Schema) bool {
	top, ok := keywords(s)
	if !ok || top["type"] != "object" {
		return false
	}
	for k := range top {
		switch k {
		case "type", "properties", "required", "additionalProperties", "description", "title":
		default:
			return false
		}
	}
	if ap, err := json.Marshal(s.AdditionalProperties); err != nil || string(ap) != "false" {
		return false
	}
	for _, p := range s.Properties {
		if !flatProperty(p, true) {
			return false
		}
	}
	return true
}

func flatProperty(p *jsonschema.Schema, arrays bool) bool {
	kw, ok := keywords(p)
	if !ok {
		return false
	}
	for k := range kw {
		switch k {
		case "type", "description", "title":
		case "items":
			if !arrays || !flatProperty(p.Items, false) {
				return false
			}
		default:
			return false
		}
	}
	switch kw["type"] {
	case "string", "integer", "number", "boolean":
		return true
	case "array":
		return arrays && p.Items != nil
	}
	// A slice may be null; the decode path refuses any null anyway.
	if ts, ok := kw["type"].([]any); ok && len(ts) == 2 && ts[0] == "null" && ts[1] == "array" {
		return arrays && p.Items != nil
	}
	return false
}

// keywords are the keywords a schema sets, as its JSON form has them.
func keywords(s *jsonschema.Schema) (map[string]any, bool) {
	if s == nil {
		return nil, false
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, false
	}
	var kw map[string]any
	if json.Unmarshal(b, &kw) != nil {
		return nil, false
	}
	return kw, true
}

var null = []byte("null")

// decodeFlat decodes args when a plain decode settles them; ok is false
// when the schema must have its say.
func decodeFlat[In any](f *flatArgs, args []byte) (in In, ok bool) {
	if bytes.Contains(args, null) {
		return in, false // a schema refuses null where a decode skips it
	}
	// The keys are checked on the bytes, not decoded into a map: the
	// decode below refuses what is not JSON, so the walk may trust it.
	var seen uint64
	required := 0
	if !objectKeys(args, func(k []byte) bool {
		p, known := f.props[string(k)]
		if !known || seen&(1<<p.index) != 0 {
			// A decode matches keys ignoring case and takes the last of
			// twins; the schema does neither.
			return false
		}
		seen |= 1 << p.index
		if p.required {
			required++
		}
		return true
	}) {
		return in, false
	}
	if required != f.required || json.Unmarshal(args, &in) != nil {
		return in, false
	}
	return in, true
}

// objectKeys calls key with each key of the JSON object b, in order, as
// the bytes between its quotes. It reports false when b is not an object,
// when a key holds an escape (the schema's path decodes those), or when key
// does. On bytes that are not JSON its answer means nothing: the caller
// decodes them next, which refuses them.
func objectKeys(b []byte, key func([]byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) && b[i] == '"' {
		end := i + 1
		for end < len(b) && b[end] != '"' {
			if b[end] == '\\' {
				return false
			}
			end++
		}
		if end >= len(b) || !key(b[i+1:end]) {
			return false
		}
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, skipValue(b, skipSpace(b, i+1)))
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			return true
		}
		if b[i] != ',' {
			return false
		}
		i = skipSpace(b, i+1)
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at
// b[i]: a string, an object or array (nesting counted, strings in them
// skipped), or a number or literal, which ends where the object goes on.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing object
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}
