package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
)

// Errors of approval answers.
var (
	ErrNoApproval       = errors.New("the call does not wait for an approval")
	ErrAnswered         = errors.New("the approval request was already answered")
	ErrApprovalExpired  = errors.New("the approval request has expired")
	ErrDeniedAtAnswer   = errors.New("the policy denied the call at approval time")
	errAnswerNotApplied = errors.New("answer not applied")
)

// ApprovalAnswerParams answer one approval request.
type ApprovalAnswerParams struct {
	Call    string
	Approve bool
	By      string
	Reason  string
	// Verify checks the answerer's proof for the request's requirement at
	// the store's time; an error refuses the answer and records nothing.
	Verify func(requirement string, now time.Time) error
}

// AnswerApproval grants or rejects a pending approval request and drives
// the run on in the background. A request past its deadline is recorded as
// expired (the model is told) and the answer is refused with
// ErrApprovalExpired. The policy is asked again, the same question as at the
// decision, before a grant takes effect; a denial then is recorded (the
// model is told) and returned as ErrDeniedAtAnswer.
func (e *Engine) AnswerApproval(ctx context.Context, runID string, p ApprovalAnswerParams, wait time.Duration) error {
	st, err := e.foldRun(ctx, runID)
	if err != nil {
		return err
	}
	now, err := e.cfg.Store.Now(ctx)
	if err != nil {
		return fmt.Errorf("read store clock: %w", err)
	}
	c, expired, err := checkApproval(st, p.Call, now)
	if err != nil {
		return err
	}
	if !expired && p.Verify != nil {
		if err := p.Verify(c.decision.Requirement, now); err != nil {
			return err
		}
	}
	return e.command(ctx, runID, wait, func(r *runner) (reply, err error) {
		now, err := e.cfg.Store.Now(r.ctx)
		if err != nil {
			return err, err
		}
		c, expired, err := checkApproval(r.st, p.Call, now)
		switch {
		case err != nil:
			return err, nil
		case expired:
			// Recording the lapse is the runner's own business; the
			// answer is refused either way.
			err := r.expireApprovals()
			if err == nil {
				err = r.commit()
			}
			return fmt.Errorf("%w: %s (deadline %s)", ErrApprovalExpired, p.Call, c.expires.UTC().Format(time.RFC3339)), err
		case !p.Approve:
			err := r.commit(entry(KindApprovalDeny, ApprovalAnswer{Call: c.key, By: p.By, Reason: p.Reason}))
			return err, err
		}
		// The world may have changed since the request: ask the policy
		// again. A denial now wins; another approval verdict is satisfied
		// by this one.
		// A call with arguments that are not JSON is rejected before it
		// can wait for an approval.
		action, _ := r.action(c)
		d, err := r.ask(action)
		if err != nil {
			reply := fmt.Errorf("%w: no policy decision at approval time (fail closed): %v", errAnswerNotApplied, err)
			return reply, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "policy",
				Error: fmt.Sprintf("no policy decision for %s at approval time, so it did not run (fail closed): %v", c.call.Name, err)})
		}
		grant := entry(KindApprovalGrant, ApprovalAnswer{Call: c.key, By: p.By, Reason: p.Reason})
		if d.Verdict == policy.Deny {
			reason := d.Reason
			if reason == "" {
				reason = "no reason given"
			}
			err := r.commit(grant, entry(KindCallDecided, CallDecided{Call: c.key, Verdict: policy.Deny, Reason: "at approval time: " + reason}))
			if err == nil {
				return fmt.Errorf("%w: %s: %s", ErrDeniedAtAnswer, p.Call, reason), nil
			}
			return err, err
		}
		err = r.commit(grant)
		return err, err
	})
}

// checkApproval finds a call waiting for an answer. expired reports a
// request past its deadline at now.
func checkApproval(st *state, call string, now time.Time) (c *callState, expired bool, err error) {
	c = st.findCall(call)
	switch {
	case c == nil:
		return nil, false, fmt.Errorf("%w: %s", ErrUnknownCall, call)
	case c.approval == "":
		return nil, false, fmt.Errorf("%w: %s", ErrNoApproval, call)
	case c.approval == approvalExpired:
		return nil, false, fmt.Errorf("%w: %s (deadline %s)", ErrApprovalExpired, call, c.expires.UTC().Format(time.RFC3339))
	case c.approval != approvalPending || c.done:
		return nil, false, fmt.Errorf("%w: %s (%s)", ErrAnswered, call, c.approval)
	case st.ended != nil:
		return nil, false, fmt.Errorf("%w: the run has ended", store.ErrEnded)
	}
	return c, c.overdue(now), nil
}

// foldRun reads and folds a journal without taking the lease.
func (e *Engine) foldRun(ctx context.Context, runID string) (*state, error) {
	entries, err := readAll(ctx, e.cfg.Store, runID)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: %s", store.ErrNotFound, runID)
	}
	return fold(entries)
}

// PendingApprovals lists the approval requests waiting in waiting runs,
// of one family when rootID is set, at most limit runs' worth.
func (e *Engine) PendingApprovals(ctx context.Context, rootID string, limit int) ([]PendingApproval, error) {
	runs, err := e.cfg.Store.RunList(ctx, store.RunListParams{Statuses: []hitchtype.Status{hitchtype.StatusWaiting}, Limit: limit})
	if err != nil {
		return nil, err
	}
	now, err := e.cfg.Store.Now(ctx)
	if err != nil {
		return nil, fmt.Errorf("read store clock: %w", err)
	}
	var out []PendingApproval
	for _, run := range runs {
		if rootID != "" && run.RootID != rootID {
			continue
		}
		st, err := e.foldRun(ctx, run.ID)
		if err != nil {
			return nil, err
		}
		for _, c := range st.pendingApprovals(now) {
			out = append(out, pendingOf(run, c))
		}
	}
	return out, nil
}

// ApprovalRequest returns one call's approval request while it waits for
// an answer. It gives ErrApprovalExpired for a request past its deadline
// by the store's clock (whether or not the lapse is journaled yet),
// ErrAnswered for one granted or rejected, ErrNoApproval for a call that
// never needed one, ErrUnknownCall, and store.ErrEnded.
func (e *Engine) ApprovalRequest(ctx context.Context, runID, call string) (PendingApproval, error) {
	run, err := e.cfg.Store.RunGet(ctx, runID)
	if err != nil {
		return PendingApproval{}, err
	}
	st, err := e.foldRun(ctx, runID)
	if err != nil {
		return PendingApproval{}, err
	}
	now, err := e.cfg.Store.Now(ctx)
	if err != nil {
		return PendingApproval{}, fmt.Errorf("read store clock: %w", err)
	}
	c, expired, err := checkApproval(st, call, now)
	switch {
	case err != nil:
		return PendingApproval{}, err
	case expired:
		return PendingApproval{}, fmt.Errorf("%w: %s (deadline %s)", ErrApprovalExpired, call, c.expires.UTC().Format(time.RFC3339))
	}
	return pendingOf(run, c), nil
}

func pendingOf(run store.Run, c *callState) PendingApproval {
	args := json.RawMessage(c.call.Arguments)
	if !json.Valid(args) {
		args, _ = json.Marshal(c.call.Arguments)
	}
	return PendingApproval{RunID: run.ID, RootID: run.RootID, Agent: run.Agent, Call: c.key, Tool: c.call.Name,
		Arguments: args, Requirement: c.decision.Requirement, Reason: c.decision.Reason, ExpiresAt: c.expires}
}
