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
	// Validate a plain decoding (numbers as float64, as the validator
	// wants); keep v, with its exact numbers, for the stored answer.
	var plain any
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, &plain)
	}
	if err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %v", err)
	}
	if err := a.resolved.Validate(plain); err != nil {
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

// correction is what the model is told after a refused answer.
func (a *AnswerSpec) correction(reason string) string {
	return fmt.Sprintf("Your final answer was refused: %s.\nAnswer again with only JSON that matches this JSON Schema:\n%s",
		reason, a.wire)
}
