package engine

import (
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
)

// layers says how many bytes of a request's instructions each layer
// wrote; what is not the system's, the agent's or the hook's is the
// caller's run layer.
type layers struct {
	system, agent, hook int
}

// account estimates where req's tokens sit (hitchtype.EstimatorBytes). A
// user message whose text is summary is the compaction summary.
func account(req *model.Request, l layers, summary string, window int64) *hitchtype.ContextAccount {
	tok := tokens
	var c hitchtype.ContextCategories
	run := len(req.Instructions) - l.system - l.agent - l.hook
	c.System, c.Agent, c.Run, c.Hook = tok(l.system), tok(l.agent), tok(max(run, 0)), tok(l.hook)
	var user, asst, results, sum int
	for _, m := range req.Messages {
		n := messageBytes(m)
		switch {
		case m.Role == model.RoleAssistant:
			asst += n
		case m.Role == model.RoleTool:
			results += n
		case summary != "" && m.Text == summary:
			sum += n
		default:
			user += n
		}
	}
	c.User, c.Assistant, c.ToolResults, c.Summary = tok(user), tok(asst), tok(results), tok(sum)
	var tools int
	for _, t := range req.Tools {
		tools += toolBytes(t)
	}
	c.Tools = tok(tools)
	if req.Answer != nil {
		c.AnswerSchema = tok(len(req.Answer.Name) + len(req.Answer.Schema))
	}
	return &hitchtype.ContextAccount{Estimator: hitchtype.EstimatorBytes, Window: window, Estimate: c.Sum(), Categories: c}
}

// tokens estimates n bytes of text (hitchtype.EstimatorBytes).
func tokens(n int) int64 { return int64((n + 3) / 4) }

// messageBytes is how much text a message carries to the model.
func messageBytes(m model.Message) int {
	n := len(m.Text) + len(m.ToolCallID) + len(m.ToolName)
	for _, tc := range m.ToolCalls {
		n += len(tc.Name) + len(tc.Arguments) + len(tc.ID)
	}
	return n
}

// toolBytes is how much text a tool's declaration carries.
func toolBytes(t model.ToolSpec) int { return len(t.Name) + len(t.Description) + len(t.Schema) }

// summaryText is the summary message requests carry in place of folded
// history, or "" before any compaction.
func (s *state) summaryText() string {
	if s.summary == "" || (s.compactedThrough == 0 && s.historyFolded == 0) {
		return ""
	}
	return summaryPrefix + s.summary
}

// costOf prices one reply's usage at the price of the model that made it
// (named as its Name says); nil when either is unknown.
func (r *runner) costOf(name string, u *model.Usage) *float64 {
	if usd, known := r.e.cfg.Prices.Cost(name, u); known {
		return &usd
	}
	return nil
}
