package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/internal/apierr"
)

// chatParams maps a request onto Chat Completions.
func (m *Model) chatParams(req *model.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model: shared.ChatModel(m.cfg.Model),
		// Without this the stream carries no usage at all.
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if req.Instructions != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.Instructions))
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(msg.Text))
		case model.RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if msg.Text != "" || len(msg.ToolCalls) == 0 {
				a.Content.OfString = openai.String(msg.Text)
			}
			for _, c := range msg.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: c.ID,
						// Sent back as the model wrote them, valid JSON or not.
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case model.RoleTool:
			if msg.ToolCallID == "" {
				return p, invalid("message %d: tool message has no tool call id", i)
			}
			p.Messages = append(p.Messages, openai.ToolMessage(msg.Text, msg.ToolCallID))
		default:
			return p, invalid("message %d: unknown role %q", i, msg.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := apierr.Schema(t.Schema)
		if err != nil {
			return p, invalid("tool %q: %v", t.Name, err)
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionToolUnionParam{OfFunction: &openai.ChatCompletionFunctionToolParam{Function: fn}})
	}
	if req.Answer != nil {
		schema, err := apierr.Schema(req.Answer.Schema)
		if err != nil {
			return p, invalid("answer schema: %v", err)
		}
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   formatName(req.Answer.Name),
				Schema: schema,
				Strict: openai.Bool(strictable(schema)),
			},
		}
	}
	if req.MaxOutputTokens > 0 {
		if m.cfg.MaxTokensField == MaxTokensCompletion {
			p.MaxCompletionTokens = openai.Int(int64(req.MaxOutputTokens))
		} else {
			p.MaxTokens = openai.Int(int64(req.MaxOutputTokens))
		}
	}
	return p, nil
}

// chatReply gathers a Chat Completions stream.
type chatReply struct {
	text   strings.Builder
	calls  []*model.ToolCall
	slot   map[int64]int // tool call index on the wire -> position in calls
	finish string
	model  string
	usage  *model.Usage
	size   int
}

// addCall folds one tool call delta in. A delta that names a new id at an
// index already in use starts a new call: some compatible servers number
// every call 0.
func (r *chatReply) addCall(d openai.ChatCompletionChunkChoiceDeltaToolCall) {
	pos, ok := r.slot[d.Index]
	if !ok || (d.ID != "" && r.calls[pos].ID != "" && r.calls[pos].ID != d.ID) {
		r.calls = append(r.calls, &model.ToolCall{})
		pos = len(r.calls) - 1
		r.slot[d.Index] = pos
	}
	c := r.calls[pos]
	if d.ID != "" {
		c.ID = d.ID
	}
	if d.Function.Name != "" && c.Name != d.Function.Name {
		c.Name += d.Function.Name
	}
	c.Arguments += d.Function.Arguments
	r.size += len(d.Function.Arguments)
}

func (m *Model) generateChat(ctx context.Context, req *model.Request, emit func(string) bool) (*model.Reply, error) {
	params, err := m.chatParams(req)
	if err != nil {
		return nil, err
	}
	if m.cfg.NoStream {
		return m.generateChatWhole(ctx, params, emit)
	}
	stream := m.chat.NewStreaming(ctx, params)
	defer stream.Close()
	r := chatReply{slot: map[int64]int{}}
	for stream.Next() {
		chunk := stream.Current()
		if chunk.Model != "" {
			r.model = chunk.Model
		}
		if chunk.JSON.Usage.Valid() {
			r.usage = chatUsage(chunk.Usage)
		}
		for _, choice := range chunk.Choices {
			if choice.Index != 0 {
				continue // only one choice is ever asked for
			}
			if d := choice.Delta.Content; d != "" {
				r.text.WriteString(d)
				r.size += len(d)
				if err := mustStop(emit(d)); err != nil {
					return nil, err
				}
			}
			if d := choice.Delta.Refusal; d != "" {
				// A refusal is the model's answer; the engine shows it.
				r.text.WriteString(d)
				r.size += len(d)
			}
			for _, tc := range choice.Delta.ToolCalls {
				r.addCall(tc)
			}
			if choice.FinishReason != "" {
				r.finish = choice.FinishReason
			}
		}
		if r.size > apierr.MaxReplyBytes {
			return nil, apierr.Malformed(provider, "reply exceeds "+strconv.Itoa(apierr.MaxReplyBytes)+" bytes")
		}
	}
	if err := stream.Err(); err != nil {
		return nil, m.chatStreamError(ctx, err)
	}
	if ctx.Err() != nil {
		return nil, m.streamError(ctx, ctx.Err())
	}
	if r.finish == "" {
		// [DONE] or a clean EOF without a finish reason: the answer was cut.
		return nil, apierr.Cut(provider)
	}
	if r.finish == "tool_calls" && len(r.calls) == 0 {
		// Some compatible servers stream text but drop the tool calls: the
		// agent would take a reply without calls for its answer.
		return nil, apierr.Malformed(provider, `the streamed reply ended with finish_reason "tool_calls" but carried no tool call; `+
			"this server may not stream tool calls: set stream: false on the model (openai.Config.NoStream)")
	}
	return r.reply(), nil
}

// reply builds the reply from what was gathered.
func (r *chatReply) reply() *model.Reply {
	reply := &model.Reply{Text: r.text.String(), Usage: r.usage, Model: r.model, StopReason: r.finish}
	for i, c := range r.calls {
		if c.ID == "" {
			// Some servers omit ids; the transcript needs one to link the result.
			c.ID = "call_" + strconv.Itoa(i)
		}
		reply.ToolCalls = append(reply.ToolCalls, *c)
	}
	return reply
}

// generateChatWhole asks for the reply in one response, for servers that
// do not stream tool calls. The text reaches the consumer as one delta.
func (m *Model) generateChatWhole(ctx context.Context, params openai.ChatCompletionNewParams, emit func(string) bool) (*model.Reply, error) {
	// Servers refuse stream options on a request that is not streamed.
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
	c, err := m.chat.New(ctx, params, option.WithMiddleware(limitBody))
	if err != nil {
		if errors.Is(err, errTooLarge) && ctx.Err() == nil {
			return nil, apierr.Malformed(provider, "reply exceeds "+strconv.Itoa(apierr.MaxReplyBytes)+" bytes")
		}
		return nil, m.streamError(ctx, err)
	}
	r := chatReply{model: c.Model}
	if c.JSON.Usage.Valid() {
		r.usage = chatUsage(c.Usage)
	}
	var choice *openai.ChatCompletionChoice
	for i := range c.Choices {
		if c.Choices[i].Index == 0 {
			choice = &c.Choices[i]
			break
		}
	}
	if choice == nil {
		return nil, apierr.Malformed(provider, "the reply has no choice")
	}
	r.finish = choice.FinishReason
	r.text.WriteString(choice.Message.Content)
	// A refusal is the model's answer; the engine shows it.
	r.text.WriteString(choice.Message.Refusal)
	for _, tc := range choice.Message.ToolCalls {
		r.calls = append(r.calls, &model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if d := choice.Message.Content; d != "" {
		if err := mustStop(emit(d)); err != nil {
			return nil, err
		}
	}
	return r.reply(), nil
}

// errTooLarge ends the reading of a response body over the reply bound.
var errTooLarge = errors.New("response body too large")

// limitBody is an SDK middleware that bounds a whole response's body.
func limitBody(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err == nil && res != nil && res.Body != nil {
		res.Body = &boundedBody{rc: res.Body, left: apierr.MaxReplyBytes + 64<<10}
	}
	return res, err
}

// boundedBody fails a read past its bound instead of truncating, so a
// large reply is never mistaken for a short one.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// chatStreamError classifies an error event inside a stream, then anything
// else.
func (m *Model) chatStreamError(ctx context.Context, err error) *model.Error {
	var se *ssestream.StreamError
	if ctx.Err() == nil && errors.As(err, &se) {
		b := apierr.ParseBody(se.Event.Data)
		return &model.Error{
			Kind:     apierr.KindOfErrorType(b.Type, b.Code),
			Provider: provider,
			Message:  apierr.Truncate(m.scrub.Scrub(b.Message)),
		}
	}
	return m.streamError(ctx, err)
}

// chatUsage keeps the counters the server reported and nothing else.
func chatUsage(u openai.CompletionUsage) *model.Usage {
	return reported(model.Usage{
		InputTokens:  counted(u.PromptTokens, u.JSON.PromptTokens.Valid()),
		OutputTokens: counted(u.CompletionTokens, u.JSON.CompletionTokens.Valid()),
		CachedInputTokens: counted(u.PromptTokensDetails.CachedTokens,
			u.JSON.PromptTokensDetails.Valid() && u.PromptTokensDetails.JSON.CachedTokens.Valid()),
	})
}
