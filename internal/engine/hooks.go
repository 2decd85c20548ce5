package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/policy"
)

// callHook runs one hook call bounded by the hook timeout, even when the
// hook ignores its context, and turns a panic into an error. It returns
// the decisions named hooks reported (hook.Record) for the journal.
func callHook[T any](r *runner, fn func(ctx context.Context) (T, error)) (T, []hook.Decision, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.agent.Limits.HookTimeout)
	defer cancel()
	ctx, ds := hook.WithDecisions(ctx)
	type answer struct {
		v   T
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- answer{err: fmt.Errorf("the hook panicked: %v", p)}
			}
		}()
		v, err := fn(ctx)
		ch <- answer{v, err}
	}()
	r.idle()
	defer r.busy()
	select {
	case got := <-ch:
		return got.v, ds.All(), got.err
	case <-ctx.Done():
		var zero T
		if r.lost() {
			return zero, nil, context.Cause(r.ctx)
		}
		return zero, ds.All(), fmt.Errorf("the hook gave no answer within %s", r.agent.Limits.HookTimeout)
	}
}

// hookDecided stages the record of named hooks' decisions at a point
// whose outcome is journaled elsewhere.
func (r *runner) hookDecided(point string, turn int, call string, ds []hook.Decision) {
	if len(ds) == 0 {
		return
	}
	r.stageDeferred(entry(KindHookDecided, HookDecided{Point: point, Turn: turn, Call: call, Hooks: ds}))
}

// preTool asks the PreTool hook about an allowed call, once: its verdict is
// journaled. It reports whether the call may start now.
func (r *runner) preTool(c *callState) (run bool, ended bool, err error) {
	h := r.agent.Hooks
	if h == nil || c.hooked {
		return true, false, nil
	}
	args := json.RawMessage(c.args())
	v, ds, err := callHook(r, func(ctx context.Context) (hook.ToolVerdict, error) {
		return h.PreTool(ctx, hook.Call{RunID: r.runID, Agent: r.agent.Name, ID: c.key, Tool: c.call.Name, Arguments: args})
	})
	if err != nil {
		if r.lost() {
			return false, false, err
		}
		// Fail closed: no verdict, no action.
		v = hook.ToolVerdict{Action: hook.Deny, Reason: "the pre-tool hook failed, so the call did not run: " + err.Error()}
	}
	switch v.Action {
	case hook.Run:
		if len(v.Arguments) > 0 && !json.Valid(v.Arguments) {
			v = hook.ToolVerdict{Action: hook.Deny, Reason: "the pre-tool hook rewrote the arguments into invalid JSON"}
		}
	case hook.Deny, hook.Hold:
	default:
		v = hook.ToolVerdict{Action: hook.Deny, Reason: fmt.Sprintf("the pre-tool hook gave an unknown action %q", v.Action)}
	}
	r.stage(entry(KindCallHooked, CallHooked{Call: c.key, Action: string(v.Action), Arguments: v.Arguments, Reason: v.Reason, Hooks: ds}))
	if v.Action != hook.Hold {
		return v.Action == hook.Run, false, nil
	}
	// A held call waits for a person like an approval request.
	dec := CallDecided{Call: c.key, Verdict: policy.RequireApproval, Requirement: v.Requirement,
		Reason: "held by a hook: " + v.Reason, Rule: "the pre-tool hook"}
	if r.agent.Limits.ApprovalExpiry != Infinite {
		now, err := r.e.cfg.Store.Now(r.ctx)
		if err != nil {
			return false, false, fmt.Errorf("read store clock: %w", err)
		}
		at := now.Add(r.agent.Limits.ApprovalExpiry).UTC()
		dec.ExpiresAt = &at
	}
	r.stage(entry(KindCallDecided, dec))
	return false, false, nil
}

// postTool lets the PostTool hook rewrite a definite result. It fails
// open: an error keeps the body's own result.
func (r *runner) postTool(c *callState, res hook.Result) hook.Result {
	h := r.agent.Hooks
	if h == nil {
		return res
	}
	args := json.RawMessage(c.args())
	got, ds, err := callHook(r, func(ctx context.Context) (hook.Result, error) {
		return h.PostTool(ctx, hook.Call{RunID: r.runID, Agent: r.agent.Name, ID: c.key, Tool: c.call.Name, Arguments: args}, res)
	})
	r.hookDecided("post_tool", 0, c.key, ds)
	if err != nil {
		return res
	}
	return got
}

// preGenerate returns the PreGenerate hook's extra instructions for the
// next turn.
func (r *runner) preGenerate(turn int) (string, error) {
	h := r.agent.Hooks
	if h == nil {
		return "", nil
	}
	extra, ds, err := callHook(r, func(ctx context.Context) (string, error) {
		return h.PreGenerate(ctx, hook.Generate{RunID: r.runID, Agent: r.agent.Name, Turn: turn})
	})
	r.hookDecided("pre_generate", turn, "", ds)
	return extra, err
}

// postTurn asks the PostTurn hook about a final answer. It fails closed:
// an error refuses the answer, with a generic reason. message, when not
// empty, is the hook's own corrective message for the model.
func (r *runner) postTurn(answer string) (ok bool, reason, message string) {
	h := r.agent.Hooks
	if h == nil {
		return true, "", ""
	}
	v, ds, err := callHook(r, func(ctx context.Context) (hook.Verdict, error) {
		return h.PostTurn(ctx, hook.Answer{RunID: r.runID, Agent: r.agent.Name, Text: answer})
	})
	r.hookDecided("post_turn", len(r.st.turns), "", ds)
	switch {
	case err != nil:
		return false, "the answer could not be validated", ""
	case !v.Valid:
		if v.Reason == "" {
			v.Reason = "the answer was not accepted"
		}
		return false, v.Reason, v.Message
	}
	return true, "", ""
}

// hookTimeoutDefault guards agents built without a hook timeout.
const hookTimeoutDefault = 5 * time.Second
