package openai_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/modeltest"
	"github.com/hitch-dev/hitch/model/openai"
)

// BenchmarkChatStream measures one streamed reply of 1,000 deltas over
// loopback: the adapter's own cost per call, request building and SSE
// decoding included.
func BenchmarkChatStream(b *testing.B) {
	var sb strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&sb, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"tok%d "},"finish_reason":null}]}`+"\n\n", i)
	}
	sb.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n")
	exchanges := make([]modeltest.Exchange, b.N)
	for i := range exchanges {
		exchanges[i] = modeltest.Exchange{Body: sb.String()}
	}
	srv := modeltest.NewServer(b, exchanges...)
	m, err := openai.New(openai.Config{Model: "m", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: "go"}}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := model.Collect(m.Generate(b.Context(), req), nil); err != nil {
			b.Fatal(err)
		}
	}
}
