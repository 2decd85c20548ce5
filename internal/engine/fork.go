package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/store"
)

// A fork is a new run whose journal begins with another run's history: its
// own run.started (the source's, naming the fork's agent version and the
// source in ForkedFrom), then the source's entries 2 to At byte for byte,
// then what the caller changes at At (an edited reply, an extra message).
// The runner folds that journal like any other, so the recovery rules decide
// what the copied history means: a settled call is never run again, a call
// started and not settled is uncertain unless its tool is replayable.

// ForkParams are the parameters of Fork.
type ForkParams struct {
	ID string
	// Source is the stored id of the run forked; At the last of its
	// positions copied (1 copies only its start).
	Source string
	At     int64
	// Instructions, when set, replace the caller's layer of instructions
	// from At on.
	Instructions string
	// Model, when set, names the model (see Config.Models) that answers
	// the fork's turns from At on in place of its agent's.
	Model string
	// Reply, when set, replaces the model reply at At (which must be one).
	Reply *model.Reply
	// Message, when set, is a user message joined at At.
	Message string
	// Replay answers every tool call from Source's recorded results (see
	// ForkedFrom); RunReplayable lets an unrecorded call of a replayable
	// tool run.
	Replay, RunReplayable bool
	Detached              bool
}

// ErrBadFork refuses a fork whose position or options do not fit the source.
var ErrBadFork = errors.New("the fork does not fit the run's journal")

// Fork creates a run of agent a from the history of p.Source up to p.At and
// drives it like Start. It is idempotent by p.ID as Start is; SameInput
// then says whether the same source, position and options made it.
func (e *Engine) Fork(ctx context.Context, a *Agent, p ForkParams) (StartResult, error) {
	src, err := e.cfg.Store.RunGet(ctx, p.Source)
	if err != nil {
		return StartResult{}, fmt.Errorf("read source run: %w", err)
	}
	if p.At < 1 || p.At > src.Position {
		return StartResult{}, fmt.Errorf("%w: at %d: the journal of %s holds positions 1 to %d", ErrBadFork, p.At, src.ID, src.Position)
	}
	entries, err := readUpTo(ctx, e.cfg.Store, src.ID, p.At)
	if err != nil {
		return StartResult{}, fmt.Errorf("read source journal: %w", err)
	}
	last := entries[len(entries)-1]
	if last.Kind == KindRunEnded {
		return StartResult{}, fmt.Errorf("%w: at %d is the end of %s: fork at %d or before", ErrBadFork, p.At, src.ID, p.At-1)
	}
	if _, err := fold(entries); err != nil {
		return StartResult{}, fmt.Errorf("fold source journal: %w", err)
	}
	var started RunStarted
	if err := json.Unmarshal(entries[0].Data, &started); err != nil {
		return StartResult{}, fmt.Errorf("decode %s of %s: %w", KindRunStarted, src.ID, err)
	}
	started.Agent, started.Version, started.DepthLeft = a.Name, a.Version, a.Limits.MaxDepth
	if p.Instructions != "" {
		started.Instructions = p.Instructions
	}
	if p.Model != "" {
		if _, err := e.withModel(a, p.Model); err != nil {
			return StartResult{}, fmt.Errorf("%w: %w", ErrBadFork, err)
		}
		started.Model = p.Model
	}
	// A fork works no session's submission: it keeps the transcript it
	// started from, and leaves the session alone.
	started.Session, started.SessionMessage, started.SessionPos = "", "", 0
	started.ForkedFrom = &ForkedFrom{Run: src.ID, Pos: p.At, Replay: p.Replay, RunReplayable: p.RunReplayable}
	first, title, _ := e.startedEntry(started)
	in := []store.EntryInput{first}
	for _, en := range entries[1:] {
		in = append(in, store.EntryInput{Kind: en.Kind, Data: en.Data})
	}
	if p.Reply != nil {
		if last.Kind != KindModelReply {
			return StartResult{}, fmt.Errorf("%w: an edited reply replaces a %s, and position %d of %s is a %s", ErrBadFork, KindModelReply, p.At, src.ID, last.Kind)
		}
		var mr ModelReply
		if err := json.Unmarshal(last.Data, &mr); err != nil {
			return StartResult{}, fmt.Errorf("decode %s at %d: %w", last.Kind, last.Pos, err)
		}
		edited := *p.Reply
		if edited.Usage == nil {
			edited.Usage = mr.Reply.Usage
		}
		mr.Reply, mr.Edited = edited, true
		in[len(in)-1] = e.redact(entry(KindModelReply, mr))
	}
	if p.Message != "" {
		in = append(in, e.redact(entry(KindSessionSteered, SessionSteered{MessageID: "fork", Text: p.Message})))
	}
	opts, err := json.Marshal(struct {
		Source, Instructions, Message string
		At                            int64
		Reply                         *model.Reply
		Replay, RunReplayable         bool
		Model                         string `json:",omitempty"`
	}{src.ID, p.Instructions, p.Message, p.At, p.Reply, p.Replay, p.RunReplayable, p.Model})
	if err != nil {
		return StartResult{}, fmt.Errorf("encode fork options: %w", err)
	}
	hash := InputHash(a.Name, a.Version, "fork\x00"+string(opts))
	run, created, err := e.cfg.Store.RunCreate(ctx, store.RunCreateParams{
		ID: p.ID, Tenant: src.Tenant, Agent: a.Name, Version: a.Version, InputHash: hash, Budget: a.Budget,
		Entries: in, Title: title, ForkedFrom: started.ForkedFrom,
	})
	if err != nil {
		return StartResult{}, fmt.Errorf("create run: %w", err)
	}
	return e.started(ctx, StartResult{Run: run, Created: created, SameInput: run.InputHash == hash}, len(in), p.Detached), nil
}

// withModel returns a, or for a run told to go on with another model (see
// RunStarted.Model) a copy of a answering with that model.
func (e *Engine) withModel(a *Agent, name string) (*Agent, error) {
	if name == "" || name == a.Model.Name() {
		return a, nil
	}
	var m model.Model
	ok := false
	if e.cfg.Models != nil {
		m, ok = e.cfg.Models(name)
	}
	if !ok {
		return nil, fmt.Errorf("%w: no model named %q", ErrUnknownModel, name)
	}
	cp := *a
	cp.Model = m
	return &cp, nil
}

// ErrUnknownModel refuses a fork, or stops a run, told to go on with a
// model this engine does not know.
var ErrUnknownModel = errors.New("unknown model")

// readUpTo reads a journal's entries 1 to at.
func readUpTo(ctx context.Context, s store.Store, runID string, at int64) ([]store.Entry, error) {
	var all []store.Entry
	for int64(len(all)) < at {
		n := min(at-int64(len(all)), store.DefaultReadLimit)
		page, err := s.JournalRead(ctx, store.JournalReadParams{RunID: runID, After: int64(len(all)), Limit: int(n)})
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			return nil, fmt.Errorf("%w: the journal of %s ends before position %d", ErrCorrupt, runID, at)
		}
		all = append(all, page...)
	}
	return all, nil
}

// loadRecording folds the recorded run a replay answers its calls from.
func (r *runner) loadRecording() error {
	ff := r.st.started.ForkedFrom
	if ff == nil || !ff.Replay {
		return nil
	}
	entries, err := readAll(r.ctx, r.e.cfg.Store, ff.Run)
	if err != nil {
		return fmt.Errorf("read the recording %s: %w", ff.Run, err)
	}
	rec, err := fold(entries)
	if err != nil {
		return fmt.Errorf("fold the recording %s: %w", ff.Run, err)
	}
	r.recording = rec
	return nil
}

// replayCall answers c from the recording: the call at the same place with
// the same tool and arguments gives its recorded result, and nothing runs.
// Otherwise the run ends as diverged, unless the replay lets a replayable
// tool run (served is then false and the call goes on as usual).
func (r *runner) replayCall(c *callState) (served, ended bool, err error) {
	rc := r.recording.findCall(c.key)
	if rc != nil && rc.done && rc.call.Name == c.call.Name && SameArguments(rc.call.Arguments, c.call.Arguments) {
		if rc.isError {
			r.stage(entry(KindCallFailed, CallFailed{Call: c.key, Error: rc.result, Replayed: true}))
		} else {
			r.stage(entry(KindCallSettled, CallSettled{Call: c.key, Output: rc.result, Replayed: true}))
		}
		return true, false, nil
	}
	if r.st.started.ForkedFrom.RunReplayable {
		if t := r.toolFor(c.call.Name); t != nil && t.Info().Replay > 0 {
			return false, false, nil
		}
	}
	recorded := "no call"
	if rc != nil {
		recorded = fmt.Sprintf("%s(%s)", rc.call.Name, rc.call.Arguments)
		if !rc.done {
			recorded += " with no recorded result"
		}
	}
	return false, true, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: ReasonDiverged,
		Error: fmt.Sprintf("the replay diverged at call %s: the recording has %s, this run called %s(%s)", c.key, recorded, c.call.Name, c.call.Arguments)})
}

// ReasonDiverged ends a replay that made a call its recording does not have.
const ReasonDiverged = "diverged"

// SameArguments reports whether two tool calls' arguments are the same JSON
// value (key order and spacing aside); arguments that are not JSON compare
// as text.
func SameArguments(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return bytes.Equal(bytes.TrimSpace([]byte(a)), bytes.TrimSpace([]byte(b)))
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}

// Turn is what one turn of a run did, for comparing a replay with its
// recording: the calls of its reply, or its final text.
type Turn struct {
	Calls []model.ToolCall
	Text  string
}

// JournalView is what a comparison of runs needs of one run's journal.
type JournalView struct {
	Turns []Turn
	Usage Usage
	// CostUSD is nil when any generation had no price.
	CostUSD *float64
}

// View folds a run's journal into its turns, usage and cost.
func (e *Engine) View(ctx context.Context, runID string) (JournalView, error) {
	entries, err := readAll(ctx, e.cfg.Store, runID)
	if err != nil {
		return JournalView{}, fmt.Errorf("read journal of %s: %w", runID, err)
	}
	st, err := fold(entries)
	if err != nil {
		return JournalView{}, fmt.Errorf("fold journal of %s: %w", runID, err)
	}
	v := JournalView{Usage: st.usage}
	if !st.unpriced {
		c := st.cost
		v.CostUSD = &c
	}
	for _, t := range st.turns {
		v.Turns = append(v.Turns, Turn{Calls: t.reply.ToolCalls, Text: t.reply.Text})
	}
	return v, nil
}

// CallText shows a call as name(arguments).
func CallText(c model.ToolCall) string { return c.Name + "(" + c.Arguments + ")" }

// Diverged returns the first turn (from 1) where replayed's calls differ
// from recorded's, or 0 when every turn of replayed made the calls its
// recording made at that turn. A turn that answered where the other called
// tools differs.
func Diverged(recorded, replayed []Turn) int {
	for i, t := range replayed {
		if i >= len(recorded) {
			return i + 1
		}
		rc := recorded[i].Calls
		if len(rc) != len(t.Calls) {
			return i + 1
		}
		for j := range rc {
			if rc[j].Name != t.Calls[j].Name || !SameArguments(rc[j].Arguments, t.Calls[j].Arguments) {
				return i + 1
			}
		}
	}
	return 0
}
