package engine

import (
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/store"
)

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
// before the history grows. window is the context window of the model the
// request goes to.
func (r *runner) maybeCompact(est, window int64) (compacted bool, err error) {
	st, lim := r.st, r.agent.Limits
	if window <= 0 || float64(est) < compactAt*float64(window) {
		return false, nil
	}
	if st.attempts+2 >= lim.ModelAttempts {
		return false, nil
	}
	ask := model.Message{Role: model.RoleUser, Text: "Summarize the conversation above as instructed."}
	var sreq *model.Request
	through, history := len(st.turns)-max(lim.KeepTurns, 1), 0
	switch {
	case through > st.compactedThrough && st.compactTried != len(st.turns):
		sreq = &model.Request{Instructions: compactInstructions, Messages: append(st.messagesFrom(0, through), ask)}
		if st.compactedThrough > 0 {
			// Summarize the summary and the turns since, not the whole past.
			sreq.Messages = append(st.messagesFrom(st.compactedThrough, through), ask)
		}
	case st.compactedThrough == 0 && !st.historyTried:
		// Too few turns of its own to fold: fold the older part of the
		// history it started from (a session's transcript), once a run.
		through, history = 0, historyFoldPoint(st.started.History, max(lim.KeepTurns, 1))
		if history <= st.historyFolded {
			return false, nil
		}
		var msgs []model.Message
		if st.historyFolded > 0 {
			msgs = append(msgs, model.Message{Role: model.RoleUser, Text: summaryPrefix + st.summary})
		}
		msgs = append(msgs, st.started.History[st.historyFolded:history]...)
		sreq = &model.Request{Instructions: compactInstructions, Messages: append(msgs, ask)}
	default:
		return false, nil
	}
	acct := account(sreq, layers{system: len(compactInstructions)}, st.summaryText(), window)
	// A summary goes to the route's first able model, and is not tried
	// elsewhere when it fails: a failed summary changes nothing.
	p, err := r.choose(sreq, nil)
	if err != nil {
		return false, nil
	}
	name := p.model.Name()
	reserved, ended, err := r.beforeModel(acct.Estimate, name)
	if ended || err != nil {
		return ended, err
	}
	attempt := st.attempts + 1
	if ended, err := r.reserve(reserved, entry(KindModelAttempt, p.stamp(ModelAttempt{Attempt: attempt, Turn: len(st.turns) + 1, Purpose: "compaction",
		ReservedTokens: reserved.Tokens, ReservedMicroUSD: reserved.MicroUSD, Context: acct}, r.agent.Model.Name())), withNext); ended || err != nil {
		return ended, err
	}
	reply, err := r.generate(p, sreq, false)
	if r.lost() {
		return false, nil
	}
	if err := r.land(); err != nil {
		return false, err
	}
	if r.cancelled.Load() {
		if err == nil && reply.Text != "" {
			r.stage(entry(KindCompacted, Compacted{Attempt: attempt, Through: through, History: history, Summary: reply.Text, Usage: reply.Usage, CostUSD: r.costOf(name, reply.Usage)}))
			r.settleModel(reserved, name, reply.Usage)
		}
		return false, nil
	}
	r.report(p, err)
	if err != nil || reply.Text == "" {
		why := "the model gave an empty summary"
		if err != nil {
			why = err.Error()
		}
		r.stage(entry(KindCompacted, Compacted{Attempt: attempt, Through: through, History: history, Error: why}))
		return false, nil
	}
	r.stage(entry(KindCompacted, Compacted{Attempt: attempt, Through: through, History: history, Summary: reply.Text, Usage: reply.Usage, CostUSD: r.costOf(name, reply.Usage)}))
	if ended, err := r.afterReply(reserved, name, reply.Usage); ended || err != nil {
		return ended, err
	}
	return true, nil
}

// historyFoldPoint is where a history may be cut for a summary: before the
// keep-th user message from its end, so the last keep exchanges stay
// verbatim. A cut before a user message never parts a tool call from its
// result. 0 when there is nothing older to fold.
func historyFoldPoint(h []model.Message, keep int) int {
	for i := len(h) - 1; i > 0; i-- {
		if h[i].Role != model.RoleUser {
			continue
		}
		if keep--; keep == 0 {
			return i
		}
	}
	return 0
}

// CompactedHistory is, when a run compacted what came before its own
// input, the history a later submission of its session starts from in
// place of everything before the run: the summary, then what the run kept
// verbatim. ok is false when the run compacted nothing.
func CompactedHistory(entries []store.Entry) (msgs []model.Message, ok bool, err error) {
	st, err := fold(entries)
	if err != nil {
		return nil, false, err
	}
	switch {
	case st.compactedThrough > 0:
		// The summary stands for the whole history, the input and the
		// turns it folded; the submission's own part follows it.
		return []model.Message{{Role: model.RoleUser, Text: summaryPrefix + st.summary}}, true, nil
	case st.historyFolded > 0:
		return st.history(), true, nil
	}
	return nil, false, nil
}
