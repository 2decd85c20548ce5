package openai

import (
	"context"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/internal/apierr"
)

// responsesParams maps a request onto the Responses API.
func (m *Model) responsesParams(req *model.Request) (responses.ResponseNewParams, error) {
	p := responses.ResponseNewParams{
		Model: shared.ResponsesModel(m.cfg.Model),
		// The whole transcript travels with every call, so nothing needs to
		// stay on OpenAI's side.
		Store: openai.Bool(false),
	}
	if req.Instructions != "" {
		p.Instructions = openai.String(req.Instructions)
	}
	var input responses.ResponseInputParam
	text := func(role responses.EasyInputMessageRole, s string) responses.ResponseInputItemUnionParam {
		return responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
			Role:    role,
			Content: responses.EasyInputMessageContentUnionParam{OfString: openai.String(s)},
		}}
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			input = append(input, text(responses.EasyInputMessageRoleUser, msg.Text))
		case model.RoleAssistant:
			if msg.Text != "" || len(msg.ToolCalls) == 0 {
				input = append(input, text(responses.EasyInputMessageRoleAssistant, msg.Text))
			}
			for _, c := range msg.ToolCalls {
				input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
					CallID: c.ID, Name: c.Name, Arguments: c.Arguments,
				}})
			}
		case model.RoleTool:
			if msg.ToolCallID == "" {
				return p, invalid("message %d: tool message has no tool call id", i)
			}
			input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: openai.String(msg.ToolCallID),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(msg.Text)},
			}})
		default:
			return p, invalid("message %d: unknown role %q", i, msg.Role)
		}
	}
	p.Input.OfInputItemList = input
	for _, t := range req.Tools {
		schema, err := apierr.Schema(t.Schema)
		if err != nil {
			return p, invalid("tool %q: %v", t.Name, err)
		}
		fn := &responses.FunctionToolParam{Name: t.Name, Parameters: schema, Strict: openai.Bool(false)}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: fn})
	}
	if req.Answer != nil {
		schema, err := apierr.Schema(req.Answer.Schema)
		if err != nil {
			return p, invalid("answer schema: %v", err)
		}
		p.Text.Format.OfJSONSchema = &responses.ResponseFormatTextJSONSchemaConfigParam{
			Name:   formatName(req.Answer.Name),
			Schema: schema,
			Strict: openai.Bool(strictable(schema)),
		}
	}
	if req.MaxOutputTokens > 0 {
		p.MaxOutputTokens = openai.Int(int64(req.MaxOutputTokens))
	}
	return p, nil
}

func (m *Model) generateResponses(ctx context.Context, req *model.Request, emit func(string) bool) (*model.Reply, error) {
	params, err := m.responsesParams(req)
	if err != nil {
		return nil, err
	}
	stream := m.resp.NewStreaming(ctx, params)
	defer stream.Close()
	var (
		text  strings.Builder
		calls []*model.ToolCall
		byID  = map[string]*model.ToolCall{} // output item id -> call
		size  int
		final *responses.Response
		stop  string
	)
	callFor := func(itemID string) *model.ToolCall {
		c := byID[itemID]
		if c == nil {
			c = &model.ToolCall{}
			byID[itemID] = c
			calls = append(calls, c)
		}
		return c
	}
loop:
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta", "response.refusal.delta":
			text.WriteString(ev.Delta)
			size += len(ev.Delta)
			if ev.Type == "response.output_text.delta" {
				if err := mustStop(emit(ev.Delta)); err != nil {
					return nil, err
				}
			}
		case "response.output_item.added", "response.output_item.done":
			if ev.Item.Type == "function_call" {
				c := callFor(ev.Item.ID)
				c.ID, c.Name = ev.Item.CallID, ev.Item.Name
				if args := ev.Item.Arguments.OfString; args != "" || ev.Type == "response.output_item.done" {
					c.Arguments = args
				}
			}
		case "response.function_call_arguments.delta":
			callFor(ev.ItemID).Arguments += ev.Delta
			size += len(ev.Delta)
		case "response.function_call_arguments.done":
			callFor(ev.ItemID).Arguments = ev.Arguments
		case "response.completed", "response.incomplete":
			resp := ev.Response
			final = &resp
			stop = string(resp.Status)
			if ev.Type == "response.incomplete" && resp.IncompleteDetails.Reason != "" {
				stop = resp.IncompleteDetails.Reason
			}
			break loop
		case "response.failed":
			e := ev.Response.Error
			msg := e.Message
			if msg == "" {
				msg = "response failed"
			}
			return nil, &model.Error{Kind: apierr.KindOfErrorType(e.Type, string(e.Code)), Provider: provider, Message: apierr.Truncate(m.scrub.Scrub(msg))}
		case "error":
			return nil, &model.Error{Kind: apierr.KindOfErrorType("", ev.Code), Provider: provider, Message: apierr.Truncate(m.scrub.Scrub(ev.Message))}
		}
		if size > apierr.MaxReplyBytes {
			return nil, apierr.Malformed(provider, "reply exceeds "+strconv.Itoa(apierr.MaxReplyBytes)+" bytes")
		}
	}
	if err := stream.Err(); err != nil {
		return nil, m.chatStreamError(ctx, err)
	}
	if ctx.Err() != nil {
		return nil, m.streamError(ctx, ctx.Err())
	}
	if final == nil {
		return nil, apierr.Cut(provider)
	}
	reply := &model.Reply{Model: final.Model, StopReason: stop, Usage: responsesUsage(final)}
	if out := outputOf(final); out != nil {
		reply.Text, reply.ToolCalls = out.Text, out.ToolCalls
	} else {
		// Some servers leave the final output empty and rely on the events.
		reply.Text = text.String()
		for _, c := range calls {
			reply.ToolCalls = append(reply.ToolCalls, *c)
		}
	}
	for i := range reply.ToolCalls {
		if reply.ToolCalls[i].ID == "" {
			reply.ToolCalls[i].ID = "call_" + strconv.Itoa(i)
		}
	}
	return reply, nil
}

// outputOf reads the text and calls of a finished response, or returns nil
// when it holds neither.
func outputOf(resp *responses.Response) *model.Reply {
	var out model.Reply
	found := false
	var text strings.Builder
	for _, item := range resp.Output {
		switch item.Type {
		case "message":
			found = true
			for _, part := range item.Content {
				switch part.Type {
				case "output_text":
					text.WriteString(part.Text)
				case "refusal":
					text.WriteString(part.Refusal)
				}
			}
		case "function_call":
			found = true
			out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: item.CallID, Name: item.Name, Arguments: item.Arguments.OfString})
		}
	}
	if !found {
		return nil
	}
	out.Text = text.String()
	return &out
}

// responsesUsage keeps the counters the server reported and nothing else.
func responsesUsage(resp *responses.Response) *model.Usage {
	if !resp.JSON.Usage.Valid() {
		return nil
	}
	u := resp.Usage
	return reported(model.Usage{
		InputTokens:  counted(u.InputTokens, u.JSON.InputTokens.Valid()),
		OutputTokens: counted(u.OutputTokens, u.JSON.OutputTokens.Valid()),
		CachedInputTokens: counted(u.InputTokensDetails.CachedTokens,
			u.JSON.InputTokensDetails.Valid() && u.InputTokensDetails.JSON.CachedTokens.Valid()),
	})
}

// counted is a counter the server reported (ok), or nil.
func counted(n int64, ok bool) *int64 {
	if !ok {
		return nil
	}
	return &n
}

// reported is u, or nil when the server reported none of its counters.
func reported(u model.Usage) *model.Usage {
	if u == (model.Usage{}) {
		return nil
	}
	return &u
}
