package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/modeltest"
	"github.com/hitch-dev/hitch/model/openai"
)

const testKey = "sk-test-7Hq2LmX9vR4tY8wZ3bN6"

// apis lists both wire protocols with what differs between their tests.
var apis = []struct {
	api, path, prefix string
}{
	{openai.APIChat, "/v1/chat/completions", "chat_"},
	{openai.APIResponses, "/v1/responses", "resp_"},
}

func newModel(t *testing.T, api string, exchanges ...modeltest.Exchange) (*openai.Model, *modeltest.Server) {
	t.Helper()
	srv := modeltest.NewServer(t, exchanges...)
	m, err := openai.New(openai.Config{Model: "gpt-4o-mini", BaseURL: srv.URL + "/v1", APIKey: testKey, API: api, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return m, srv
}

func fixture(t *testing.T, name string) modeltest.Exchange {
	return modeltest.FixtureExchange(t, "testdata/"+name)
}

// checkRequests asserts that the server saw exactly n attempts, each on the
// right path with the key as a bearer token, asking for a stream, and
// without the SDK's own retries.
func checkRequests(t *testing.T, srv *modeltest.Server, path string, n int) []map[string]any {
	t.Helper()
	return modeltest.CheckRequests(t, srv, path, testKey, n, func(i int, r modeltest.Request) {
		if got := r.Header.Get("X-Stainless-Retry-Count"); got != "" && got != "0" {
			t.Errorf("request %d: SDK retry count %q", i, got)
		}
	})
}

func TestPlainAnswer(t *testing.T) {
	t.Parallel()
	for _, a := range apis {
		t.Run(a.api, func(t *testing.T) {
			t.Parallel()
			m, srv := newModel(t, a.api, fixture(t, a.prefix+"text.sse"))
			deltas, reply, err := modeltest.Run(t.Context(), m, modeltest.Hello())
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(deltas, "|") != "Hello| there!" {
				t.Errorf("deltas %q", deltas)
			}
			if reply.Text != "Hello there!" || len(reply.ToolCalls) != 0 {
				t.Errorf("reply %+v", reply)
			}
			if reply.Model == "" || reply.StopReason == "" {
				t.Errorf("model %q, stop reason %q", reply.Model, reply.StopReason)
			}
			u := reply.Usage
			if u == nil || u.InputTokens == nil || *u.InputTokens != 2006 || *u.OutputTokens != 3 || u.CachedInputTokens == nil || *u.CachedInputTokens != 1920 {
				t.Errorf("usage %+v", u)
			}
			bodies := checkRequests(t, srv, a.path, 1)
			if bodies[0]["model"] != "gpt-4o-mini" {
				t.Errorf("model sent %v", bodies[0]["model"])
			}
		})
	}
}

func TestToolCalls(t *testing.T) {
	t.Parallel()
	weather := model.ToolCall{Name: "get_weather", Arguments: `{"city": "Paris"}`}
	clock := model.ToolCall{Name: "get_time", Arguments: `{"tz": "Europe/Paris"}`}
	for _, a := range apis {
		for _, tc := range []struct {
			file string
			want []model.ToolCall
		}{
			{"tool.sse", []model.ToolCall{weather}},
			{"tools.sse", []model.ToolCall{weather, clock}},
			// Arguments that are not JSON pass through untouched.
			{"bad_args.sse", []model.ToolCall{{Name: "get_weather", Arguments: `{"city": "Par`}}},
		} {
			t.Run(a.api+"/"+tc.file, func(t *testing.T) {
				t.Parallel()
				m, srv := newModel(t, a.api, fixture(t, a.prefix+tc.file))
				_, reply, err := modeltest.Run(t.Context(), m, modeltest.Hello())
				if err != nil {
					t.Fatal(err)
				}
				if len(reply.ToolCalls) != len(tc.want) {
					t.Fatalf("calls %+v, want %d", reply.ToolCalls, len(tc.want))
				}
				seen := map[string]bool{}
				for i, c := range reply.ToolCalls {
					if c.Name != tc.want[i].Name || c.Arguments != tc.want[i].Arguments {
						t.Errorf("call %d = %+v, want %+v", i, c, tc.want[i])
					}
					if !strings.HasPrefix(c.ID, "call_") || seen[c.ID] {
						t.Errorf("call %d id %q", i, c.ID)
					}
					seen[c.ID] = true
				}
				checkRequests(t, srv, a.path, 1)
			})
		}
	}
}

// roundTrip is a transcript with two calls and their results.
func roundTrip() *model.Request {
	return &model.Request{
		Instructions: "Use tools.",
		Messages: []model.Message{
			{Role: model.RoleUser, Text: "Weather and time in Paris?"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "call_2", Name: "get_time", Arguments: `{"tz": "Eur`},
			}},
			{Role: model.RoleTool, ToolCallID: "call_1", ToolName: "get_weather", Text: "18°C, clear"},
			{Role: model.RoleTool, ToolCallID: "call_2", ToolName: "get_time", Text: "invalid arguments", IsError: true},
		},
		Tools: []model.ToolSpec{{
			Name: "get_weather", Description: "Current weather.",
			Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":9007199254740993}},"required":["city"]}`),
		}, {Name: "get_time"}},
		MaxOutputTokens: 300,
	}
}

func TestToolResultRoundTrip(t *testing.T) {
	t.Parallel()
	t.Run("chat", func(t *testing.T) {
		t.Parallel()
		m, srv := newModel(t, openai.APIChat, fixture(t, "chat_text.sse"))
		if _, _, err := modeltest.Run(t.Context(), m, roundTrip()); err != nil {
			t.Fatal(err)
		}
		checkRequests(t, srv, "/v1/chat/completions", 1)
		var body struct {
			Messages []struct {
				Role       string `json:"role"`
				Content    any    `json:"content"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"messages"`
			Tools []struct {
				Type     string `json:"type"`
				Function struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					Parameters  json.RawMessage `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
			MaxTokens     int            `json:"max_tokens"`
			StreamOptions map[string]any `json:"stream_options"`
		}
		if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		roles := []string{}
		for _, msg := range body.Messages {
			roles = append(roles, msg.Role)
		}
		if strings.Join(roles, ",") != "system,user,assistant,tool,tool" {
			t.Fatalf("roles %v", roles)
		}
		if body.Messages[0].Content != "Use tools." {
			t.Errorf("system content %v", body.Messages[0].Content)
		}
		calls := body.Messages[2].ToolCalls
		if len(calls) != 2 || calls[0].ID != "call_1" || calls[0].Type != "function" || calls[0].Function.Name != "get_weather" ||
			calls[0].Function.Arguments != `{"city":"Paris"}` || calls[1].Function.Arguments != `{"tz": "Eur` {
			t.Errorf("assistant tool calls %+v", calls)
		}
		if body.Messages[3].ToolCallID != "call_1" || body.Messages[3].Content != "18°C, clear" || body.Messages[4].ToolCallID != "call_2" {
			t.Errorf("tool results %+v", body.Messages[3:])
		}
		if len(body.Tools) != 2 || body.Tools[0].Type != "function" || body.Tools[0].Function.Description != "Current weather." {
			t.Fatalf("tools %+v", body.Tools)
		}
		// The schema goes out as it came, large integers included.
		if !strings.Contains(string(body.Tools[0].Function.Parameters), "9007199254740993") {
			t.Errorf("parameters %s", body.Tools[0].Function.Parameters)
		}
		if !strings.Contains(string(body.Tools[1].Function.Parameters), `"type":"object"`) {
			t.Errorf("empty schema sent as %s", body.Tools[1].Function.Parameters)
		}
		if body.MaxTokens != 300 || body.StreamOptions["include_usage"] != true {
			t.Errorf("max_tokens %d, stream_options %v", body.MaxTokens, body.StreamOptions)
		}
	})
	t.Run("responses", func(t *testing.T) {
		t.Parallel()
		m, srv := newModel(t, openai.APIResponses, fixture(t, "resp_text.sse"))
		if _, _, err := modeltest.Run(t.Context(), m, roundTrip()); err != nil {
			t.Fatal(err)
		}
		checkRequests(t, srv, "/v1/responses", 1)
		var body struct {
			Instructions string `json:"instructions"`
			Store        *bool  `json:"store"`
			Input        []struct {
				Type      string `json:"type"`
				Role      string `json:"role"`
				Content   any    `json:"content"`
				CallID    string `json:"call_id"`
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
				Output    string `json:"output"`
			} `json:"input"`
			Tools []struct {
				Type       string          `json:"type"`
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
				Strict     *bool           `json:"strict"`
			} `json:"tools"`
			MaxOutputTokens int `json:"max_output_tokens"`
		}
		if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Instructions != "Use tools." || body.Store == nil || *body.Store || body.MaxOutputTokens != 300 {
			t.Errorf("instructions %q store %v max %d", body.Instructions, body.Store, body.MaxOutputTokens)
		}
		if len(body.Input) != 5 {
			t.Fatalf("input %+v", body.Input)
		}
		in := body.Input
		if in[0].Role != "user" || in[0].Content != "Weather and time in Paris?" {
			t.Errorf("input 0 %+v", in[0])
		}
		if in[1].Type != "function_call" || in[1].CallID != "call_1" || in[1].Name != "get_weather" || in[1].Arguments != `{"city":"Paris"}` ||
			in[2].Type != "function_call" || in[2].CallID != "call_2" || in[2].Arguments != `{"tz": "Eur` {
			t.Errorf("function calls %+v %+v", in[1], in[2])
		}
		if in[3].Type != "function_call_output" || in[3].CallID != "call_1" || in[3].Output != "18°C, clear" ||
			in[4].Type != "function_call_output" || in[4].CallID != "call_2" {
			t.Errorf("function outputs %+v %+v", in[3], in[4])
		}
		if len(body.Tools) != 2 || body.Tools[0].Type != "function" || body.Tools[0].Name != "get_weather" ||
			body.Tools[0].Strict == nil || *body.Tools[0].Strict || !strings.Contains(string(body.Tools[0].Parameters), "9007199254740993") {
			t.Errorf("tools %+v", body.Tools)
		}
	})
}

func TestStructuredOutput(t *testing.T) {
	t.Parallel()
	strict := `{"type":"object","properties":{"city":{"type":"string"},"temp":{"type":"number"}},"required":["city","temp"],"additionalProperties":false}`
	loose := `{"type":"object","properties":{"city":{"type":"string"}}}`
	for _, a := range apis {
		for _, tc := range []struct {
			name, schema string
			strict       bool
		}{{"strict", strict, true}, {"loose", loose, false}} {
			t.Run(a.api+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				m, srv := newModel(t, a.api, fixture(t, a.prefix+"text.sse"))
				req := modeltest.Hello()
				req.Answer = &model.AnswerSpec{Name: "weather report", Schema: json.RawMessage(tc.schema)}
				if _, _, err := modeltest.Run(t.Context(), m, req); err != nil {
					t.Fatal(err)
				}
				body := checkRequests(t, srv, a.path, 1)[0]
				var format map[string]any
				if a.api == openai.APIChat {
					rf, _ := body["response_format"].(map[string]any)
					if rf["type"] != "json_schema" {
						t.Fatalf("response_format %v", body["response_format"])
					}
					format, _ = rf["json_schema"].(map[string]any)
				} else {
					text, _ := body["text"].(map[string]any)
					format, _ = text["format"].(map[string]any)
					if format["type"] != "json_schema" {
						t.Fatalf("text.format %v", body["text"])
					}
				}
				if format["name"] != "weather_report" || format["strict"] != tc.strict {
					t.Errorf("format %v", format)
				}
				got, _ := json.Marshal(format["schema"])
				var want any
				_ = json.Unmarshal([]byte(tc.schema), &want)
				wantJSON, _ := json.Marshal(want)
				if string(got) != string(wantJSON) {
					t.Errorf("schema sent %s, want %s", got, wantJSON)
				}
			})
		}
	}
}

func errorBody(typ, code, msg string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	return string(b)
}

// provider is a wire protocol's model for the contract every provider
// keeps.
func provider(api, path, prefix, text string) modeltest.Provider {
	return modeltest.Provider{
		Name: "openai",
		Key:  testKey,
		New: func(t *testing.T, exchanges ...modeltest.Exchange) (model.Model, *modeltest.Server) {
			return newModel(t, api, exchanges...)
		},
		Closed: func() (model.Model, error) {
			return openai.New(openai.Config{Model: "llama3.2", BaseURL: "http://127.0.0.1:1/v1", APIKey: testKey, API: api})
		},
		Keyless: func(srv *modeltest.Server) (model.Model, error) {
			return openai.New(openai.Config{Model: "llama3.2", BaseURL: srv.URL + "/v1", API: api, HTTPClient: srv.Client()})
		},
		KeylessName:   "openai/llama3.2",
		Path:          path,
		Ambient:       []string{"OPENAI_API_KEY", "sk-from-environment", "OPENAI_BASE_URL", "http://127.0.0.1:1/v1"},
		CheckRequests: func(t *testing.T, srv *modeltest.Server, n int) { checkRequests(t, srv, path, n) },
		Fixtures:      "testdata/" + prefix,
		NoUsageText:   text,
		// Dropped in the middle of the second delta's event.
		CutAt: `" there!"`,
		// A clean end of the body before the provider said it was done.
		ShortThrough: `"Hello"`,
		Retryable: []modeltest.RetryCase{
			{Name: "429", Fail: modeltest.Exchange{Status: 429, Header: map[string]string{"Retry-After": "2"},
				Body: errorBody("tokens", "rate_limit_exceeded", "Rate limit reached for gpt-4o-mini on tokens per min (TPM): Limit 200000, Used 199800, Requested 900.")},
				Kind: model.KindRateLimited, After: 2 * time.Second},
			{Name: "429-ms", Fail: modeltest.Exchange{Status: 429, Header: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"},
				Body: errorBody("requests", "rate_limit_exceeded", "Rate limit reached for requests")},
				Kind: model.KindRateLimited, After: 1500 * time.Millisecond},
			{Name: "500", Fail: modeltest.Exchange{Status: 500,
				Body: errorBody("server_error", "", "The server had an error while processing your request. Sorry about that!")},
				Kind: model.KindOverloaded},
			{Name: "503", Fail: modeltest.Exchange{Status: 503, ContentType: "text/html", Body: "<html><body>upstream connect error</body></html>"},
				Kind: model.KindOverloaded},
		},
		Permanent: []modeltest.PermanentCase{
			{Name: "400", Status: 400, Body: errorBody("invalid_request_error", "", "Invalid schema for response_format 'answer': 'required' is required."), Kind: model.KindInvalidRequest, Msg: "Invalid schema"},
			{Name: "404", Status: 404, Body: errorBody("invalid_request_error", "model_not_found", "The model `gpt-9` does not exist or you do not have access to it."), Kind: model.KindInvalidRequest, Msg: "does not exist"},
			{Name: "422", Status: 422, Body: `{"detail":"Input should be a valid list"}`, Kind: model.KindInvalidRequest, Msg: "valid list"},
			{Name: "ollama-404", Status: 404, Body: `{"error":"model \"llama9\" not found, try pulling it first"}`, Kind: model.KindInvalidRequest, Msg: "try pulling"},
			{Name: "403", Status: 403, Body: errorBody("invalid_request_error", "unsupported_country_region_territory", "Country, region, or territory not supported"), Kind: model.KindUnauthorized, Msg: "not supported"},
			{Name: "quota", Status: 429, Body: errorBody("insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details."), Kind: model.KindUnauthorized, Msg: "quota"},
		},
		Invalid: []*model.Request{
			nil,
			{Messages: []model.Message{{Role: "system", Text: "x"}}},
			{Messages: []model.Message{{Role: model.RoleTool, Text: "x"}}},
			{Tools: []model.ToolSpec{{Name: "t", Schema: json.RawMessage(`[1]`)}}},
			{Answer: &model.AnswerSpec{Schema: json.RawMessage(`"x"`)}},
		},
	}
}

func TestContract(t *testing.T) {
	t.Run(openai.APIChat, func(t *testing.T) {
		modeltest.Contract(t, provider(openai.APIChat, "/v1/chat/completions", "chat_", "OK"))
	})
	t.Run(openai.APIResponses, func(t *testing.T) {
		modeltest.Contract(t, provider(openai.APIResponses, "/v1/responses", "resp_", "Hello there!"))
	})
}

func TestKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	for _, a := range apis {
		t.Run(a.api, func(t *testing.T) {
			t.Parallel()
			// OpenAI quotes the key it refused; this server quotes all of it.
			echo := modeltest.Exchange{Handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(401)
				fmt.Fprint(w, errorBody("invalid_request_error", "invalid_api_key", "Incorrect API key provided: "+r.Header.Get("Authorization")+"."))
			}}
			m, _ := newModel(t, a.api, echo)
			_, _, err := modeltest.Run(t.Context(), m, modeltest.Hello())
			me := modeltest.AsError(t, err)
			if me.Kind != model.KindUnauthorized || me.Status != 401 {
				t.Errorf("error %+v", me)
			}
			if !strings.Contains(me.Message, "Incorrect API key provided") {
				t.Errorf("message lost: %q", me.Message)
			}
			modeltest.NoKey(t, me, testKey)
		})
	}
}

func TestErrorInsideStream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ api, file, path string }{
		{openai.APIChat, "chat_error_event.sse", "/v1/chat/completions"},
		{openai.APIResponses, "resp_failed.sse", "/v1/responses"},
	} {
		t.Run(tc.api, func(t *testing.T) {
			t.Parallel()
			m, srv := newModel(t, tc.api, fixture(t, tc.file))
			_, _, err := modeltest.Run(t.Context(), m, modeltest.Hello())
			me := modeltest.AsError(t, err)
			if me.Kind != model.KindOverloaded || me.Message == "" {
				t.Errorf("error %+v", me)
			}
			checkRequests(t, srv, tc.path, 1)
		})
	}
}

func TestDeadline(t *testing.T) {
	t.Parallel()
	body := modeltest.Fixture(t, "testdata/chat_text.sse")
	m, _ := newModel(t, openai.APIChat, modeltest.Exchange{Body: body[:modeltest.Cut(t, body, "\n\n")], Hold: true})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, _, err := modeltest.Run(ctx, m, modeltest.Hello())
	if me := modeltest.AsError(t, err); me.Kind != model.KindTimedOut || !me.Kind.Retryable() {
		t.Errorf("error %+v", me)
	}
}

// Some compatible servers number every call 0 and tell them apart by id.
func TestCallsSharingAnIndex(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, openai.APIChat, fixture(t, "chat_tools_index0.sse"))
	_, reply, err := modeltest.Run(t.Context(), m, modeltest.Hello())
	if err != nil {
		t.Fatal(err)
	}
	want := []model.ToolCall{
		{ID: "call_w1k8s2", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		{ID: "call_t9q3n5", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
	}
	if len(reply.ToolCalls) != 2 || reply.ToolCalls[0] != want[0] || reply.ToolCalls[1] != want[1] {
		t.Errorf("calls %+v", reply.ToolCalls)
	}
	// Usage without cache details: the cached count is unknown, not zero.
	u := reply.Usage
	if u == nil || *u.InputTokens != 210 || *u.OutputTokens != 41 || u.CachedInputTokens != nil {
		t.Errorf("usage %+v", u)
	}
}

func TestStopEarly(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, openai.APIChat, fixture(t, "chat_text.sse"))
	n := 0
	for range m.Generate(t.Context(), modeltest.Hello()) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("yielded %d chunks after break", n)
	}
}

func TestMaxTokensField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ field, want string }{{"", "max_tokens"}, {openai.MaxTokensCompletion, "max_completion_tokens"}} {
		srv := modeltest.NewServer(t, fixture(t, "chat_text.sse"))
		m, err := openai.New(openai.Config{Model: "o3-mini", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), MaxTokensField: tc.field})
		if err != nil {
			t.Fatal(err)
		}
		req := modeltest.Hello()
		req.MaxOutputTokens = 64
		if _, _, err := modeltest.Run(t.Context(), m, req); err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.Unmarshal(srv.Requests()[0].Body, &body)
		if body[tc.want] != float64(64) {
			t.Errorf("field %q: body %v", tc.field, body)
		}
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  openai.Config
		want string
	}{
		{openai.Config{}, "Model"},
		{openai.Config{Model: "m", BaseURL: "localhost:11434"}, "BaseURL"},
		{openai.Config{Model: "m", BaseURL: "ftp://x/v1"}, "BaseURL"},
		{openai.Config{Model: "m", API: "completions"}, "API"},
		{openai.Config{Model: "m", MaxTokensField: "max"}, "MaxTokensField"},
	} {
		_, err := openai.New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	m, err := openai.New(openai.Config{Model: "gpt-4o", Name: "work/gpt"})
	if err != nil || m.Name() != "work/gpt" {
		t.Errorf("New: %v %v", m, err)
	}
}
