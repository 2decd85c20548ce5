package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

// childPoll bounds how long a parent waiting for its children sleeps. A
// child's terminal append makes its waiting parent due; this backstop
// covers a child that ended while its parent was still parking, when the
// parent's process died before it looked again. A parent woken with
// nothing new parks again without a journal entry.
const childPoll = 5 * time.Minute

// subAgentTool declares a sub-agent to the model like a tool. Its body is
// never called: the runner starts a child run instead.
type subAgentTool struct{ child *Agent }

var _ tool.Tool = subAgentTool{}

// delegateSchema is what the model sends to start a sub-agent.
var delegateSchema = json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"the sub-agent's whole task: it sees nothing else"}},"required":["prompt"],"additionalProperties":false}`)

func (s subAgentTool) Info() tool.Info {
	desc := s.child.Description
	if desc == "" {
		desc = "Delegate a task to the sub-agent " + s.child.Name + "."
	}
	return tool.Info{Name: s.child.Name, Description: desc, Schema: delegateSchema, Timeout: tool.Infinite}
}

func (s subAgentTool) Call(context.Context, json.RawMessage) (string, error) {
	return "", errors.New("a sub-agent is started by the runner, not called")
}

// childID is the id of the run a call starts: derived from the call, so a
// start repeated after a crash finds the same run.
func childID(parent, call string) string { return parent + "." + call }

// checkDelegation refuses a sub-agent start before the policy sees it: too
// many children, no depth left, or a bad prompt.
func (r *runner) checkDelegation(c *callState) string {
	started := 0
	for _, t := range r.st.turns {
		for _, o := range t.calls {
			if o.started > 0 && r.agent.children[o.call.Name] != nil {
				started++
			}
		}
	}
	if started >= r.agent.Limits.MaxChildren {
		return fmt.Sprintf("this run may start at most %d sub-agent runs and has started %d; do the rest yourself", r.agent.Limits.MaxChildren, started)
	}
	if r.st.started.DepthLeft <= 0 {
		return "this run may not start sub-agents: the delegation depth limit is reached"
	}
	var in struct {
		Prompt string `json:"prompt"`
	}
	if err := json.Unmarshal([]byte(c.call.Arguments), &in); err != nil || in.Prompt == "" {
		return fmt.Sprintf(`starting %s needs {"prompt": "<the task>"}`, c.call.Name)
	}
	return ""
}

// startChild creates the child run of c (idempotently) and drives it.
func (r *runner) startChild(c *callState) error {
	child := r.agent.children[c.call.Name]
	var in struct {
		Prompt string `json:"prompt"`
	}
	_ = json.Unmarshal([]byte(c.call.Arguments), &in)
	id := childID(r.runID, c.key)
	left := min(child.Limits.MaxDepth, r.st.started.DepthLeft-1)
	first, title, _ := r.e.startedEntry(RunStarted{Agent: child.Name, Version: child.Version, Input: in.Prompt, DepthLeft: left})
	r.idle()
	_, created, err := r.e.cfg.Store.RunCreate(r.ctx, store.RunCreateParams{
		ID: id, RootID: r.row.RootID, ParentID: r.runID, Depth: r.row.Depth + 1, Tenant: r.row.Tenant,
		Agent: child.Name, Version: child.Version, InputHash: InputHash(child.Name, child.Version, in.Prompt),
		Entries: []store.EntryInput{first}, Title: title,
	})
	r.busy()
	if err != nil {
		return fmt.Errorf("start sub-agent run %s: %w", id, err)
	}
	if created {
		go r.e.wake(id)
	}
	return nil
}

// childOutcome settles c from its child run, if that run has ended.
// pending reports a child still going.
func (r *runner) childOutcome(c *callState) (pending bool, err error) {
	id := childID(r.runID, c.key)
	run, err := r.e.cfg.Store.RunGet(r.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		// Started, but the process stopped before the child existed.
		return true, r.startChild(c)
	}
	if err != nil {
		return false, err
	}
	if !run.Status.Terminal() {
		return true, nil
	}
	var o Outcome
	if err := json.Unmarshal(run.Outcome, &o); err != nil {
		return false, fmt.Errorf("decode outcome of %s: %w", id, err)
	}
	switch {
	case len(o.Uncertain) > 0:
		r.markUncertain(c, fmt.Sprintf("sub-agent run %s ended %s with effects of unknown outcome (%v)", id, o.Status, o.Uncertain))
	case o.Status == hitchtype.StatusCompleted && o.Reason == "":
		r.stage(entry(KindCallSettled, CallSettled{Call: c.key, Output: o.Answer}))
	default:
		why := o.Error
		if why == "" {
			why = o.Reason
		}
		r.stage(entry(KindCallFailed, CallFailed{Call: c.key,
			Error: fmt.Sprintf("sub-agent run %s ended %s: %s", id, describeStatus(o), why)}))
	}
	return false, nil
}

func describeStatus(o Outcome) string {
	if o.Reason != "" && string(o.Status) != o.Reason {
		return fmt.Sprintf("%s (%s)", o.Status, o.Reason)
	}
	return string(o.Status)
}

// waitForChildren parks the run until its children end. Children wake it
// when they end; a late wake is caught by checking again after parking.
func (r *runner) waitForChildren(calls []string) error {
	now, err := r.e.cfg.Store.Now(r.ctx)
	if err != nil {
		return fmt.Errorf("read store clock: %w", err)
	}
	var why []store.EntryInput
	if w := r.st.waiting; len(r.pending) > 0 || w == nil || w.Reason != "children" || !slices.Equal(w.Calls, calls) {
		// Woken with nothing new, the run parks again without a word: a
		// week-long wait must not grow the journal.
		why = append(why, entry(KindRunWaiting, RunWaiting{Reason: "children", Calls: calls}))
	}
	wake := now.Add(childPoll)
	if at := r.st.waitDeadline(); !at.IsZero() && at.Before(wake) {
		wake = at
	}
	if err := r.write(store.JournalAppendParams{Status: hitchtype.StatusWaiting, WakeAt: wake}, why...); err != nil {
		return err
	}
	for _, key := range calls {
		run, err := r.e.cfg.Store.RunGet(r.ctx, childID(r.runID, key))
		if err == nil && run.Status.Terminal() {
			go r.e.wake(r.runID)
			break
		}
	}
	return nil
}

// liveChildren lists the runs of sub-agent calls started and not settled.
func (r *runner) liveChildren() []string {
	var ids []string
	for _, t := range r.st.turns {
		for _, c := range t.calls {
			if r.agent.children[c.call.Name] != nil && c.started > 0 && !c.done {
				ids = append(ids, childID(r.runID, c.key))
			}
		}
	}
	return ids
}

// nudgeCancelled makes a run whose cancel is durably requested act on it
// now: its local runner at once, or a runner claimed here. Elsewhere, the
// request is found by the run's own runner or the sweeper.
func (e *Engine) nudgeCancelled(runID string) {
	e.mu.Lock()
	r := e.active[runID]
	e.mu.Unlock()
	if r != nil {
		r.requestCancel()
		return
	}
	go e.wake(runID)
}

// wake drives a run that may be waiting, if no live runner holds it.
func (e *Engine) wake(runID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.mu.Lock()
	r := e.active[runID]
	closing := e.closing
	e.mu.Unlock()
	if closing {
		return
	}
	if r != nil && r.cancelled.Load() {
		return
	}
	_ = e.Drive(ctx, runID)
}

// redrive claims and drives a parked run that has work at once.
func (e *Engine) redrive(runID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.mu.Lock()
	closing := e.closing
	e.mu.Unlock()
	if !closing {
		_ = e.Drive(ctx, runID)
	}
}

// specOf declares a child to the model.
func specOf(child *Agent) model.ToolSpec {
	info := subAgentTool{child}.Info()
	return model.ToolSpec{Name: info.Name, Description: info.Description, Schema: info.Schema}
}
