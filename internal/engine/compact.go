package engine

import "github.com/hitch-dev/hitch/model"

// compactAt is the share of the context window a request may fill before
// the older history is summarized.
const compactAt = 0.8

const summaryPrefix = "Summary of the earlier part of this conversation (the messages it replaces are no longer shown):\n"

const compactInstructions = "You compress the history of an AI agent's work so that it can go on without the full transcript. " +
	"Write a complete, factual summary: the task, what was done and found (tool results that matter, with their " +
	"exact values), decisions and why, and what is left to do. Do not call tools."

// maybeCompact summarizes the older turns when req is estimated to fill
// most of the context window. The summary call is a model attempt like any
// other, journaled before it is made; its result is journaled before any
// request uses it. A failed summary changes nothing and is not retried
// before the history grows.
func (r *runner) maybeCompact(req *model.Request) (compacted bool, err error) {
	st, lim := r.st, r.agent.Limits
	if lim.ContextWindow <= 0 || float64(estimateTokens(req)) < compactAt*float64(lim.ContextWindow) {
		return false, nil
	}
	through := len(st.turns) - max(lim.KeepTurns, 1)
	if through <= st.compactedThrough || st.compactTried == len(st.turns) || st.attempts+2 >= lim.ModelAttempts {
		return false, nil
	}
	sreq := &model.Request{Instructions: compactInstructions, Messages: append(st.messagesFrom(0, through),
		model.Message{Role: model.RoleUser, Text: "Summarize the conversation above as instructed."})}
	if st.compactedThrough > 0 {
		// Summarize the summary and the turns since, not the whole past.
		sreq.Messages = append(st.messagesFrom(st.compactedThrough, through),
			model.Message{Role: model.RoleUser, Text: "Summarize the conversation above as instructed."})
	}
	reserved, ended, err := r.beforeModel(sreq)
	if ended || err != nil {
		return ended, err
	}
	attempt := st.attempts + 1
	if ended, err := r.reserve(reserved, entry(KindModelAttempt, ModelAttempt{Attempt: attempt, Turn: len(st.turns) + 1, Purpose: "compaction",
		ReservedTokens: reserved.Tokens, ReservedMicroUSD: reserved.MicroUSD})); ended || err != nil {
		return ended, err
	}
	reply, err := r.generate(sreq, false)
	if r.lost() {
		return false, nil
	}
	if r.cancelled.Load() {
		if err == nil && reply.Text != "" {
			r.stage(entry(KindCompacted, Compacted{Attempt: attempt, Through: through, Summary: reply.Text, Usage: reply.Usage}))
			r.settleModel(reserved, reply.Usage)
		}
		return false, nil
	}
	if err != nil || reply.Text == "" {
		why := "the model gave an empty summary"
		if err != nil {
			why = err.Error()
		}
		r.stage(entry(KindCompacted, Compacted{Attempt: attempt, Through: through, Error: why}))
		return false, nil
	}
	r.stage(entry(KindCompacted, Compacted{Attempt: attempt, Through: through, Summary: reply.Text, Usage: reply.Usage}))
	if ended, err := r.afterReply(reserved, reply.Usage); ended || err != nil {
		return ended, err
	}
	return true, nil
}
