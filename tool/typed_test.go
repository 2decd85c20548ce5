package tool

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

type fuzzArgs struct {
	Path  string   `json:"path"`
	Count int      `json:"count,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

func TestTypedToolChecksArguments(t *testing.T) {
	t.Parallel()
	ran := 0
	tl := MustNew("probe", "Probes.", func(_ context.Context, in fuzzArgs) (fuzzArgs, error) { ran++; return in, nil })
	for _, tc := range []struct {
		args string
		ok   bool
	}{
		{`{"path": "a"}`, true},
		{`{"path": "a", "count": 2, "tags": ["x"]}`, true},
		{``, false},                          // path is required
		{`{"count": 1}`, false},              // path missing
		{`{"path": 3}`, false},               // wrong type
		{`{"path": "a", "extra": 1}`, false}, // unknown field
		{`{"path": "a"`, false},              // not JSON
		{`[1, 2]`, false},                    // not an object
	} {
		out, err := tl.Call(context.Background(), json.RawMessage(tc.args))
		var ae *ArgumentError
		if tc.ok && err != nil || !tc.ok && !errors.As(err, &ae) {
			t.Errorf("%s: out %q, err %v", tc.args, out, err)
		}
	}
	if ran != 2 {
		t.Errorf("the body ran %d times, want 2 (never on bad arguments)", ran)
	}
}

// FuzzTypedArguments: whatever a model sends, a typed tool either runs its
// body on arguments that fit the schema or returns an ArgumentError; it
// never panics.
func FuzzTypedArguments(f *testing.F) {
	for _, s := range []string{`{"path":"a"}`, `{"path":"a","count":1,"tags":["x","y"]}`, `{}`, `null`, `"x"`, `{"path":`, `{"path":"\u0000"}`, `{"count":1e309}`} {
		f.Add(s)
	}
	tl := MustNew("probe", "Probes.", func(_ context.Context, in fuzzArgs) (string, error) {
		if in.Path == "" {
			return "", errors.New("the body ran without a path")
		}
		return in.Path, nil
	})
	f.Fuzz(func(t *testing.T, args string) {
		_, err := tl.Call(context.Background(), json.RawMessage(args))
		var ae *ArgumentError
		if err != nil && !errors.As(err, &ae) && err.Error() != "the body ran without a path" {
			t.Fatalf("%q: unexpected error %v", args, err)
		}
	})
}
