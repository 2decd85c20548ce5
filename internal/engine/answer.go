package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitch-dev/hitch/model"
)

// AnswerSpec is a typed final answer: the model is asked for JSON matching
// a schema, and a final text that does not decode gets a corrective turn.
type AnswerSpec struct {
	// Schema is the answer's own JSON Schema, as the user gave it.
	Schema json.RawMessage
	// Wrapped is set when the schema's root is not an object: the model is
	// asked for {"answer": <value>} and the value is unwrapped.
	Wrapped  bool
	resolved *jsonschema.Resolved
	wire     json.RawMessage // what the provider is sent
}

// NewAnswerSpec checks a schema and prepares it for the wire.
func NewAnswerSpec(schema json.RawMessage) (*AnswerSpec, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("answer schema is not a JSON Schema: %w", err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("resolve answer schema: %w", err)
	}
	a := &AnswerSpec{Schema: schema, resolved: resolved, wire: schema}
	if s.Type != "object" {
		a.Wrapped = true
		a.wire, err = json.Marshal(map[string]any{
			"type":                 "object",
			"properties":           map[string]json.RawMessage{"answer": schema},
			"required":             []string{"answer"},
			"additionalProperties": false,
		})
		if err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (a *AnswerSpec) request() *model.AnswerSpec {
	return &model.AnswerSpec{Name: "answer", Schema: a.wire}
}

// decode turns a final text into the answer's canonical JSON, or says why
// it is refused.
func (a *AnswerSpec) decode(text string) (json.RawMessage, error) {
	body := strings.TrimSpace(text)
	// Models often fence JSON in markdown; take what is inside.
	if strings.HasPrefix(body, "```") {
		body = strings.TrimPrefix(body, "```")
		if i := strings.IndexByte(body, '\n'); i >= 0 {
			body = body[i+1:]
		}
		body = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(body), "```"))
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the answer has text after its JSON value")
	}
	if a.Wrapped {
		obj, ok := v.(map[string]any)
		inner, has := obj["answer"]
		if !ok || !has || len(obj) != 1 {
			return nil, fmt.Errorf(`the answer must be an object with one key, "answer"`)
		}
		v = inner
	}
	if err := a.resolved.Validate(normalize(v)); err != nil {
		return nil, fmt.Errorf("the answer does not match the schema: %v", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

// normalize turns json.Number into float64 or int64 for the validator.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return float64(i)
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}

// correction is what the model is told after a refused answer.
func (a *AnswerSpec) correction(reason string) string {
	return fmt.Sprintf("Your final answer was refused: %s.\nAnswer again with only JSON that matches this JSON Schema:\n%s",
		reason, a.wire)
}
