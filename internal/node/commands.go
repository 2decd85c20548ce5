package node

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/store"
)

// The runtime's commands on one run, each with its operation named in its
// errors: the bodies of the hitch.Runtime methods of the same names.

// Get returns a run as it stands.
func (n *Node) Get(ctx context.Context, runID string) (hitchtype.Run, error) {
	r, err := n.cfg.Engine.Store.RunGet(ctx, runID)
	if err != nil {
		return hitchtype.Run{}, fmt.Errorf("get %s: %w", runID, err)
	}
	return store.RunOf(r)
}

// Await waits until the run ends or parks.
func (n *Node) Await(ctx context.Context, runID string) (hitchtype.Run, error) {
	r, err := n.Eng.Await(ctx, runID)
	if err != nil {
		return hitchtype.Run{}, n.cfg.Engine.Secrets.Error(fmt.Errorf("await %s: %w", runID, err))
	}
	return store.RunOf(r)
}

// Cancel records a cancel request, with no secret value in who asked and
// why, and waits the command wait for the run to end.
func (n *Node) Cancel(ctx context.Context, req store.RunRequestCancelParams) (hitchtype.Run, error) {
	req.By, req.Reason = n.cfg.Engine.Secrets.String(req.By), n.cfg.Engine.Secrets.String(req.Reason)
	r, err := n.Eng.Cancel(ctx, req, n.CommandWait(ctx, req.ID))
	if err != nil {
		return hitchtype.Run{}, fmt.Errorf("cancel %s: %w", req.ID, err)
	}
	return store.RunOf(r)
}

// Reconcile settles an uncertain call.
func (n *Node) Reconcile(ctx context.Context, runID string, rec hitchtype.Reconciliation) error {
	if rec.Error != "" && (rec.Output != "" || rec.Unconfirmed) {
		return fmt.Errorf("reconcile %s %s: Error settles the call as failed: give it without Output or Unconfirmed", runID, rec.Call)
	}
	if err := n.Eng.Reconcile(ctx, runID, rec, n.CommandWait(ctx, runID)); err != nil {
		return fmt.Errorf("reconcile %s %s: %w", runID, rec.Call, err)
	}
	return nil
}

// PendingApprovals lists a page of approval requests waiting for answers.
func (n *Node) PendingApprovals(ctx context.Context, p hitchtype.PendingApprovalsParams) (page []hitchtype.PendingApproval, next string, err error) {
	page, next, err = n.Eng.PendingApprovals(ctx, engine.PendingApprovalsParams(p))
	if err != nil {
		return nil, "", fmt.Errorf("pending approvals: %w", err)
	}
	return page, next, nil
}

// ApprovalRequest returns one approval request while it waits.
func (n *Node) ApprovalRequest(ctx context.Context, runID, call string) (hitchtype.PendingApproval, error) {
	p, err := n.Eng.ApprovalRequest(ctx, runID, call, n.CommandWait(ctx, runID))
	if err != nil {
		return hitchtype.PendingApproval{}, fmt.Errorf("approval request %s %s: %w", runID, call, err)
	}
	return p, nil
}

// RecoverAll drives every due run.
func (n *Node) RecoverAll(ctx context.Context) (int, error) {
	c, err := n.Eng.WorkAll(ctx)
	if err != nil {
		return c, fmt.Errorf("recover: %w", err)
	}
	return c, nil
}

// ChangeRoot grants a root to a run's workspace, or revokes it.
func (n *Node) ChangeRoot(ctx context.Context, runID, path, by string, revoke bool) error {
	err := n.Eng.ChangeRoot(ctx, runID, engine.RootChange{Path: path, Revoke: revoke, By: by}, n.CommandWait(ctx, runID))
	switch {
	case err != nil && revoke:
		return fmt.Errorf("revoke root %s from %s: %w", path, runID, err)
	case err != nil:
		return fmt.Errorf("grant root %s to %s: %w", path, runID, err)
	}
	return nil
}

// RunCounts counts runs by status, of one tenant or of every tenant ("").
func (n *Node) RunCounts(ctx context.Context, tenant string) (map[hitchtype.Status]int, error) {
	m, err := store.RunCounts(ctx, n.cfg.Engine.Store, tenant)
	if err != nil {
		return nil, fmt.Errorf("run counts: %w", err)
	}
	return m, nil
}

// RunCountsFor counts runs by status among those p's filters keep.
func (n *Node) RunCountsFor(ctx context.Context, p hitchtype.RunsParams) (map[hitchtype.Status]int, error) {
	m, err := n.cfg.Engine.Store.RunCountsFor(ctx, ListParams(p))
	if err != nil {
		return nil, fmt.Errorf("run counts: %w", err)
	}
	return m, nil
}

// Wake delivers an event to the wake a run armed for it.
func (n *Node) Wake(ctx context.Context, runID, event string, data json.RawMessage, by string) error {
	err := n.Eng.Wake(ctx, runID, engine.WakeParams{Event: event, Data: data, By: by}, n.CommandWait(ctx, runID))
	if err != nil {
		return fmt.Errorf("wake %s with %q: %w", runID, event, err)
	}
	return nil
}

// CompleteCall completes a pending or held call from outside the run.
func (n *Node) CompleteCall(ctx context.Context, runID string, c hitchtype.Completion) error {
	if err := n.Eng.CompleteCall(ctx, runID, c, n.CommandWait(ctx, runID)); err != nil {
		return fmt.Errorf("complete %s %s: %w", runID, c.Call, err)
	}
	return nil
}

// Waits lists what a run waits on.
func (n *Node) Waits(ctx context.Context, runID string) ([]hitchtype.Wait, error) {
	ws, err := n.Eng.Waits(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("waits of %s: %w", runID, err)
	}
	return ws, nil
}

// Journal returns a run's entries after position after, at most limit.
func (n *Node) Journal(ctx context.Context, runID string, after int64, limit int) ([]store.Entry, error) {
	return n.cfg.Engine.Store.JournalRead(ctx, store.JournalReadParams{RunID: runID, After: after, Limit: limit})
}

// SessionCost sums what a session has cost so far.
func (n *Node) SessionCost(ctx context.Context, sessionID string) (hitchtype.RunningCost, error) {
	st, err := n.Sess.Status(ctx, sessionID)
	if err != nil {
		return hitchtype.RunningCost{}, err
	}
	return n.Usage.SessionCost(ctx, st)
}

// FollowRun yields a run's journal entries after position after as they are
// committed, until its terminal entry.
func (n *Node) FollowRun(ctx context.Context, runID string, after int64) iter.Seq2[store.Entry, error] {
	return func(yield func(store.Entry, error) bool) {
		if after < 0 {
			yield(store.Entry{}, fmt.Errorf("follow %s: after %d: want 0 or more", runID, after))
			return
		}
		run, err := n.cfg.Engine.Store.RunGet(ctx, runID)
		if err != nil {
			yield(store.Entry{}, fmt.Errorf("follow %s: %w", runID, err))
			return
		}
		n.Follows(ctx, run.ID, run.Position, run.Status.Terminal(), after, yield, func(id string) string { return id })
	}
}
