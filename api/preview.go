package api

import "encoding/json"

// AgentPreview answers GET /v1/agents/{name}/preview: the first model
// request a run of the agent would send, built as a run builds it, with no
// model called and no hook run.
type AgentPreview struct {
	Agent   string `json:"agent"`
	Version int    `json:"version"`
	Model   string `json:"model" doc:"The model the request would go to: the agent's, or the one its route would pick now."`
	// The request as the model would receive it.
	Instructions string           `json:"instructions" doc:"The system instructions: the agent's, then the run's layered over them."`
	Messages     []PreviewMessage `json:"messages" nullable:"false" doc:"The messages, in order: the session's history, then the input."`
	Tools        []PreviewTool    `json:"tools" nullable:"false" doc:"The tools declared to the model."`
	Answer       json.RawMessage  `json:"answer,omitempty" doc:"The typed answer's schema as sent; absent when the answer is text."`
	// Parts split the request by layer, in the order it holds them.
	Parts   []PreviewPart  `json:"parts" nullable:"false" doc:"The request by the layer each part comes from, each with its estimated tokens."`
	Context ContextAccount `json:"context" doc:"The estimate against the model's window, as the run's model.attempt entry would record it."`
	// Compacts: the run would summarize older history first.
	Compacts bool `json:"compacts" doc:"The estimate fills enough of the window that the run would summarize older history before sending the request."`
}

// PreviewMessage is one message of a previewed request.
type PreviewMessage struct {
	Role       string            `json:"role" enum:"user,assistant,tool"`
	Text       string            `json:"text,omitempty"`
	ToolCalls  []PreviewToolCall `json:"tool_calls,omitempty" doc:"The calls an assistant message asked for."`
	ToolCallID string            `json:"tool_call_id,omitempty" doc:"The call a tool message answers."`
	ToolName   string            `json:"tool_name,omitempty"`
	IsError    bool              `json:"is_error,omitempty"`
}

// PreviewToolCall is a call an earlier reply asked for.
type PreviewToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// PreviewTool is a tool as declared to the model.
type PreviewTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty" doc:"The JSON Schema of its arguments."`
}

// PreviewPart is one part of a previewed request.
type PreviewPart struct {
	Layer  string `json:"layer" enum:"agent_instructions,run_instructions,hook_instructions,session_history,summary,input,tool,answer_schema" doc:"Where the part comes from. hook_instructions marks where a pre-generate hook may add instructions when the run starts (0 tokens: the preview runs no hook)."`
	Name   string `json:"name,omitempty" doc:"A tool's name, a message's role, a hook's name."`
	Text   string `json:"text,omitempty"`
	Tokens int64  `json:"tokens" minimum:"0"`
}
