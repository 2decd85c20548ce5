package model_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/modeltest"
	"github.com/hitch-dev/hitch/model/openai"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	ok := modeltest.Exchange{Body: "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"llama3.2\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"OK\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"}
	denied := modeltest.Exchange{Status: 401, Body: `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`}
	srv := modeltest.NewServer(t, ok, denied)
	m, err := openai.New(openai.Config{Model: "llama3.2", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if err := model.Check(t.Context(), m); err != nil {
		t.Fatalf("check: %v", err)
	}
	err = model.Check(t.Context(), m)
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.KindUnauthorized || !strings.Contains(err.Error(), "openai/llama3.2") {
		t.Fatalf("check against a refusing server: %v", err)
	}
	var body struct {
		Messages  []struct{ Role, Content string }
		MaxTokens int `json:"max_tokens"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	last := body.Messages[len(body.Messages)-1]
	if last.Role != "user" || !strings.Contains(last.Content, "OK") || body.MaxTokens <= 0 || body.MaxTokens > 64 {
		t.Errorf("check request %+v", body)
	}
}
