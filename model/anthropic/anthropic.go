package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/internal/apierr"
)

// DefaultBaseURL is Anthropic's endpoint.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens bounds a reply when neither the request nor the config
// does; the API requires a bound on every call.
const DefaultMaxTokens = 4096

const provider = "anthropic"

// Config describes one model behind Anthropic's Messages API.
type Config struct {
	// Model is the model id, for example "claude-sonnet-4-5". Required.
	Model string
	// BaseURL is the API root, without the /v1 that the Messages path
	// already holds (a trailing /v1 is tolerated). Default
	// https://api.anthropic.com.
	BaseURL string
	// APIKey is sent as the x-api-key header. The caller resolves it; the
	// process environment is never read here. Default none.
	APIKey string
	// MaxTokens bounds a reply when Request.MaxOutputTokens is 0. Default
	// 4096.
	MaxTokens int
	// HTTPClient sends the requests. Calls are bounded by their context.
	// Default: a client on a clone of http.DefaultTransport.
	HTTPClient *http.Client
	// Name labels the model in journals and usage reports. Default
	// "anthropic/" + Model.
	Name string
	// Headers are extra request headers (an anthropic-beta flag, a
	// gateway's token). Their values are scrubbed from errors. Default none.
	Headers map[string]string
	// AnswerTool asks for a structured answer through a tool the model must
	// call, whose input is the answer, instead of the native output format.
	// Use it for models or gateways that refuse output_config. Default
	// false.
	AnswerTool bool
}

// Model is a model.Model that talks to Anthropic. It is safe for concurrent
// use.
type Model struct {
	cfg   Config
	name  string
	msgs  anthropic.MessageService
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
	// The SDK's paths start with v1/; a base that ends with it would double it.
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	switch {
	case cfg.MaxTokens == 0:
		cfg.MaxTokens = DefaultMaxTokens
	case cfg.MaxTokens < 0:
		return nil, fmt.Errorf("anthropic config: MaxTokens %d is negative", cfg.MaxTokens)
	}
	cfg.HTTPClient = apierr.Client(cfg.HTTPClient)
	name := cfg.Name
	if name == "" {
		name = provider + "/" + cfg.Model
	}
	scrub := apierr.Scrubber{cfg.APIKey}
	opts := []option.RequestOption{
		// No ANTHROPIC_API_KEY, profile or base URL from the environment:
		// the caller decides where the key comes from.
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithBaseURL(u.String()),
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
	client := anthropic.NewClient(opts...)
	return &Model{cfg: cfg, name: name, msgs: client.Messages, scrub: scrub}, nil
}

// Name returns the model's label.
func (m *Model) Name() string { return m.name }

// Generate sends req to the Messages API and streams the reply.
func (m *Model) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return apierr.Generate(provider, req, func(emit func(string) bool) (*model.Reply, error) {
		return m.generate(ctx, req, emit)
	})
}

func invalid(format string, args ...any) *model.Error {
	return apierr.Invalid(provider, format, args...)
}

// inputSchema spreads a schema over the SDK's input_schema type, which
// names properties and required and carries every other keyword as an
// extra field.
func inputSchema(s map[string]any) anthropic.ToolInputSchemaParam {
	var p anthropic.ToolInputSchemaParam
	extra := map[string]any{}
	for k, v := range s {
		switch k {
		case "type":
		case "properties":
			p.Properties = v
		case "required":
			if list, ok := v.([]any); ok {
				for _, r := range list {
					if name, ok := r.(string); ok {
						p.Required = append(p.Required, name)
					}
				}
			}
		default:
			extra[k] = v
		}
	}
	if p.Properties == nil {
		p.Properties = map[string]any{}
	}
	if len(extra) > 0 {
		p.ExtraFields = extra
	}
	return p
}

// toolInput is how a call's arguments go back to the API, which wants a
// JSON object. Arguments that are not one are wrapped, so the model can
// still see what it wrote.
func toolInput(args string) any {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" {
		return map[string]any{}
	}
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed)
	}
	return map[string]any{"unparsed_arguments": args}
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// answerToolName is the name of the tool that carries a structured answer.
func answerToolName(spec *model.AnswerSpec) string {
	name := unsafeName.ReplaceAllString(spec.Name, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		name = "answer"
	}
	return name
}

// params maps a request onto the Messages API.
func (m *Model) params(req *model.Request) (anthropic.MessageNewParams, string, error) {
	p := anthropic.MessageNewParams{Model: m.cfg.Model, MaxTokens: int64(m.cfg.MaxTokens)}
	if req.MaxOutputTokens > 0 {
		p.MaxTokens = int64(req.MaxOutputTokens)
	}
	if req.Instructions != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.Instructions}}
	}
	type turn struct {
		user   bool
		blocks []anthropic.ContentBlockParamUnion
	}
	var turns []turn
	add := func(user bool, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return // the API refuses empty turns
		}
		// The API wants user and assistant turns to alternate.
		if n := len(turns); n > 0 && turns[n-1].user == user {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			return
		}
		turns = append(turns, turn{user: user, blocks: blocks})
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			if msg.Text != "" {
				add(true, anthropic.NewTextBlock(msg.Text))
			}
		case model.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if msg.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(msg.Text))
			}
			for _, c := range msg.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, toolInput(c.Arguments), c.Name))
			}
			add(false, blocks...)
		case model.RoleTool:
			if msg.ToolCallID == "" {
				return p, "", invalid("message %d: tool message has no tool call id", i)
			}
			block := anthropic.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
			if msg.Text != "" {
				block.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: msg.Text}}}
			}
			if msg.IsError {
				block.IsError = anthropic.Bool(true)
			}
			add(true, anthropic.ContentBlockParamUnion{OfToolResult: &block})
		default:
			return p, "", invalid("message %d: unknown role %q", i, msg.Role)
		}
	}
	for _, t := range turns {
		if t.user {
			p.Messages = append(p.Messages, anthropic.NewUserMessage(t.blocks...))
		} else {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(t.blocks...))
		}
	}
	names := map[string]bool{}
	for _, t := range req.Tools {
		s, err := apierr.Schema(t.Schema)
		if err != nil {
			return p, "", invalid("tool %q: %v", t.Name, err)
		}
		tp := anthropic.ToolParam{Name: t.Name, InputSchema: inputSchema(s)}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tp})
		names[t.Name] = true
	}
	answerTool := ""
	if req.Answer != nil {
		s, err := apierr.Schema(req.Answer.Schema)
		if err != nil {
			return p, "", invalid("answer schema: %v", err)
		}
		if !m.cfg.AnswerTool {
			p.OutputConfig.Format = anthropic.JSONOutputFormatParam{Schema: s}
			return p, "", nil
		}
		answerTool = answerToolName(req.Answer)
		if names[answerTool] {
			return p, "", invalid("answer name %q is also a tool's name", answerTool)
		}
		tp := anthropic.ToolParam{
			Name:        answerTool,
			Description: anthropic.String("Give the final answer. Call this exactly once, when you are done."),
			InputSchema: inputSchema(s),
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tp})
		if len(req.Tools) == 0 {
			p.ToolChoice.OfTool = &anthropic.ToolChoiceToolParam{Name: answerTool}
		} else {
			// The model may still need the other tools first; it must end
			// with some tool, and the answer is one.
			p.ToolChoice.OfAny = &anthropic.ToolChoiceAnyParam{}
		}
	}
	return p, answerTool, nil
}

// block is one content block of a streamed message.
type block struct {
	kind      string
	text      strings.Builder
	id, name  string
	args      strings.Builder
	startArgs string // the input given whole at the block's start, if any
}

func (m *Model) generate(ctx context.Context, req *model.Request, emit func(string) bool) (*model.Reply, error) {
	params, answerTool, err := m.params(req)
	if err != nil {
		return nil, err
	}
	stream := m.msgs.NewStreaming(ctx, params)
	defer stream.Close()
	var (
		blocks   = map[int64]*block{}
		size     int
		done     bool
		modelID  string
		stop     string
		counters usage
	)
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			modelID = ev.Message.Model
			if ev.Message.JSON.Usage.Valid() {
				counters.readStart(ev.Message.Usage)
			}
		case "content_block_start":
			b := &block{kind: ev.ContentBlock.Type, id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
			blocks[ev.Index] = b
			switch b.kind {
			case "text":
				if t := ev.ContentBlock.Text; t != "" {
					b.text.WriteString(t)
					if !emit(t) {
						return nil, apierr.ErrStopped
					}
				}
			case "tool_use":
				if raw := ev.ContentBlock.JSON.Input.Raw(); raw != "" && raw != "{}" && raw != "null" {
					b.startArgs = raw
				}
			}
		case "content_block_delta":
			b := blocks[ev.Index]
			if b == nil {
				return nil, apierr.Malformed(provider, "delta for content block "+strconv.FormatInt(ev.Index, 10)+" before its start")
			}
			switch ev.Delta.Type {
			case "text_delta":
				b.text.WriteString(ev.Delta.Text)
				size += len(ev.Delta.Text)
				if ev.Delta.Text != "" && !emit(ev.Delta.Text) {
					return nil, apierr.ErrStopped
				}
			case "input_json_delta":
				b.args.WriteString(ev.Delta.PartialJSON)
				size += len(ev.Delta.PartialJSON)
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				stop = string(ev.Delta.StopReason)
			}
			if ev.JSON.Usage.Valid() {
				counters.readDelta(ev.Usage)
			}
		case "message_stop":
			done = true
		}
		if size > apierr.MaxReplyBytes {
			return nil, apierr.Malformed(provider, "reply exceeds "+strconv.Itoa(apierr.MaxReplyBytes)+" bytes")
		}
		if done {
			break
		}
	}
	if err := stream.Err(); err != nil {
		return nil, m.streamError(ctx, err)
	}
	if ctx.Err() != nil {
		return nil, apierr.Transport(ctx, provider, ctx.Err(), m.scrub)
	}
	if !done {
		return nil, apierr.Cut(provider)
	}
	reply := &model.Reply{Model: modelID, StopReason: stop, Usage: counters.usage()}
	order := make([]int64, 0, len(blocks))
	for i := range blocks {
		order = append(order, i)
	}
	sort.Slice(order, func(a, b int) bool { return order[a] < order[b] })
	var text strings.Builder
	answer, answered := "", false
	for _, i := range order {
		b := blocks[i]
		switch b.kind {
		case "text":
			text.WriteString(b.text.String())
		case "tool_use":
			args := b.args.String()
			if args == "" {
				args = b.startArgs
			}
			if args == "" {
				args = "{}"
			}
			if answerTool != "" && b.name == answerTool {
				answer, answered = args, true
				continue
			}
			reply.ToolCalls = append(reply.ToolCalls, model.ToolCall{ID: b.id, Name: b.name, Arguments: args})
		}
	}
	reply.Text = text.String()
	if answered && len(reply.ToolCalls) == 0 {
		// The answer tool's input is the answer; no tool runs for it. Next
		// to other calls it is dropped: the model answers again once their
		// results are in.
		reply.Text = answer
	}
	return reply, nil
}

// streamError classifies an error event inside the stream, then anything
// else.
func (m *Model) streamError(ctx context.Context, err error) *model.Error {
	var ae *anthropic.Error
	if ctx.Err() == nil && errors.As(err, &ae) {
		msg := ae.Message
		if msg == "" {
			msg = string(ae.Type())
		}
		return &model.Error{
			Kind:     apierr.KindOfErrorType(string(ae.Type()), ""),
			Provider: provider,
			Message:  apierr.Truncate(m.scrub.Scrub(msg)),
		}
	}
	return apierr.Transport(ctx, provider, err, m.scrub)
}

// usage gathers the counters of message_start and message_delta; a later
// report of a counter replaces an earlier one, since the API's counts are
// cumulative.
type usage struct {
	input, output, cacheRead, cacheWrite *int64
}

func (u *usage) readStart(v anthropic.Usage) {
	set(&u.input, v.InputTokens, v.JSON.InputTokens.Valid())
	set(&u.output, v.OutputTokens, v.JSON.OutputTokens.Valid())
	set(&u.cacheRead, v.CacheReadInputTokens, v.JSON.CacheReadInputTokens.Valid())
	set(&u.cacheWrite, v.CacheCreationInputTokens, v.JSON.CacheCreationInputTokens.Valid())
}

func (u *usage) readDelta(v anthropic.MessageDeltaUsage) {
	set(&u.input, v.InputTokens, v.JSON.InputTokens.Valid())
	set(&u.output, v.OutputTokens, v.JSON.OutputTokens.Valid())
	set(&u.cacheRead, v.CacheReadInputTokens, v.JSON.CacheReadInputTokens.Valid())
	set(&u.cacheWrite, v.CacheCreationInputTokens, v.JSON.CacheCreationInputTokens.Valid())
}

func set(dst **int64, v int64, ok bool) {
	if ok {
		*dst = model.Int64(v)
	}
}

// usage converts to hitch's counting: Anthropic's input_tokens leaves out
// the cached part, hitch's InputTokens includes it.
func (u *usage) usage() *model.Usage {
	var out model.Usage
	if u.input != nil {
		total := *u.input
		if u.cacheRead != nil {
			total += *u.cacheRead
		}
		if u.cacheWrite != nil {
			total += *u.cacheWrite
		}
		out.InputTokens = model.Int64(total)
	}
	out.OutputTokens = u.output
	out.CachedInputTokens = u.cacheRead
	if out == (model.Usage{}) {
		return nil
	}
	return &out
}
