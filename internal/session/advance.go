package session

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/store"
)

// sessionFold is a session's journal folded.
type sessionFold struct {
	subs  []*hitchtype.Submission
	text  map[string]string // message → latest text
	byRun map[string]*hitchtype.Submission
	// history holds, by run, what a compacting submission's run left
	// for later submissions to start from (SubmissionEnded.History).
	history map[string][]model.Message
}

func foldSession(ctx context.Context, ss Store, sessionID string) (*sessionFold, error) {
	f := &sessionFold{text: map[string]string{}, byRun: map[string]*hitchtype.Submission{}, history: map[string][]model.Message{}}
	after := int64(0)
	for {
		page, err := ss.SessionRead(ctx, store.SessionReadParams{SessionID: sessionID, After: after, Limit: store.DefaultReadLimit})
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			if err := f.apply(e); err != nil {
				return nil, err
			}
		}
		if len(page) < store.DefaultReadLimit {
			return f, nil
		}
		after = page[len(page)-1].Pos
	}
}

func (f *sessionFold) apply(e store.SessionEntry) error {
	decode := func(v any) error {
		if err := json.Unmarshal(e.Data, v); err != nil {
			return fmt.Errorf("session entry %d (%s): %w", e.Pos, e.Kind, err)
		}
		return nil
	}
	switch e.Kind {
	case hitchtype.KindMessageAdmitted:
		var m hitchtype.MessageAdmitted
		if err := decode(&m); err != nil {
			return err
		}
		f.text[m.ID] = m.Text
	case hitchtype.KindMessageEdited:
		var m hitchtype.MessageEdited
		if err := decode(&m); err != nil {
			return err
		}
		f.text[m.ID] = m.Text
	case hitchtype.KindMessageJoined:
		var m hitchtype.MessageJoined
		if err := decode(&m); err != nil {
			return err
		}
		if sub := f.byRun[m.RunID]; sub != nil {
			sub.Joined = append(sub.Joined, m.ID)
		}
	case hitchtype.KindSubmissionStarted:
		var m hitchtype.SubmissionStarted
		if err := decode(&m); err != nil {
			return err
		}
		sub := &hitchtype.Submission{MessageID: m.MessageID, RunID: m.RunID, Text: m.Text, Status: hitchtype.StatusRunning}
		f.subs = append(f.subs, sub)
		f.byRun[m.RunID] = sub
	case hitchtype.KindSubmissionEnded:
		var m hitchtype.SubmissionEnded
		if err := decode(&m); err != nil {
			return err
		}
		if sub := f.byRun[m.RunID]; sub != nil {
			u := m.Usage
			sub.Outcome, sub.Status, sub.Reason, sub.Answer, sub.Error = m.Outcome, m.Status, m.Reason, m.Answer, m.Error
			sub.Usage, sub.CostUSD = &u, m.CostUSD
			if m.History != nil {
				f.history[m.RunID] = m.History
			}
		}
	}
	return nil
}

// submissionRunID names the run of a message's submission. It is the same
// on every node, so the run is one run whoever starts it.
func submissionRunID(sessionID, messageID string) string {
	h := sha256.Sum256([]byte(sessionID + "\x00" + messageID))
	return submissionPrefix + hex.EncodeToString(h[:12])
}

// submissionPrefix begins every submission's run id, and only runs with
// it can be submissions: a session's runs are created by SessionStart alone.
const submissionPrefix = "sub_"

// advance moves a session on: it ends the active submission when its run
// has ended, and starts the next queued message when none is active. Any
// node may call it at any time; the store keeps one submission active and
// ends each once.
func (s *Service) advance(ctx context.Context, sessionID string) error {
	ss, err := s.store("advance session")
	if err != nil {
		return err
	}
	for range 16 {
		row, err := ss.SessionGet(ctx, sessionID)
		if err != nil {
			return err
		}
		if row.ActiveRun != "" {
			run, err := ss.RunGet(ctx, row.ActiveRun)
			if err != nil {
				return fmt.Errorf("run of session %s: %w", sessionID, err)
			}
			if !run.Status.Terminal() {
				if run.CancelRequested {
					return nil
				}
				return s.reapplyInterrupt(ctx, ss, row.ID, run.ID)
			}
			if err := s.endSubmission(ctx, ss, row, run); err != nil {
				return err
			}
			continue
		}
		if row.Queued == 0 {
			return nil
		}
		started, err := s.startNext(ctx, ss, row)
		if err != nil || started {
			return err
		}
	}
	return fmt.Errorf("advance session %s: it kept changing under this node; a sweeper tries again", sessionID)
}

// reapplyInterrupt cancels the session's active run when the session
// journal holds an interrupt of it: the process that journaled the
// interrupt may have died before it cancelled the run. It reads the
// session's entries from the run's message on.
func (s *Service) reapplyInterrupt(ctx context.Context, ss Store, sessionID, runID string) error {
	first, err := ss.JournalRead(ctx, store.JournalReadParams{RunID: runID, Limit: 1})
	if err != nil || len(first) == 0 {
		return err
	}
	var rs hitchtype.RunStarted
	if err := json.Unmarshal(first[0].Data, &rs); err != nil {
		return fmt.Errorf("run %s: %w", runID, err)
	}
	for after := max(rs.SessionPos-1, 0); ; {
		page, err := ss.SessionRead(ctx, store.SessionReadParams{SessionID: sessionID, After: after, Limit: store.DefaultReadLimit})
		if err != nil {
			return err
		}
		for _, e := range page {
			if e.Kind != hitchtype.KindSubmissionInterrupt {
				continue
			}
			var m hitchtype.SubmissionInterrupted
			if json.Unmarshal(e.Data, &m) == nil && m.RunID == runID {
				if _, err := s.cfg.Engine.Cancel(ctx, store.RunRequestCancelParams{ID: runID}, 0); err != nil && !errors.Is(err, store.ErrEnded) {
					return fmt.Errorf("interrupt %s: %w", runID, err)
				}
				return nil
			}
		}
		if len(page) < store.DefaultReadLimit {
			return nil
		}
		after = page[len(page)-1].Pos
	}
}

// endSubmission records the end of the submission worked by run.
func (s *Service) endSubmission(ctx context.Context, ss Store, row store.Session, run store.Run) error {
	entries, err := readRun(ctx, ss, run.ID)
	if err != nil {
		return err
	}
	_, joined, err := engine.SubmissionTranscript(entries)
	if err != nil {
		return fmt.Errorf("fold run %s: %w", run.ID, err)
	}
	var started hitchtype.RunStarted
	if err := json.Unmarshal(entries[0].Data, &started); err != nil {
		return fmt.Errorf("run %s: %w", run.ID, err)
	}
	end := hitchtype.SubmissionEnded{MessageID: started.SessionMessage, RunID: run.ID, Status: run.Status}
	switch {
	case run.Status == hitchtype.StatusCompleted:
		end.Outcome = hitchtype.SubmissionCompleted
	case run.Status == hitchtype.StatusCancelled:
		end.Outcome = hitchtype.SubmissionAborted
	default:
		end.Outcome = hitchtype.SubmissionFailed
	}
	if len(run.Outcome) > 0 {
		var o hitchtype.Outcome
		if err := json.Unmarshal(run.Outcome, &o); err != nil {
			return fmt.Errorf("decode outcome of %s: %w", run.ID, err)
		}
		end.Reason, end.Answer, end.Error, end.Usage, end.CostUSD = o.Reason, o.Answer, o.Error, o.Usage, o.CostUSD
	}
	if h, ok, err := engine.CompactedHistory(entries); err != nil {
		return fmt.Errorf("fold run %s: %w", run.ID, err)
	} else if ok {
		end.History = h
	}
	data, _ := json.Marshal(end)
	if _, _, err := ss.SessionEnd(ctx, store.SessionEndParams{SessionID: row.ID, RunID: run.ID, Joined: joined, Data: data}); err != nil {
		return err
	}
	return nil
}

// startNext starts the first queued message of a session as a submission.
// started is false when the session changed meanwhile (try again).
func (s *Service) startNext(ctx context.Context, ss Store, row store.Session) (started bool, err error) {
	a, ok := s.cfg.Agent(row.Agent, row.Version)
	if !ok {
		return false, fmt.Errorf("session %s: %w: %s version %d", row.ID, engine.ErrUnknownAgent, row.Agent, row.Version)
	}
	q, err := ss.SessionMessages(ctx, store.SessionMessagesParams{SessionID: row.ID, Limit: 1})
	if err != nil || len(q) == 0 {
		return false, err
	}
	m := q[0]
	history, err := s.transcript(ctx, ss, row.ID)
	if err != nil {
		return false, fmt.Errorf("transcript of %s: %w", row.ID, err)
	}
	runID := submissionRunID(row.ID, m.ID)
	rs := hitchtype.RunStarted{Agent: a.Name, Version: a.Version, Input: m.Text, DepthLeft: a.Limits.MaxDepth,
		Session: row.ID, SessionMessage: m.ID, SessionPos: m.Pos, History: history}
	first, err := json.Marshal(rs)
	if err != nil {
		return false, err
	}
	data, _ := json.Marshal(hitchtype.SubmissionStarted{MessageID: m.ID, RunID: runID, Text: m.Text})
	_, run, err := ss.SessionStart(ctx, store.SessionStartParams{SessionID: row.ID, MessageID: m.ID, MessageVersion: m.Version,
		Data: data, Run: store.RunCreateParams{ID: runID, Tenant: row.Tenant, Agent: a.Name, Version: a.Version, Budget: a.Budget,
			InputHash: engine.InputHash(a.Name, a.Version, m.Text),
			Entries:   []store.EntryInput{{Kind: hitchtype.KindRunStarted, Data: first}}, Title: m.Text}})
	var busy *store.SessionBusyError
	var mse *store.MessageStateError
	switch {
	case errors.As(err, &busy):
		return true, nil // another node started one
	case errors.As(err, &mse), errors.Is(err, store.ErrConflict):
		return false, nil
	case err != nil:
		return false, err
	}
	// An error leaves the run queued in the store; any worker claims it.
	_ = s.cfg.Engine.Drive(ctx, run.ID)
	return true, nil
}

// transcript is the history a new submission starts from: for each ended
// submission, its message, the messages that steered it, and its answer; an
// aborted submission contributes its replies and their results (a call left
// without one gets a synthetic "cancelled" result), then any message joined
// to it that no request of its run carried.
func (s *Service) transcript(ctx context.Context, ss Store, sessionID string) ([]model.Message, error) {
	f, err := foldSession(ctx, ss, sessionID)
	if err != nil {
		return nil, err
	}
	var msgs []model.Message
	for _, sub := range f.subs {
		if sub.Outcome == "" {
			continue
		}
		if h, ok := f.history[sub.RunID]; ok {
			// Its run summarized what came before it: start from that.
			msgs = append(msgs[:0:0], h...)
		}
		msgs = append(msgs, model.Message{Role: model.RoleUser, Text: sub.Text})
		if sub.Outcome == hitchtype.SubmissionAborted {
			entries, err := readRun(ctx, ss, sub.RunID)
			if err != nil {
				return nil, err
			}
			work, steered, err := engine.SubmissionTranscript(entries)
			if err != nil {
				return nil, fmt.Errorf("fold run %s: %w", sub.RunID, err)
			}
			msgs = append(msgs, work...)
			// A message joined to the run whose session.steered never
			// reached its journal (the runner died, then the run was
			// interrupted before another boundary) follows the work.
			for _, id := range sub.Joined {
				if !slices.Contains(steered, id) {
					msgs = append(msgs, model.Message{Role: model.RoleUser, Text: f.text[id]})
				}
			}
			continue
		}
		for _, id := range sub.Joined {
			msgs = append(msgs, model.Message{Role: model.RoleUser, Text: f.text[id]})
		}
		answer := sub.Answer
		if sub.Outcome == hitchtype.SubmissionFailed {
			answer = "(this request ended without an answer: " + cmp.Or(sub.Error, string(sub.Status)) + ")"
		}
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Text: answer})
	}
	return msgs, nil
}

// readRun reads a run's whole journal in bounded pages.
func readRun(ctx context.Context, ss Store, runID string) ([]store.Entry, error) {
	var all []store.Entry
	after := int64(0)
	for {
		page, err := ss.JournalRead(ctx, store.JournalReadParams{RunID: runID, After: after, Limit: store.DefaultReadLimit})
		if err != nil {
			return nil, fmt.Errorf("read journal of %s: %w", runID, err)
		}
		all = append(all, page...)
		if len(page) < store.DefaultReadLimit {
			if len(all) == 0 {
				return nil, fmt.Errorf("read journal of %s: it is empty", runID)
			}
			return all, nil
		}
		after = page[len(page)-1].Pos
	}
}
