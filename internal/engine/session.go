package engine

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/store"
)

// A run that works a session's submission (RunStarted.Session set) takes in
// steering: at each model-turn boundary, before the request, the runner
// reads the session's journal past the submission's start and joins the
// steer messages admitted since. Joining is decided by journal position:
// the store marks the message joined to this run (only a queued message can
// be), and the run journals it as session.steered with the request it goes
// out with, so a recovered runner rebuilds the same request. A message
// marked joined whose session.steered was lost in a crash is found again by
// the next boundary's read, since it is joined to this run.

// steer is a session message that joined the run when it had at turns.
type steer struct {
	at int
	SessionSteered
}

// steeredAt appends the messages that joined before turn number turn.
func (s *state) steeredAt(msgs []model.Message, turn int) []model.Message {
	for _, m := range s.steered {
		if m.at == turn {
			msgs = append(msgs, model.Message{Role: model.RoleUser, Text: m.Text})
		}
	}
	return msgs
}

// steeredLast reports a message joined after the last turn: a fork's
// extra message, which the model has not seen yet.
func (s *state) steeredLast() bool {
	n := len(s.steered)
	return n > 0 && s.steered[n-1].at == len(s.turns)
}

// sessionView is what a run's runner reads of its session's journal.
type sessionView struct {
	startedAt   int64 // position of this run's submission.started; 0 if unseen
	candidates  []SessionSteered
	text        map[string]string // latest text, after edits
	removed     map[string]bool
	joined      map[string]string // message → run it joined
	interrupted bool
}

// readSession reads the session's journal from the submission's admission.
func (r *runner) readSession(ss store.SessionStore) (*sessionView, error) {
	sid := r.st.started.Session
	v := &sessionView{text: map[string]string{}, removed: map[string]bool{}, joined: map[string]string{}}
	after := max(r.st.started.SessionPos-1, 0)
	for {
		page, err := ss.SessionRead(r.ctx, store.SessionReadParams{SessionID: sid, After: after, Limit: store.DefaultReadLimit})
		if err != nil {
			return nil, fmt.Errorf("read session %s: %w", sid, err)
		}
		for _, e := range page {
			var d struct {
				ID        string             `json:"id"`
				MessageID string             `json:"message_id"`
				RunID     string             `json:"run_id"`
				Mode      hitchtype.SendMode `json:"mode"`
				Text      string             `json:"text"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil {
				return nil, fmt.Errorf("session %s entry %d: %w", sid, e.Pos, err)
			}
			switch e.Kind {
			case hitchtype.KindSubmissionStarted:
				if d.RunID == r.runID {
					v.startedAt = e.Pos
				}
			case hitchtype.KindMessageAdmitted:
				if v.startedAt > 0 && d.Mode == hitchtype.ModeSteer {
					v.candidates = append(v.candidates, SessionSteered{MessageID: d.ID, Text: d.Text, SessionPos: e.Pos})
				}
				v.text[d.ID] = d.Text
			case hitchtype.KindMessageEdited:
				v.text[d.ID] = d.Text
			case hitchtype.KindMessageRemoved:
				v.removed[d.ID] = true
			case hitchtype.KindMessageJoined:
				v.joined[d.ID] = d.RunID
			case hitchtype.KindSubmissionInterrupt:
				if d.RunID == r.runID {
					v.interrupted = true
				}
			}
		}
		if len(page) < store.DefaultReadLimit {
			return v, nil
		}
		after = page[len(page)-1].Pos
	}
}

// admitSteering joins the steer messages admitted to the run's session
// since its submission started, staging them for the next request.
func (r *runner) admitSteering() error {
	sid := r.st.started.Session
	ss, ok := r.e.cfg.Store.(store.SessionStore)
	if sid == "" || !ok {
		return nil
	}
	v, err := r.readSession(ss)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, s := range r.st.steered {
		have[s.MessageID] = true
	}
	for _, c := range v.candidates {
		if have[c.MessageID] || v.removed[c.MessageID] {
			continue
		}
		if run, ok := v.joined[c.MessageID]; ok && run != r.runID {
			continue
		} else if !ok {
			data, _ := json.Marshal(hitchtype.MessageJoined{ID: c.MessageID, RunID: r.runID})
			_, err := r.e.AppendSession(r.ctx, ss, store.SessionAppendParams{SessionID: sid, After: store.AnyPosition,
				Kind: hitchtype.KindMessageJoined, Data: data})
			var mse *store.MessageStateError
			switch {
			case errors.As(err, &mse):
				if mse.State != hitchtype.StateJoined || mse.RunID != r.runID {
					continue // removed or started meanwhile
				}
			case err != nil:
				return fmt.Errorf("join message %s: %w", c.MessageID, err)
			}
		}
		c.Text = v.text[c.MessageID]
		r.stage(entry(KindSessionSteered, c))
	}
	return nil
}

// cancelOutcome is the outcome of a cancelled run: interrupted when its
// session asked for it.
func (r *runner) cancelOutcome() Outcome {
	o := Outcome{Status: hitchtype.StatusCancelled, Reason: "cancelled", Error: "the run was cancelled"}
	// Who asked and why travel with the durable request, so the runner
	// that ends the run journals them whichever node it is on.
	if row, err := r.e.cfg.Store.RunGet(r.ctx, r.runID); err == nil && (row.CancelBy != "" || row.CancelReason != "") {
		o.CancelledBy, o.CancelReason = row.CancelBy, row.CancelReason
		o.Error = "the run was cancelled"
		if row.CancelBy != "" {
			o.Error += " by " + row.CancelBy
		}
		if row.CancelReason != "" {
			o.Error += ": " + row.CancelReason
		}
	}
	ss, ok := r.e.cfg.Store.(store.SessionStore)
	if r.st.started.Session == "" || !ok {
		return o
	}
	if v, err := r.readSession(ss); err == nil && v.interrupted {
		o.Reason, o.Error = "interrupted", "the user interrupted this submission"
	}
	return o
}

// Synthetic results for calls a cancelled run left without one, so a
// transcript never holds a call without its result.
const (
	cancelledBefore = "cancelled: the work was interrupted before this call ran"
	cancelledDuring = "cancelled: the work was interrupted while this call ran; whether its effect happened is unknown"
)

// SubmissionTranscript rebuilds what a session run did, for the transcript
// of later submissions: each reply with one result per call, in order (a
// call the run left without a result gets a synthetic "cancelled" one),
// and the messages that steered it. The run's history and input are not
// included. It also returns the ids of the messages that joined the run.
func SubmissionTranscript(entries []store.Entry) (msgs []model.Message, joined []string, err error) {
	st, err := fold(entries)
	if err != nil {
		return nil, nil, err
	}
	for i, t := range st.turns {
		msgs = st.steeredAt(msgs, i)
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Text: t.reply.Text, ToolCalls: t.reply.ToolCalls})
		for _, c := range t.calls {
			m := model.Message{Role: model.RoleTool, ToolCallID: c.call.ID, ToolName: c.call.Name, Text: c.result, IsError: c.isError}
			switch {
			case c.done:
			case c.started > 0:
				m.Text, m.IsError = cancelledDuring, true
			default:
				m.Text, m.IsError = cancelledBefore, true
			}
			msgs = append(msgs, m)
		}
		if t.refused {
			msgs = append(msgs, model.Message{Role: model.RoleUser, Text: t.correction})
		}
	}
	msgs = st.steeredAt(msgs, len(st.turns))
	for _, s := range st.steered {
		joined = append(joined, s.MessageID)
	}
	return msgs, joined, nil
}
