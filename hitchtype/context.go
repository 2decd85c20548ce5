package hitchtype

import (
	"encoding/json"
	"fmt"

	"github.com/hitch-dev/hitch/model"
)

// EstimatorBytes is the estimator the engine's context accounting uses: a
// token for every four bytes of text, rounded up in each category. It
// over-counts prose a little for most tokenizers and under-counts dense
// JSON; the provider's own count arrives with the reply.
const EstimatorBytes = "bytes/4"

// ContextAccount records where one model request's tokens sit, as
// estimated when the request was built, and the window it was fitted
// into. It rides on the request's model.attempt entry.
type ContextAccount struct {
	// Estimator names how the counts were made (EstimatorBytes).
	Estimator string `json:"estimator"`
	// Window is the context window, in tokens, the request was fitted
	// into (the agent's Limits.ContextWindow); 0 when the agent sets
	// none, and then nothing is compacted.
	Window int64 `json:"window"`
	// Estimate is the request's estimated input tokens: the sum of
	// Categories.
	Estimate   int64             `json:"estimate"`
	Categories ContextCategories `json:"categories"`
}

// ContextCategories are a request's estimated input tokens by where they
// come from. The instruction layers are laid over one another in this
// order; the transcript is split by role, with the compaction summary
// apart.
type ContextCategories struct {
	// System is hitch's own instructions (those of a compaction call).
	System int64 `json:"system"`
	// Agent is the agent's instructions.
	Agent int64 `json:"agent"`
	// Run is the caller's layer of instructions for the run, with the
	// line that marks it.
	Run int64 `json:"run"`
	// Hook is what the pre-generate hook added to the instructions.
	Hook int64 `json:"hook"`
	// Tools is the tool declarations: names, descriptions, schemas.
	Tools int64 `json:"tools"`
	// User, Assistant and ToolResults are the transcript by role: user
	// messages (the input, a session's earlier messages, steering,
	// corrections), the model's replies with their calls, and the calls'
	// results.
	User        int64 `json:"user"`
	Assistant   int64 `json:"assistant"`
	ToolResults int64 `json:"tool_results"`
	// Summary is the compaction summary standing for older history.
	Summary int64 `json:"summary"`
	// AnswerSchema is the schema of a typed answer.
	AnswerSchema int64 `json:"answer_schema"`
}

// ContextCategory is one category of a request's context, for display.
type ContextCategory struct {
	// Name is the category's JSON name; Label says it in words.
	Name   string `json:"name"`
	Label  string `json:"label"`
	Tokens int64  `json:"tokens"`
}

// List returns the categories in display order, zeros included.
func (c ContextCategories) List() []ContextCategory {
	return []ContextCategory{
		{"system", "system instructions", c.System},
		{"agent", "agent instructions", c.Agent},
		{"run", "run instructions", c.Run},
		{"hook", "hook instructions", c.Hook},
		{"tools", "tool definitions", c.Tools},
		{"user", "user messages", c.User},
		{"assistant", "assistant messages", c.Assistant},
		{"tool_results", "tool results", c.ToolResults},
		{"summary", "compaction summary", c.Summary},
		{"answer_schema", "answer schema", c.AnswerSchema},
	}
}

// Sum adds the categories.
func (c ContextCategories) Sum() int64 {
	var n int64
	for _, x := range c.List() {
		n += x.Tokens
	}
	return n
}

// Fill is the share of the window the estimate fills, in percent; ok is
// false when no window is set.
func (a ContextAccount) Fill() (pct float64, ok bool) {
	if a.Window <= 0 {
		return 0, false
	}
	return 100 * float64(a.Estimate) / float64(a.Window), true
}

// ContextRequest is one model request as its journal tells it: where its
// tokens were estimated to sit and what the provider then reported.
type ContextRequest struct {
	Attempt int `json:"attempt"`
	Turn    int `json:"turn"`
	// Purpose is "compaction" for a summary call, "" for a turn.
	Purpose string `json:"purpose,omitempty"`
	// Model is the model of a route the request went to; "" when the
	// agent's model is not a route.
	Model string `json:"model,omitempty"`
	// Context is nil for a request journaled before hitch kept context
	// accounts.
	Context *ContextAccount `json:"context,omitempty"`
	// Result is "reply", "failed" or "interrupted"; "" while the request
	// is in flight.
	Result string `json:"result,omitempty"`
	// Usage is what the provider reported; nil when it reported none or
	// has not answered yet. A nil counter was not reported, which is not
	// zero.
	Usage *model.Usage `json:"usage,omitempty"`
	// CostUSD is Usage at the model's price; nil when either is unknown.
	CostUSD *float64 `json:"cost_usd,omitempty"`
}

// ContextFold gathers a journal's model requests, entry by entry, in
// order. Entries of other kinds are skipped.
type ContextFold struct {
	reqs []ContextRequest
	at   map[int]int // attempt → index in reqs
}

// Add folds one journal entry.
func (f *ContextFold) Add(kind string, data []byte) error {
	var attempt int
	var result string
	var usage *model.Usage
	var cost *float64
	switch kind {
	case KindModelAttempt:
		var a ModelAttempt
		if err := json.Unmarshal(data, &a); err != nil {
			return fmt.Errorf("decode %s: %w", kind, err)
		}
		if f.at == nil {
			f.at = map[int]int{}
		}
		f.at[a.Attempt] = len(f.reqs)
		f.reqs = append(f.reqs, ContextRequest{Attempt: a.Attempt, Turn: a.Turn, Purpose: a.Purpose, Model: a.Model, Context: a.Context})
		return nil
	case KindModelReply:
		var m ModelReply
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("decode %s: %w", kind, err)
		}
		attempt, result, usage, cost = m.Attempt, "reply", m.Reply.Usage, m.CostUSD
	case KindCompacted:
		var m Compacted
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("decode %s: %w", kind, err)
		}
		attempt, result, usage, cost = m.Attempt, "reply", m.Usage, m.CostUSD
		if m.Error != "" && m.Usage == nil {
			result = "failed"
		}
	case KindModelFailed:
		var m ModelFailed
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("decode %s: %w", kind, err)
		}
		attempt, result = m.Attempt, "failed"
	case KindModelLost:
		var m ModelInterrupted
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("decode %s: %w", kind, err)
		}
		attempt, result = m.Attempt, "interrupted"
	default:
		return nil
	}
	if i, ok := f.at[attempt]; ok && f.reqs[i].Result == "" {
		f.reqs[i].Result, f.reqs[i].Usage, f.reqs[i].CostUSD = result, usage, cost
	}
	return nil
}

// Requests returns the requests folded so far, oldest first.
func (f *ContextFold) Requests() []ContextRequest { return f.reqs }

// CostSoFar sums the cost of the requests that have come back. It is nil
// when any of them is not priced (no usage reported, no price, or
// journaled before replies were priced): never a made-up figure. A
// request still in flight is not counted yet.
func CostSoFar(reqs []ContextRequest) *float64 {
	total := 0.0
	for _, r := range reqs {
		if r.Result == "" {
			continue
		}
		if r.CostUSD == nil {
			return nil
		}
		total += *r.CostUSD
	}
	return &total
}
