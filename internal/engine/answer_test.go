package engine

import (
	"encoding/json"
	"testing"
)

func TestAnswerDecode(t *testing.T) {
	t.Parallel()
	obj, err := NewAnswerSpec(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	arr, err := NewAnswerSpec(json.RawMessage(`{"type":"array","items":{"type":"string"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec *AnswerSpec
		text string
		want string // "" means refused
	}{
		{obj, `{"n": 3}`, `{"n":3}`},
		{obj, "```json\n{\"n\": 3}\n```", `{"n":3}`},
		{obj, `  {"n": 12345678901234567}  `, `{"n":12345678901234567}`},
		{obj, `{"n": 3.5}`, ""},
		{obj, `{"n": 3} trailing`, ""},
		{obj, `{"m": 3}`, ""},
		{obj, `the answer is 3`, ""},
		{arr, `{"answer": ["a", "b"]}`, `["a","b"]`},
		{arr, `["a", "b"]`, ""},
		{arr, `{"answer": ["a"], "more": 1}`, ""},
	} {
		got, err := tc.spec.decode(tc.text)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%q was accepted as %s", tc.text, got)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: got %s, %v; want %s", tc.text, got, err, tc.want)
		}
	}
}

// FuzzAnswerDecode: any final text is either refused with a reason or
// accepted as JSON that matches the schema; decoding never panics.
func FuzzAnswerDecode(f *testing.F) {
	spec, err := NewAnswerSpec(json.RawMessage(`{"type":"object","properties":{"label":{"type":"string"},"score":{"type":"number"}},"required":["label"]}`))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`{"label":"x"}`, "```\n{\"label\":\"y\",\"score\":1}\n```", `{"label":1}`, `[]`, `{"label":"x"}{}`, "```", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, err := spec.decode(text)
		if err != nil {
			return
		}
		var v map[string]any
		if json.Unmarshal(got, &v) != nil {
			t.Fatalf("%q accepted as %s, which is not a JSON object", text, got)
		}
		if _, ok := v["label"].(string); !ok {
			t.Fatalf("%q accepted as %s without a string label", text, got)
		}
	})
}
