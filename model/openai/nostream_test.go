package openai_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/modeltest"
	"github.com/hitch-dev/hitch/model/openai"
)

func newWholeModel(t *testing.T, exchanges ...modeltest.Exchange) (*openai.Model, *modeltest.Server) {
	t.Helper()
	srv := modeltest.NewServer(t, exchanges...)
	m, err := openai.New(openai.Config{Model: "gpt-4o-mini", BaseURL: srv.URL + "/v1", APIKey: testKey, HTTPClient: srv.Client(), NoStream: true})
	if err != nil {
		t.Fatal(err)
	}
	return m, srv
}

func jsonFixture(t *testing.T, name string) modeltest.Exchange {
	return modeltest.Exchange{ContentType: "application/json", Body: modeltest.Fixture(t, "testdata/"+name)}
}

// checkWholeRequests asserts that the server saw n requests, none of them
// asking for a stream.
func checkWholeRequests(t *testing.T, srv *modeltest.Server, n int) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != n {
		t.Fatalf("server saw %d requests, want %d", len(reqs), n)
	}
	for i, r := range reqs {
		if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+testKey {
			t.Errorf("request %d: %s %s", i, r.Method, r.Path)
		}
		var body map[string]any
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("request %d: body is not JSON: %v", i, err)
		}
		if s, ok := body["stream"]; ok && s != false {
			t.Errorf("request %d: stream = %v, want it absent or false", i, s)
		}
		if _, ok := body["stream_options"]; ok {
			t.Errorf("request %d: stream_options sent on a request that is not streamed", i)
		}
	}
}

// A whole reply maps to the same model.Reply as the same reply streamed.
func TestNoStreamMatchesStream(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"chat_text", "chat_tool", "chat_tools"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			streamed, _ := newModel(t, openai.APIChat, fixture(t, name+".sse"))
			wantDeltas, want, err := modeltest.Run(t.Context(), streamed, roundTrip())
			if err != nil {
				t.Fatal(err)
			}
			m, srv := newWholeModel(t, jsonFixture(t, name+".json"))
			deltas, got, err := modeltest.Run(t.Context(), m, roundTrip())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("whole reply\n%s\nstreamed reply\n%s", show(got), show(want))
			}
			if strings.Join(deltas, "") != strings.Join(wantDeltas, "") {
				t.Errorf("deltas %q, streamed %q", deltas, wantDeltas)
			}
			checkWholeRequests(t, srv, 1)
		})
	}
}

func show(r *model.Reply) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

// A local server's whole reply: text beside the calls, a call without an
// id, usage without details.
func TestNoStreamLocalServerReply(t *testing.T) {
	t.Parallel()
	m, srv := newWholeModel(t, jsonFixture(t, "chat_tools_local.json"))
	deltas, reply, err := modeltest.Run(t.Context(), m, roundTrip())
	if err != nil {
		t.Fatal(err)
	}
	want := []model.ToolCall{
		{ID: "call_r2xk81qa", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		{ID: "call_1", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
	}
	if !reflect.DeepEqual(reply.ToolCalls, want) {
		t.Errorf("calls %+v, want %+v", reply.ToolCalls, want)
	}
	if reply.Text != "Let me look that up." || strings.Join(deltas, "|") != "Let me look that up." {
		t.Errorf("text %q, deltas %q", reply.Text, deltas)
	}
	if reply.Model != "qwen2.5-coder:7b" || reply.StopReason != "tool_calls" {
		t.Errorf("model %q, stop reason %q", reply.Model, reply.StopReason)
	}
	u := reply.Usage
	if u == nil || *u.InputTokens != 212 || *u.OutputTokens != 41 || u.CachedInputTokens != nil {
		t.Errorf("usage %+v, want 212 in, 41 out, cached unreported", u)
	}
	checkWholeRequests(t, srv, 1)
	var body struct {
		MaxTokens int `json:"max_tokens"`
		Tools     []struct {
			Function struct{ Name string } `json:"function"`
		} `json:"tools"`
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.MaxTokens != 300 || len(body.Tools) != 2 || len(body.Messages) != 5 {
		t.Errorf("request %+v: want the same request as a streamed one", body)
	}
}

// A stream that says it ended for tool calls but carried none is an error
// that will not go away when retried, and says what to do.
func TestStreamDroppedToolCalls(t *testing.T) {
	t.Parallel()
	m, srv := newModel(t, openai.APIChat, fixture(t, "chat_tools_dropped.sse"))
	_, reply, err := modeltest.Run(t.Context(), m, roundTrip())
	if err == nil {
		t.Fatalf("reply %+v, want an error", reply)
	}
	me := modeltest.AsError(t, err)
	if me.Kind.Retryable() || me.Kind != model.KindMalformed {
		t.Errorf("kind %s, want a non-retryable malformed reply", me.Kind)
	}
	for _, want := range []string{`finish_reason "tool_calls"`, "no tool call", "stream: false"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	checkRequests(t, srv, "/v1/chat/completions", 1)
}

func TestNoStreamErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ex   modeltest.Exchange
		kind model.Kind
		msg  string
	}{
		{"rate limited", modeltest.Exchange{Status: 429, Header: map[string]string{"retry-after": "7"},
			Body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`}, model.KindRateLimited, "Rate limit reached"},
		{"bad key", modeltest.Exchange{Status: 401,
			Body: `{"error":{"message":"Incorrect API key provided: ` + testKey + `","type":"invalid_request_error","code":"invalid_api_key"}}`}, model.KindUnauthorized, "Incorrect API key"},
		{"not JSON", modeltest.Exchange{ContentType: "application/json", Body: `{"id": "chatcmpl-1", "choices": [}`}, model.KindMalformed, ""},
		{"no choice", modeltest.Exchange{ContentType: "application/json", Body: `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[]}`}, model.KindMalformed, "no choice"},
		{"cut", modeltest.Exchange{ContentType: "application/json", Body: modeltest.Fixture(t, "testdata/chat_tools.json"), CutAfter: 200}, model.KindUnreachable, ""},
		{"too large", modeltest.Exchange{ContentType: "application/json",
			Body: `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` +
				strings.Repeat("a", 33<<20) + `"},"finish_reason":"stop"}]}`}, model.KindMalformed, "exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, srv := newWholeModel(t, tc.ex)
			_, reply, err := modeltest.Run(t.Context(), m, modeltest.Hello())
			if err == nil {
				t.Fatalf("reply %+v, want an error", reply)
			}
			me := modeltest.AsError(t, err)
			if me.Kind != tc.kind || !strings.Contains(me.Message, tc.msg) {
				t.Errorf("error %v (kind %s), want kind %s with %q", err, me.Kind, tc.kind, tc.msg)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("the key leaked into the error: %v", err)
			}
			if tc.kind == model.KindRateLimited && me.RetryAfter.Seconds() != 7 {
				t.Errorf("retry after %s, want 7s", me.RetryAfter)
			}
			checkWholeRequests(t, srv, 1)
		})
	}
}

func TestNoStreamCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	m, _ := newWholeModel(t, modeltest.Exchange{Handler: func(w http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done()
	}})
	_, _, err := modeltest.Run(ctx, m, modeltest.Hello())
	if me := modeltest.AsError(t, err); me.Kind != model.KindCancelled {
		t.Fatalf("error %v, want cancelled", err)
	}
}

func TestNoStreamNeedsChat(t *testing.T) {
	t.Parallel()
	_, err := openai.New(openai.Config{Model: "gpt-4o-mini", API: openai.APIResponses, NoStream: true})
	if err == nil || !strings.Contains(err.Error(), "NoStream") {
		t.Fatalf("error %v, want one naming NoStream", err)
	}
}
