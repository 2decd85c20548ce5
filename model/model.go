package model

import (
	"context"
	"encoding/json"
	"iter"
)

// Model generates replies. Implementations must be safe for concurrent use:
// one Model value serves every run of an agent.
type Model interface {
	// Name identifies the model in journals and usage reports, for example
	// "openai/gpt-4o-mini" or "scripted/demo".
	Name() string

	// Generate sends req and yields chunks as they arrive. Text deltas come
	// first (Chunk.Delta); the final chunk carries the complete Reply. A
	// failure is yielded as a non-nil error, preferably an *Error, and ends
	// the sequence. Generate must stop promptly when ctx is cancelled.
	Generate(ctx context.Context, req *Request) iter.Seq2[*Chunk, error]
}

// Role is who wrote a message.
type Role string

// The roles a transcript holds. Instructions are not a role: they travel in
// Request.Instructions.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the transcript sent to a model.
type Message struct {
	Role Role `json:"role"`
	// Text is the message's text; for a tool message, the tool's result.
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolName is the name of the tool a tool message answers.
	ToolName string `json:"tool_name,omitempty"`
	// IsError marks a tool message that reports a failure.
	IsError bool `json:"is_error,omitempty"`
}

// ToolCall is one call a model asked for.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the raw argument text exactly as the model produced it.
	// It is not guaranteed to be valid JSON: the engine checks it and shows
	// any problem to the model.
	Arguments string `json:"arguments"`
}

// ToolSpec declares a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
}

// AnswerSpec asks the model for a structured final answer.
type AnswerSpec struct {
	// Name names the schema for providers that want one.
	Name string `json:"name"`
	// Schema is the JSON Schema of the answer. Its root is an object;
	// callers wrap other roots before they get here.
	Schema json.RawMessage `json:"schema"`
}

// Request is one model call.
type Request struct {
	Instructions string      `json:"instructions,omitempty"`
	Messages     []Message   `json:"messages"`
	Tools        []ToolSpec  `json:"tools,omitempty"`
	Answer       *AnswerSpec `json:"answer,omitempty"`
	// MaxOutputTokens bounds the reply; 0 leaves it to the provider.
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
}

// Reply is one complete model answer.
type Reply struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Usage is nil when the provider reported none.
	Usage *Usage `json:"usage,omitempty"`
	// Model is the model that answered, as the provider named it.
	Model string `json:"model,omitempty"`
	// StopReason is the provider's reason for ending the reply.
	StopReason string `json:"stop_reason,omitempty"`
}

// Usage is what a provider reported for one reply. A nil counter means the
// provider did not report it, which is different from zero.
type Usage struct {
	InputTokens       *int64 `json:"input_tokens,omitempty"`
	OutputTokens      *int64 `json:"output_tokens,omitempty"`
	CachedInputTokens *int64 `json:"cached_input_tokens,omitempty"`
}

// Chunk is one element of a Generate stream: a text delta, or the final
// reply.
type Chunk struct {
	Delta string
	Reply *Reply
}

// Collect drains a Generate stream and returns its final reply. onDelta, if
// not nil, sees every text delta. A stream that ends without a reply is an
// error of kind Malformed.
func Collect(seq iter.Seq2[*Chunk, error], onDelta func(string)) (*Reply, error) {
	var reply *Reply
	for c, err := range seq {
		if err != nil {
			return nil, err
		}
		if c == nil {
			continue
		}
		if c.Delta != "" && onDelta != nil {
			onDelta(c.Delta)
		}
		if c.Reply != nil {
			reply = c.Reply
		}
	}
	if reply == nil {
		return nil, &Error{Kind: KindMalformed, Message: "stream ended without a reply"}
	}
	return reply, nil
}

// Int64 returns a pointer to v, for building Usage values.
func Int64(v int64) *int64 { return &v }
