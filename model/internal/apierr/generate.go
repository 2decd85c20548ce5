package apierr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"github.com/hitch-dev/hitch/model"
)

// ErrStopped reports that the consumer stopped reading a reply's sequence.
var ErrStopped = errors.New("stopped by consumer")

// Generate is the sequence a provider's Generate returns: a nil request
// is refused, gen streams the reply's deltas through emit (which reports
// false once the consumer stops reading; gen then returns ErrStopped) and
// the sequence ends with gen's reply or error.
func Generate(provider string, req *model.Request, gen func(emit func(delta string) bool) (*model.Reply, error)) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		if req == nil {
			yield(nil, Invalid(provider, "request is nil"))
			return
		}
		reply, err := gen(func(d string) bool { return yield(&model.Chunk{Delta: d}, nil) })
		switch {
		case errors.Is(err, ErrStopped):
		case err != nil:
			yield(nil, err)
		default:
			yield(&model.Chunk{Reply: reply}, nil)
		}
	}
}

// Invalid is the error for a request that cannot be sent.
func Invalid(provider, format string, args ...any) *model.Error {
	return &model.Error{Kind: model.KindInvalidRequest, Provider: provider, Message: fmt.Sprintf(format, args...)}
}

// Schema decodes a JSON Schema into the map an SDK sends. Numbers stay
// json.Number so that large integer bounds are not rounded through
// float64. An empty schema stands for an object without properties.
func Schema(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var s map[string]any
	if err := dec.Decode(&s); err != nil || s == nil {
		return nil, errors.New("schema is not a JSON object")
	}
	return s, nil
}
