package tool

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
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

type flatProbe struct {
	Path  string    `json:"path"`
	Count int       `json:"count,omitempty"`
	Big   int64     `json:"big,omitempty"`
	Ratio float64   `json:"ratio,omitempty"`
	On    bool      `json:"on,omitempty"`
	Tags  []string  `json:"tags,omitempty"`
	Nums  []float32 `json:"nums,omitempty"`
}

// TestFlatArgumentsSkipOnlyWhatTheSchemaAccepts: which argument types
// decode without the schema, and that those which do are the ones whose
// schema a plain decode fully checks.
func TestFlatArgumentsSkipOnlyWhatTheSchemaAccepts(t *testing.T) {
	t.Parallel()
	flat := func(tl Tool) bool { return tl.(*typed[flatProbe, string]).flat != nil }
	tl := MustNew("probe", "Probes.", func(_ context.Context, in flatProbe) (string, error) { return in.Path, nil })
	if !flat(tl) {
		t.Fatal("a struct of scalars and slices of scalars is not decoded without its schema")
	}
	for name, tl := range map[string]Tool{
		"raw":    MustNew("raw", "r", func(_ context.Context, in struct{ R json.RawMessage }) (string, error) { return "", nil }),
		"any":    MustNew("any", "a", func(_ context.Context, in struct{ A any }) (string, error) { return "", nil }),
		"nested": MustNew("nested", "n", func(_ context.Context, in struct{ N fuzzArgs }) (string, error) { return "", nil }),
		"ptr":    MustNew("ptr", "p", func(_ context.Context, in struct{ P *int }) (string, error) { return "", nil }),
		"map":    MustNew("map", "m", func(_ context.Context, in struct{ M map[string]int }) (string, error) { return "", nil }),
		"bounds": MustNew("bounds", "b", func(_ context.Context, in struct{ S int8 }) (string, error) { return "", nil }),
		"bytes":  MustNew("bytes", "b", func(_ context.Context, in struct{ B []uint8 }) (string, error) { return "", nil }),
	} {
		if v := reflect.ValueOf(tl).Elem().FieldByName("flat"); !v.IsNil() {
			t.Errorf("%s: decoded without its schema", name)
		}
	}
	for _, args := range flatSeeds {
		agree(t, tl.(*typed[flatProbe, string]), args)
	}
}

var flatSeeds = []string{`{"path":"a"}`, `{"path":"a","count":2,"big":-9007199254740993,"ratio":1.5,"on":true,"tags":["x"],"nums":[1.5]}`,
	`{"Path":"a"}`, `{"path":"a","count":null}`, `{"count":1}`, `{"path":"a","count":1.5}`, `{"path":"a","count":1.0}`,
	`{"path":"a","big":9223372036854775808}`, `{"path":"a","tags":null}`, `{"path":"a","tags":[1]}`, `{"path":"a","path":"b"}`,
	`{"path":"a","extra":1}`, `[]`, `"x"`, `{"path":"a","on":"true"}`, `{"path":"a","nums":[1e39]}`, `{"path":"a","count":1e2}`}

// agree checks that arguments a plain decode settles are arguments the
// schema accepts, decoded to the same value.
func agree(t *testing.T, tl *typed[flatProbe, string], args string) {
	t.Helper()
	got, ok := decodeFlat[flatProbe](tl.flat, []byte(args))
	if !ok {
		return
	}
	want, err := tl.checked(json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: decoded without the schema, which refuses it: %v", args, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: decoded %+v without the schema, %+v with it", args, got, want)
	}
}

// FuzzFlatArguments: whatever arguments skip the schema, the schema
// accepts, and they decode to the same value.
func FuzzFlatArguments(f *testing.F) {
	for _, s := range flatSeeds {
		f.Add(s)
	}
	tl := MustNew("probe", "Probes.", func(_ context.Context, in flatProbe) (string, error) { return in.Path, nil }).(*typed[flatProbe, string])
	f.Fuzz(func(t *testing.T, args string) { agree(t, tl, args) })
}

// TestFlatArgumentsWalkTheKeys: arguments of the flat shape, however
// spaced and whatever their strings hold, are decoded without the schema;
// keys the walk cannot vouch for go to the schema.
func TestFlatArgumentsWalkTheKeys(t *testing.T) {
	t.Parallel()
	tl := MustNew("probe", "Probes.", func(_ context.Context, in flatProbe) (string, error) { return in.Path, nil }).(*typed[flatProbe, string])
	for args, flat := range map[string]bool{
		`{"path":"a"}`: true,
		" {\n\t\"path\" : \"a\\\"}],\" , \"count\":3 }\r\n":                  true,
		`{"tags":["x,y","}"," ]"],"path":"b","nums":[1, 2.5 ,3],"on":false}`: true,
		`{"path":"a","ratio":-12e3}`:                                         true,
		`{"p\u0061th":"a"}`:                                                  false, // an escape in a key
		`{"path":"a","path":"b"}`:                                            false, // twins
		`{"path":"a","Count":1}`:                                             false, // another case
		`{"path":"a","count":1`:                                              false, // not JSON
		`{"path":"a",}`:                                                      false,
		`{}`:                                                                 false, // path is required
		`{"count":1}`:                                                        false,
	} {
		got, ok := decodeFlat[flatProbe](tl.flat, []byte(args))
		if ok != flat {
			t.Errorf("%s: decoded without the schema = %v, want %v (%+v)", args, ok, flat, got)
		}
		agree(t, tl, args)
	}
}
