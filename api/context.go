package api

// RunContext answers GET /v1/runs/{id}/context: where each model request
// of a run put its tokens, and what the run's family has cost so far.
type RunContext struct {
	Run      string           `json:"run" doc:"The run's id."`
	Requests []ContextRequest `json:"requests" nullable:"false" doc:"The run's latest model requests, oldest first, at most limit of them; the latest last."`
	More     bool             `json:"more" doc:"Earlier requests exist that are not listed."`
	// FamilyCost is the running cost of the run's family.
	FamilyCost RunningCost `json:"family_cost" doc:"What the run's family (its root and every sub-agent run) has cost so far."`
}

// ContextRequest is one model request as the journal tells it.
type ContextRequest struct {
	Attempt int             `json:"attempt" doc:"The model attempt: counts every call of the run, retries included."`
	Turn    int             `json:"turn"`
	Purpose string          `json:"purpose,omitempty" enum:"compaction" doc:"compaction for a call that summarizes the history; absent for a turn."`
	Model   string          `json:"model,omitempty" doc:"The model of a route the request went to; absent when the agent's model is not a route."`
	Context *ContextAccount `json:"context,omitempty" doc:"The request's context account; absent for a request journaled before hitch kept them."`
	Result  string          `json:"result,omitempty" enum:"reply,failed,interrupted" doc:"How the request ended; absent while it is in flight."`
	Usage   *ReplyUsage     `json:"usage,omitempty" doc:"The provider's exact count; absent when it reported none or has not answered."`
	CostUSD *float64        `json:"cost_usd,omitempty" doc:"The usage at the model's price as the reply came; absent when either is unknown."`
}

// ContextAccount is a model request's context account, as its model.attempt
// entry carries it (data.context).
type ContextAccount struct {
	Estimator  string            `json:"estimator" doc:"How the counts were made: bytes/4 is a token per four bytes of text, rounded up in each category."`
	Window     int64             `json:"window" minimum:"0" doc:"The context window, in tokens, the request was fitted into; 0 when the agent sets none (nothing is compacted)."`
	Estimate   int64             `json:"estimate" minimum:"0" doc:"The request's estimated input tokens: the sum of the categories."`
	Categories ContextCategories `json:"categories"`
}

// ContextCategories are a request's estimated input tokens by where they
// come from.
type ContextCategories struct {
	System       int64 `json:"system" minimum:"0" doc:"hitch's own instructions (a compaction call's)."`
	Agent        int64 `json:"agent" minimum:"0" doc:"The agent's instructions."`
	Run          int64 `json:"run" minimum:"0" doc:"The caller's layer of instructions for the run."`
	Hook         int64 `json:"hook" minimum:"0" doc:"What a pre-generate hook added to the instructions."`
	Tools        int64 `json:"tools" minimum:"0" doc:"The tool declarations."`
	User         int64 `json:"user" minimum:"0" doc:"User messages: the input, a session's earlier messages, steering, corrections."`
	Assistant    int64 `json:"assistant" minimum:"0" doc:"The model's replies and their calls."`
	ToolResults  int64 `json:"tool_results" minimum:"0" doc:"The calls' results."`
	Summary      int64 `json:"summary" minimum:"0" doc:"The compaction summary standing for older history."`
	AnswerSchema int64 `json:"answer_schema" minimum:"0" doc:"A typed answer's schema."`
}

// ReplyUsage is what a provider reported for one reply; null is a counter
// it did not report, never zero.
type ReplyUsage struct {
	InputTokens       *int64 `json:"input_tokens" nullable:"true"`
	OutputTokens      *int64 `json:"output_tokens" nullable:"true"`
	CachedInputTokens *int64 `json:"cached_input_tokens" nullable:"true"`
}

// RunningCost is what a family or a session has cost so far.
type RunningCost struct {
	USD  *float64 `json:"usd" nullable:"true" doc:"USD so far, live runs included; null when not priced (a model without a price, or a call that reported no usage)."`
	Runs int      `json:"runs" doc:"The runs counted."`
	Live int      `json:"live" doc:"Of them, the runs not ended: their cost still grows."`
}
