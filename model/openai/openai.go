package openai

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"regexp"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/internal/apierr"
)

// The wire protocols Config.API selects.
const (
	APIChat      = "chat"
	APIResponses = "responses"
)

// The request fields that can carry a reply's token bound.
const (
	MaxTokensCompletion = "max_completion_tokens"
	MaxTokensLegacy     = "max_tokens"
)

// DefaultBaseURL is OpenAI's own endpoint.
const DefaultBaseURL = "https://api.openai.com/v1"

const provider = "openai"

// Config describes one model behind an OpenAI-style endpoint.
type Config struct {
	// Model is the model id the server knows, for example "gpt-4o-mini" or
	// "llama3.2". Required.
	Model string
	// BaseURL is the API root, including its version path, for example
	// "http://localhost:11434/v1" for a local Ollama. Default
	// https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token. The caller resolves it (from the
	// environment, a secret store...); it may be empty for local servers,
	// and then no Authorization header is sent. The process environment is
	// never read here. Default none.
	APIKey string
	// API selects the wire protocol: "chat" (Chat Completions) or
	// "responses". Default "chat".
	API string
	// HTTPClient sends the requests. Calls are bounded by their context, so
	// the client needs no overall timeout. Default: a client on a clone of
	// http.DefaultTransport.
	HTTPClient *http.Client
	// Name labels the model in journals and usage reports. Default
	// "openai/" + Model.
	Name string
	// Headers are extra request headers, for gateways that want them. Their
	// values are treated as secrets and scrubbed from errors. Default none.
	Headers map[string]string
	// MaxTokensField names the Chat Completions field that carries
	// Request.MaxOutputTokens: "max_completion_tokens" (required by OpenAI's
	// reasoning models) or "max_tokens" (understood by every compatible
	// server). Default max_completion_tokens for api.openai.com and
	// max_tokens for any other server.
	MaxTokensField string
	// NoStream asks for each reply whole instead of streamed, for
	// OpenAI-compatible servers that stream text but not tool calls.
	// Chat Completions only. Default false: replies are streamed.
	NoStream bool
}

// Model is a model.Model that talks to an OpenAI-style endpoint. It is safe
// for concurrent use.
type Model struct {
	cfg   Config
	name  string
	chat  openai.ChatCompletionService
	resp  responses.ResponseService
	scrub apierr.Scrubber
}

var _ model.Model = (*Model)(nil)

// New checks cfg and builds the model. It makes no request.
func New(cfg Config) (*Model, error) {
	u, base, err := apierr.CheckConfig(provider, cfg.Model, cfg.BaseURL, DefaultBaseURL)
	if err != nil {
		return nil, err
	}
	cfg.BaseURL = base
	switch cfg.API {
	case "":
		cfg.API = APIChat
	case APIChat, APIResponses:
	default:
		return nil, fmt.Errorf("openai config: API %q is not one of %q, %q", cfg.API, APIChat, APIResponses)
	}
	if cfg.NoStream && cfg.API != APIChat {
		return nil, fmt.Errorf("openai config: NoStream needs API %q; the %q API is always streamed", APIChat, cfg.API)
	}
	switch cfg.MaxTokensField {
	case "":
		cfg.MaxTokensField = MaxTokensLegacy
		if u.Hostname() == "api.openai.com" {
			cfg.MaxTokensField = MaxTokensCompletion
		}
	case MaxTokensCompletion, MaxTokensLegacy:
	default:
		return nil, fmt.Errorf("openai config: MaxTokensField %q is not one of %q, %q", cfg.MaxTokensField, MaxTokensCompletion, MaxTokensLegacy)
	}
	cfg.HTTPClient = apierr.Client(cfg.HTTPClient)
	name := cfg.Name
	if name == "" {
		name = provider + "/" + cfg.Model
	}
	scrub := apierr.Scrubber{cfg.APIKey}
	// The services are built directly rather than through openai.NewClient,
	// which would fill in OPENAI_API_KEY and OPENAI_BASE_URL from the
	// environment: a local server must never receive a key meant for OpenAI.
	opts := []option.RequestOption{
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithBaseURL(cfg.BaseURL),
		// The engine owns retries and counts every attempt.
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
		scrub = append(scrub, v)
	}
	opts = append(opts, option.WithMiddleware(apierr.Middleware(provider, scrub)))
	return &Model{
		cfg:   cfg,
		name:  name,
		chat:  openai.NewChatCompletionService(opts...),
		resp:  responses.NewResponseService(opts...),
		scrub: scrub,
	}, nil
}

// Name returns the model's label.
func (m *Model) Name() string { return m.name }

// Generate sends req over the configured API and streams the reply.
func (m *Model) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return apierr.Generate(provider, req, func(emit func(string) bool) (*model.Reply, error) {
		if m.cfg.API == APIResponses {
			return m.generateResponses(ctx, req, emit)
		}
		return m.generateChat(ctx, req, emit)
	})
}

// invalid builds the error for a request that cannot be sent.
func invalid(format string, args ...any) *model.Error {
	return apierr.Invalid(provider, format, args...)
}

// strictable reports whether OpenAI's strict structured output accepts a
// schema as it is: every object closes its properties and requires all of
// them. Strict mode is only asked for then, since a schema it rejects would
// fail every call, while a non-strict schema still shapes the answer.
func strictable(v any) bool {
	switch s := v.(type) {
	case map[string]any:
		if props, ok := s["properties"].(map[string]any); ok || s["type"] == "object" {
			if ap, ok := s["additionalProperties"].(bool); !ok || ap {
				return false
			}
			req := map[string]bool{}
			if list, ok := s["required"].([]any); ok {
				for _, r := range list {
					if name, ok := r.(string); ok {
						req[name] = true
					}
				}
			}
			for name := range props {
				if !req[name] {
					return false
				}
			}
		}
		for _, key := range []string{"properties", "$defs", "definitions"} {
			if sub, ok := s[key].(map[string]any); ok {
				for _, child := range sub {
					if !strictable(child) {
						return false
					}
				}
			}
		}
		for _, key := range []string{"items", "not"} {
			if child, ok := s[key]; ok && !strictable(child) {
				return false
			}
		}
		for _, key := range []string{"anyOf", "allOf", "oneOf"} {
			if list, ok := s[key].([]any); ok {
				for _, child := range list {
					if !strictable(child) {
						return false
					}
				}
			}
		}
	case []any:
		for _, child := range s {
			if !strictable(child) {
				return false
			}
		}
	}
	return true
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// formatName makes a structured output name OpenAI accepts: letters,
// digits, '_' and '-', at most 64 characters.
func formatName(name string) string {
	name = unsafeName.ReplaceAllString(name, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		return "answer"
	}
	return name
}

// streamError classifies what ended a stream early.
func (m *Model) streamError(ctx context.Context, err error) *model.Error {
	return apierr.Transport(ctx, provider, err, m.scrub)
}

// mustStop turns a consumer's refusal into apierr.ErrStopped.
func mustStop(ok bool) error {
	if !ok {
		return apierr.ErrStopped
	}
	return nil
}
