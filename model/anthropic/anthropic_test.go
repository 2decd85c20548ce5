package anthropic_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/anthropic"
	"github.com/hitch-dev/hitch/model/modeltest"
)

const testKey = "sk-ant-api03-test-Zk3P9wQ7rL2mV8xN"

const path = "/v1/messages"

func newModel(t *testing.T, cfg anthropic.Config, exchanges ...modeltest.Exchange) (*anthropic.Model, *modeltest.Server) {
	t.Helper()
	srv := modeltest.NewServer(t, exchanges...)
	if cfg.Model == "" {
		cfg.Model = "claude-sonnet-4-5"
	}
	cfg.BaseURL, cfg.APIKey, cfg.HTTPClient = srv.URL, testKey, srv.Client()
	m, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, srv
}

func fixture(t *testing.T, name string) modeltest.Exchange {
	return modeltest.FixtureExchange(t, "testdata/"+name)
}

// checkRequests asserts exactly n attempts on the Messages path, each with
// the key (this SDK sends it as a bearer token), the API version header
// and a stream asked for.
func checkRequests(t *testing.T, srv *modeltest.Server, n int) []map[string]any {
	t.Helper()
	return modeltest.CheckRequests(t, srv, path, testKey, n, func(i int, r modeltest.Request) {
		if r.Header.Get("Anthropic-Version") == "" {
			t.Errorf("request %d: no anthropic-version header", i)
		}
	})
}

func TestPlainAnswer(t *testing.T) {
	t.Parallel()
	m, srv := newModel(t, anthropic.Config{}, fixture(t, "text.sse"))
	deltas, reply, err := modeltest.Run(t.Context(), m, modeltest.Hello())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(deltas, "|") != "Hello| there!" || reply.Text != "Hello there!" || len(reply.ToolCalls) != 0 {
		t.Errorf("deltas %q reply %+v", deltas, reply)
	}
	if reply.Model != "claude-sonnet-4-5-20250929" || reply.StopReason != "end_turn" {
		t.Errorf("model %q stop %q", reply.Model, reply.StopReason)
	}
	// 472 uncached + 1536 read from the cache; output from message_delta.
	u := reply.Usage
	if u == nil || u.InputTokens == nil || *u.InputTokens != 2008 || *u.OutputTokens != 15 || u.CachedInputTokens == nil || *u.CachedInputTokens != 1536 {
		t.Errorf("usage %+v", u)
	}
	body := checkRequests(t, srv, 1)[0]
	if body["model"] != "claude-sonnet-4-5" || body["max_tokens"] != float64(anthropic.DefaultMaxTokens) {
		t.Errorf("model %v max_tokens %v", body["model"], body["max_tokens"])
	}
	sys, _ := json.Marshal(body["system"])
	if string(sys) != `[{"text":"Be brief.","type":"text"}]` {
		t.Errorf("system %s", sys)
	}
}

func TestToolCalls(t *testing.T) {
	t.Parallel()
	weather := model.ToolCall{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather", Arguments: `{"city": "Paris"}`}
	clock := model.ToolCall{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_time", Arguments: `{"tz": "Europe/Paris"}`}
	for _, tc := range []struct {
		file, text string
		want       []model.ToolCall
	}{
		{"tool.sse", "I'll check the weather.", []model.ToolCall{weather}},
		{"tools.sse", "I'll check both.", []model.ToolCall{weather, clock}},
		{"bad_args.sse", "", []model.ToolCall{{ID: weather.ID, Name: "get_weather", Arguments: `{"city": "Par`}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			m, srv := newModel(t, anthropic.Config{}, fixture(t, tc.file))
			_, reply, err := modeltest.Run(t.Context(), m, modeltest.Hello())
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != tc.text || reply.StopReason != "tool_use" {
				t.Errorf("text %q stop %q", reply.Text, reply.StopReason)
			}
			if len(reply.ToolCalls) != len(tc.want) {
				t.Fatalf("calls %+v", reply.ToolCalls)
			}
			for i, c := range reply.ToolCalls {
				if c != tc.want[i] {
					t.Errorf("call %d = %+v, want %+v", i, c, tc.want[i])
				}
			}
			checkRequests(t, srv, 1)
		})
	}
}

func TestToolResultRoundTrip(t *testing.T) {
	t.Parallel()
	m, srv := newModel(t, anthropic.Config{MaxTokens: 1000}, fixture(t, "text.sse"))
	req := &model.Request{
		Instructions: "Use tools.",
		Messages: []model.Message{
			{Role: model.RoleUser, Text: "Weather and time in Paris?"},
			{Role: model.RoleAssistant, Text: "Checking.", ToolCalls: []model.ToolCall{
				{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "toolu_2", Name: "get_time", Arguments: `{"tz": "Eur`},
			}},
			{Role: model.RoleTool, ToolCallID: "toolu_1", ToolName: "get_weather", Text: "18°C, clear"},
			{Role: model.RoleTool, ToolCallID: "toolu_2", ToolName: "get_time", Text: "invalid arguments: unexpected end of JSON", IsError: true},
			{Role: model.RoleUser, Text: "Also, be quick."},
		},
		Tools: []model.ToolSpec{{
			Name: "get_weather", Description: "Current weather.",
			Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":9007199254740993}},"required":["city"],"additionalProperties":false}`),
		}, {Name: "get_time"}},
		MaxOutputTokens: 300,
	}
	if _, _, err := modeltest.Run(t.Context(), m, req); err != nil {
		t.Fatal(err)
	}
	checkRequests(t, srv, 1)
	var body struct {
		MaxTokens int `json:"max_tokens"`
		Messages  []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string          `json:"type"`
				Text      string          `json:"text"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				IsError   bool            `json:"is_error"`
				Content   []struct {
					Type, Text string
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.MaxTokens != 300 {
		t.Errorf("max_tokens %d", body.MaxTokens)
	}
	// user, assistant, then one user turn holding both results and the text.
	if len(body.Messages) != 3 || body.Messages[0].Role != "user" || body.Messages[1].Role != "assistant" || body.Messages[2].Role != "user" {
		t.Fatalf("messages %+v", body.Messages)
	}
	a := body.Messages[1].Content
	if len(a) != 3 || a[0].Type != "text" || a[0].Text != "Checking." ||
		a[1].Type != "tool_use" || a[1].ID != "toolu_1" || a[1].Name != "get_weather" || string(a[1].Input) != `{"city":"Paris"}` ||
		a[2].Type != "tool_use" || a[2].ID != "toolu_2" {
		t.Errorf("assistant content %+v", a)
	}
	// The API wants an object; the broken arguments are kept inside one.
	var wrapped map[string]string
	if err := json.Unmarshal(a[2].Input, &wrapped); err != nil || !strings.Contains(fmt.Sprint(wrapped), `{"tz": "Eur`) {
		t.Errorf("broken arguments sent as %s", a[2].Input)
	}
	u := body.Messages[2].Content
	if len(u) != 3 || u[0].Type != "tool_result" || u[0].ToolUseID != "toolu_1" || u[0].IsError || len(u[0].Content) != 1 || u[0].Content[0].Text != "18°C, clear" ||
		u[1].Type != "tool_result" || u[1].ToolUseID != "toolu_2" || !u[1].IsError ||
		u[2].Type != "text" || u[2].Text != "Also, be quick." {
		t.Errorf("user content %+v", u)
	}
	if len(body.Tools) != 2 || body.Tools[0].Name != "get_weather" || body.Tools[0].Description != "Current weather." {
		t.Fatalf("tools %+v", body.Tools)
	}
	var schema map[string]any
	_ = json.Unmarshal(body.Tools[0].InputSchema, &schema)
	if schema["type"] != "object" || schema["additionalProperties"] != false || fmt.Sprint(schema["required"]) != "[city]" ||
		!strings.Contains(string(body.Tools[0].InputSchema), "9007199254740993") {
		t.Errorf("input_schema %s", body.Tools[0].InputSchema)
	}
	if !strings.Contains(string(body.Tools[1].InputSchema), `"type":"object"`) {
		t.Errorf("empty schema sent as %s", body.Tools[1].InputSchema)
	}
}

const answerSchema = `{"type":"object","properties":{"city":{"type":"string"},"temp":{"type":"number"}},"required":["city","temp"],"additionalProperties":false}`

func TestStructuredOutputNative(t *testing.T) {
	t.Parallel()
	m, srv := newModel(t, anthropic.Config{}, fixture(t, "text.sse"))
	req := modeltest.Hello()
	req.Answer = &model.AnswerSpec{Name: "weather_report", Schema: json.RawMessage(answerSchema)}
	if _, _, err := modeltest.Run(t.Context(), m, req); err != nil {
		t.Fatal(err)
	}
	body := checkRequests(t, srv, 1)[0]
	oc, _ := body["output_config"].(map[string]any)
	format, _ := oc["format"].(map[string]any)
	got, _ := json.Marshal(format["schema"])
	var want any
	_ = json.Unmarshal([]byte(answerSchema), &want)
	wantJSON, _ := json.Marshal(want)
	if format["type"] != "json_schema" || string(got) != string(wantJSON) {
		t.Errorf("output_config %v", body["output_config"])
	}
	if _, ok := body["tools"]; ok {
		t.Errorf("tools sent in native mode: %v", body["tools"])
	}
}

func TestStructuredOutputTool(t *testing.T) {
	t.Parallel()
	m, srv := newModel(t, anthropic.Config{AnswerTool: true}, fixture(t, "answer_tool.sse"), fixture(t, "answer_tool.sse"))
	req := modeltest.Hello()
	req.Answer = &model.AnswerSpec{Name: "weather report", Schema: json.RawMessage(answerSchema)}
	_, reply, err := modeltest.Run(t.Context(), m, req)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != `{"city": "Paris", "temp": 18.5}` || len(reply.ToolCalls) != 0 {
		t.Errorf("reply %+v", reply)
	}
	// With other tools on offer the model must call one, the answer included.
	req.Tools = []model.ToolSpec{{Name: "get_weather"}}
	if _, _, err := modeltest.Run(t.Context(), m, req); err != nil {
		t.Fatal(err)
	}
	bodies := checkRequests(t, srv, 2)
	for i, want := range []string{`{"name":"weather_report","type":"tool"}`, `{"type":"any"}`} {
		choice, _ := json.Marshal(bodies[i]["tool_choice"])
		if string(choice) != want {
			t.Errorf("call %d: tool_choice %s, want %s", i, choice, want)
		}
		if _, ok := bodies[i]["output_config"]; ok {
			t.Errorf("call %d: output_config sent in tool mode", i)
		}
		tools, _ := bodies[i]["tools"].([]any)
		last, _ := tools[len(tools)-1].(map[string]any)
		if last["name"] != "weather_report" {
			t.Errorf("call %d: tools %v", i, tools)
		}
	}
}

func errorBody(typ, msg string) string {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
	return string(b)
}

// provider is this package's model for the contract every provider keeps.
var provider = modeltest.Provider{
	Name: "anthropic",
	Key:  testKey,
	New: func(t *testing.T, exchanges ...modeltest.Exchange) (model.Model, *modeltest.Server) {
		return newModel(t, anthropic.Config{AnswerTool: true}, exchanges...)
	},
	Closed: func() (model.Model, error) {
		return anthropic.New(anthropic.Config{Model: "claude-haiku-4-5", BaseURL: "http://127.0.0.1:1", APIKey: testKey})
	},
	// A base URL written with /v1 must not double it.
	Keyless: func(srv *modeltest.Server) (model.Model, error) {
		return anthropic.New(anthropic.Config{Model: "claude-haiku-4-5", BaseURL: srv.URL + "/v1/", HTTPClient: srv.Client()})
	},
	KeylessName:   "anthropic/claude-haiku-4-5",
	Path:          path,
	Ambient:       []string{"ANTHROPIC_API_KEY", "sk-ant-from-environment", "ANTHROPIC_BASE_URL", "http://127.0.0.1:1"},
	CheckRequests: func(t *testing.T, srv *modeltest.Server, n int) { checkRequests(t, srv, n) },
	Fixtures:      "testdata/",
	NoUsageText:   "OK",
	CutAt:         `"text":" the`,
	// Ends cleanly after message_delta, without message_stop.
	ShortThrough: `"stop_reason":"end_turn"`,
	Retryable: []modeltest.RetryCase{
		{Name: "429", Fail: modeltest.Exchange{Status: 429, Header: map[string]string{"Retry-After": "7"},
			Body: errorBody("rate_limit_error", "This request would exceed the rate limit for your organization of 50 input tokens per minute.")},
			Kind: model.KindRateLimited, After: 7 * time.Second},
		{Name: "429-date", Fail: modeltest.Exchange{Status: 429, Header: map[string]string{"Retry-After": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)},
			Body: errorBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")},
			Kind: model.KindRateLimited, After: 59 * time.Minute, Slack: time.Minute + time.Second},
		{Name: "500", Fail: modeltest.Exchange{Status: 500, Body: errorBody("api_error", "Internal server error")}, Kind: model.KindOverloaded},
		{Name: "529", Fail: modeltest.Exchange{Status: 529, Body: errorBody("overloaded_error", "Overloaded")}, Kind: model.KindOverloaded},
	},
	Permanent: []modeltest.PermanentCase{
		{Name: "400", Status: 400, Body: errorBody("invalid_request_error", "messages.1.content.0: tool_use ids must be unique"), Kind: model.KindInvalidRequest, Msg: "must be unique"},
		{Name: "404", Status: 404, Body: errorBody("not_found_error", "model: claude-9"), Kind: model.KindInvalidRequest, Msg: "claude-9"},
		{Name: "413", Status: 413, Body: errorBody("request_too_large", "Request exceeds the maximum allowed number of bytes."), Kind: model.KindInvalidRequest, Msg: "maximum"},
		{Name: "403", Status: 403, Body: errorBody("permission_error", "Your API key does not have permission to use the specified resource."), Kind: model.KindUnauthorized, Msg: "permission"},
	},
	Invalid: []*model.Request{
		nil,
		{Messages: []model.Message{{Role: "system", Text: "x"}}},
		{Messages: []model.Message{{Role: model.RoleTool, Text: "x"}}},
		{Tools: []model.ToolSpec{{Name: "t", Schema: json.RawMessage(`true`)}}},
		{Answer: &model.AnswerSpec{Name: "lookup", Schema: json.RawMessage(`{}`)}, Tools: []model.ToolSpec{{Name: "lookup"}}},
	},
}

func TestContract(t *testing.T) { modeltest.Contract(t, provider) }

func TestKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	echo := modeltest.Exchange{Handler: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		fmt.Fprint(w, errorBody("authentication_error", "invalid credentials: "+r.Header.Get("Authorization")))
	}}
	// The same echo inside a stream's error event.
	inStream := modeltest.Exchange{Handler: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: error\ndata: %s\n\n", errorBody("authentication_error", "key "+r.Header.Get("Authorization")+" revoked"))
	}}
	m, _ := newModel(t, anthropic.Config{}, echo, inStream)
	for i, want := range []int{401, 0} {
		_, _, err := modeltest.Run(t.Context(), m, modeltest.Hello())
		me := modeltest.AsError(t, err)
		if me.Kind != model.KindUnauthorized || me.Status != want || !strings.Contains(me.Message, "[redacted]") {
			t.Errorf("call %d: error %+v", i, me)
		}
		modeltest.NoKey(t, me, testKey)
	}
}

func TestErrorInsideStream(t *testing.T) {
	t.Parallel()
	m, srv := newModel(t, anthropic.Config{}, fixture(t, "error_event.sse"))
	deltas, _, err := modeltest.Run(t.Context(), m, modeltest.Hello())
	me := modeltest.AsError(t, err)
	if me.Kind != model.KindOverloaded || me.Message != "Overloaded" || len(deltas) != 1 {
		t.Errorf("error %+v deltas %q", me, deltas)
	}
	checkRequests(t, srv, 1)
}

func TestConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  anthropic.Config
		want string
	}{
		{anthropic.Config{}, "Model"},
		{anthropic.Config{Model: "m", BaseURL: "api.anthropic.com"}, "BaseURL"},
		{anthropic.Config{Model: "m", MaxTokens: -1}, "MaxTokens"},
	} {
		if _, err := anthropic.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}
