package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

// settleGrace is how long cancelled or timed-out work gets to surface its
// own result before it is abandoned and its late result discarded.
const settleGrace = 100 * time.Millisecond

var (
	errCancelled = errors.New("run cancelled")
	errStopped   = errors.New("engine stopping")
)

// runner drives one run while it holds the lease.
type runner struct {
	encoded encoded // the entry r.entry made last, until it is staged
	e       *Engine
	row     store.Run // as claimed
	born    *born     // what the engine knows of a run it just created
	runID   string
	token   int64
	agent   *Agent
	st      *state
	fam     family
	// recording, for a replay, is the fold of the run it replays.
	recording *state
	// sb and tools are the run's own workspace and the tools bound to it,
	// when its agent has one.
	sb    sandbox.Sandbox
	tools map[string]tool.Tool
	// dyn are the agent's sources' tools as of the current turn, by name,
	// in dynOrder; nil until read (see toolset.go).
	dyn      map[string]tool.Tool
	dynOrder []string
	// durable is the journal position known to be stored.
	durable int64
	pending []store.EntryInput
	// urgent is set while pending holds an entry that must be durable
	// before the run acts on it or a model sees it; entries whose loss in
	// a crash recovery repairs on its own (stageDeferred) leave it unset,
	// and ride the next commit that must happen anyway.
	urgent bool
	// adjust settles family reservations to what the work cost; it rides
	// on the next append, which journals that work's result.
	adjust store.Budget
	// flight is the commit the runner sent and goes on without waiting
	// for (send); there is at most one, and every write, and each model
	// reply, waits for it first (land).
	flight flight

	// ctx ends when the lease is lost or the engine stops: the runner
	// returns without writing. work ends on those and on cancellation:
	// model calls and tool bodies run under it.
	ctx       context.Context
	end       context.CancelCauseFunc
	work      context.Context
	stopWork  context.CancelCauseFunc
	cancelled atomic.Bool
	cancelAt  atomic.Int64
	// fencedOnce: the store's refusal is logged once.
	fencedOnce atomic.Bool
	once       sync.Once
	// drainCh is closed when a graceful stop asks the runner to park
	// before its next model call or tool body.
	drainCh   chan struct{}
	drainOnce sync.Once
	// released: a status change (park, end) gave the lease back.
	released bool
	// noSlot: the runner was started for a command on a full node. It
	// applies the command and leaves the run due for a runner with a slot.
	noSlot bool
	// holding: the runner holds a step slot (admit.go).
	holding bool
	// renewed is when the last renewal of the lease that succeeded was
	// sent (the claim, at first), in Unix nanoseconds: the engine's
	// keeper renews every runner's lease (keeper.go).
	renewed atomic.Int64

	done chan struct{}
	err  error
}

func newRunner(e *Engine, l store.Lease) *runner {
	base := context.Background()
	if e.cfg.RunContext != nil {
		base = e.cfg.RunContext(base)
	}
	ctx, end := context.WithCancelCause(base)
	work, stopWork := context.WithCancelCause(ctx)
	r := &runner{e: e, row: l.Run, runID: l.Run.ID, token: l.Token, ctx: ctx, end: end, work: work, stopWork: stopWork,
		done: make(chan struct{}), drainCh: make(chan struct{})}
	r.renewed.Store(time.Now().UnixNano())
	if l.Run.CancelRequested {
		r.requestCancel()
	}
	return r
}

// requestCancel asks the runner to cancel the run. Work in flight sees its
// context cancelled; the runner finalizes at its next step.
func (r *runner) requestCancel() {
	r.once.Do(func() {
		r.cancelAt.Store(time.Now().UnixNano())
		r.cancelled.Store(true)
		r.stopWork(errCancelled)
	})
}

// stop makes the runner return without writing, as when its node shuts down.
func (r *runner) stop() { r.end(errStopped) }

func (r *runner) lost() bool { return r.ctx.Err() != nil }

func (r *runner) run(prepare func(*runner) error) error {
	defer r.end(nil)
	// Whatever the way out, a commit in flight lands before the runner
	// returns: the engine reads the lease's state after it.
	defer r.landed()
	// A wait before the step loop (a command's commit) takes a step slot
	// after it too: whatever the way out, the slot goes back.
	defer r.idle()
	var entries []store.Entry
	var first any
	if r.born != nil {
		entries, first = r.born.journal, r.born.started
	} else {
		var err error
		if entries, err = readAll(r.ctx, r.e.cfg.Store, r.runID); err != nil {
			return fmt.Errorf("read journal: %w", err)
		}
	}
	st, err := foldFrom(entries, first)
	if err != nil {
		return fmt.Errorf("fold journal of %s: %w", r.runID, err)
	}
	switch {
	case st.pos > r.row.Position:
		// Appended to after this claim: another runner took the run,
		// so this lease was lost (it ran out before the runner began).
		return fmt.Errorf("%w: the journal of %s grew to position %d after the claim at %d", errFenced, r.runID, st.pos, r.row.Position)
	case st.pos < r.row.Position:
		return fmt.Errorf("fold journal of %s: %w: it ends at position %d, the run's position is %d", r.runID, ErrCorrupt, st.pos, r.row.Position)
	}
	r.st, r.durable = st, st.pos
	agent, ok := r.e.cfg.Agents(st.started.Agent, st.started.Version)
	if !ok {
		return fmt.Errorf("%w: %s version %d", ErrUnknownAgent, st.started.Agent, st.started.Version)
	}
	if agent, err = r.e.withModel(agent, st.started.Model); err != nil {
		return err
	}
	r.agent = agent
	if err := r.loadRecording(); err != nil {
		return err
	}
	if err := r.loadFamily(); err != nil {
		return err
	}
	if err := r.openWorkspace(); err != nil {
		return err
	}
	defer r.closeWorkspace()
	if prepare != nil {
		if err := prepare(r); err != nil {
			return err
		}
	}
	if r.noSlot {
		if err := r.commit(); err != nil {
			return err
		}
		return errLeft
	}
	r.busy()
	for {
		if r.lost() {
			return context.Cause(r.ctx)
		}
		done, err := r.step()
		if err != nil {
			if r.lost() {
				return context.Cause(r.ctx)
			}
			return err
		}
		if done {
			return nil
		}
	}
}

// step takes the next action the state calls for. done reports that the
// run ended or parked.
func (r *runner) step() (done bool, err error) {
	st, lim := r.st, r.agent.Limits
	if st.ended != nil {
		return true, nil
	}
	if r.cancelled.Load() {
		return true, r.finish(r.cancelOutcome())
	}
	if t := st.lastTurn(); t != nil && !st.inFlight {
		if len(t.calls) == 0 && !t.refused && st.lastFailed == nil && !st.steeredLast() {
			return r.final(t)
		}
		if slices.ContainsFunc(t.calls, func(c *callState) bool { return !c.done }) {
			if r.draining() {
				return true, r.drained()
			}
			return r.runCalls(t)
		}
	}
	if f := st.lastFailed; f != nil && !f.Kind.Retryable() {
		return true, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "model", Error: fmt.Sprintf("model call failed (%s): %s", f.Kind, f.Message)})
	}
	if st.attempts >= lim.ModelAttempts {
		if f := st.lastFailed; f != nil {
			return true, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "model_attempts",
				Error: fmt.Sprintf("model attempts exhausted (%d): last error (%s): %s", lim.ModelAttempts, f.Kind, f.Message)})
		}
		answer := ""
		if t := st.lastTurn(); t != nil {
			answer = t.reply.Text
			if t.refused {
				return true, r.finish(Outcome{Status: hitchtype.StatusAnswerInvalid, Reason: "answer_invalid", Raw: t.reply.Text,
					Error: fmt.Sprintf("the model attempts (%d) ran out after the final answer was refused", lim.ModelAttempts)})
			}
		}
		return true, r.finish(Outcome{Status: hitchtype.StatusCompleted, Reason: "max_turns", Answer: answer,
			Error: fmt.Sprintf("the run used all %d model attempts before the model gave a final answer", lim.ModelAttempts)})
	}
	if r.draining() {
		return true, r.drained()
	}
	if st.failures > 0 && !r.fallsBack() {
		// The failures are durable before the wait, so attempts count
		// across crashes however long the backoff is.
		if err := r.flush(); err != nil {
			return false, err
		}
		if err := r.sleep(backoff(lim, st.failures, st.lastFailed)); err != nil {
			return false, err
		}
		if r.cancelled.Load() || r.draining() {
			return false, nil
		}
	}
	return false, r.callModel()
}

// final ends the run with a reply that asked for no calls: its text, or
// for a typed answer, the decoded value. A text that does not decode gets a
// corrective turn while answer attempts last.
func (r *runner) final(t *turnState) (bool, error) {
	a := r.agent.Answer
	answer := t.reply.Text
	var why, hookMsg string
	if a != nil {
		value, err := a.decode(t.reply.Text)
		if err != nil {
			why = err.Error()
		}
		answer = string(value)
	}
	if why == "" {
		if ok, reason, msg := r.postTurn(answer); !ok {
			why, hookMsg = "a validator refused it: "+reason, msg
		}
	}
	if why == "" {
		return true, r.finish(Outcome{Status: hitchtype.StatusCompleted, Answer: answer, Reason: r.stopReason()})
	}
	if r.st.refusals+1 >= r.agent.Limits.AnswerAttempts {
		return true, r.finish(Outcome{Status: hitchtype.StatusAnswerInvalid, Reason: "answer_invalid", Raw: t.reply.Text,
			Error: fmt.Sprintf("the final answer was refused %d time(s); the last reason: %s", r.st.refusals+1, why)})
	}
	msg := fmt.Sprintf("Your final answer was refused: %s. Answer again.", why)
	switch {
	case hookMsg != "":
		msg = hookMsg
	case a != nil:
		msg = a.correction(why)
	}
	r.stage(entry(KindAnswerRefused, AnswerRefused{Turn: len(r.st.turns), Reason: why, Message: msg}))
	return false, nil
}

// request builds a turn's model request as a runner sends it: the agent's
// instructions with the run's laid over them and what pre-generate hooks
// added (extra), the transcript, the tools unless the turn is the final
// one, and the answer's schema. A preview builds a run's first request
// with it, so what it shows is what a run sends.
func (a *Agent) request(st *state, extra string, specs []model.ToolSpec, final bool) (*model.Request, layers) {
	instr := layer(a.Instructions, st.started.Instructions)
	lay := layers{agent: len(a.Instructions)}
	if extra != "" {
		instr += "\n\n" + extra
		lay.hook = 2 + len(extra)
	}
	req := &model.Request{Instructions: instr, Messages: st.messages(), Tools: specs}
	if final {
		req.Tools = nil
	}
	if a.Answer != nil {
		req.Answer = a.Answer.request()
	}
	return req, lay
}

// layer lays the caller's instructions over the agent's: both are sent,
// the caller's last, and marked so the model knows which wins.
func layer(agent, call string) string {
	switch {
	case call == "":
		return agent
	case agent == "":
		return call
	}
	return agent + "\n\nInstructions for this run (they take precedence over the above):\n" + call
}

// stopReason says why a completed run stopped when the model did not end
// it on its own: max_turns after the final, tool-free turn.
func (r *runner) stopReason() string {
	if r.st.finalAt >= 0 {
		return "max_turns"
	}
	return ""
}

// backoff is the wait before the next attempt after n consecutive failures:
// RetryDelay doubling, at most 64 times it, or the provider's retry-after
// when longer, up to MaxRetryAfter.
func backoff(lim Limits, n int, last *ModelFailed) time.Duration {
	d := lim.RetryDelay << min(n-1, 6)
	if last != nil {
		if ra := time.Duration(last.RetryAfterMS) * time.Millisecond; ra > d {
			d = min(ra, lim.MaxRetryAfter)
		}
	}
	return d
}

func (r *runner) sleep(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	r.idle()
	defer r.busy()
	select {
	case <-t.C:
		return nil
	case <-r.work.Done():
		if r.lost() {
			return context.Cause(r.ctx)
		}
		return nil
	case <-r.drainCh:
		return nil
	}
}

func (r *runner) callModel() error {
	st, a := r.st, r.agent
	if st.inFlight {
		// Recovered mid-call: say so, so the journal explains the gap.
		r.stageDeferred(entry(KindModelLost, ModelInterrupted{Attempt: st.attempts}))
	}
	if err := r.admitSteering(); err != nil {
		return err
	}
	extra, err := r.preGenerate(len(st.turns) + 1)
	if err != nil {
		if r.lost() {
			return err
		}
		return r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "hook",
			Error: "the pre-generate hook failed, so the model was not called (fail closed): " + err.Error()})
	}
	names, specs, sourced := r.turnTools()
	final := st.finalAt >= 0 || (a.Limits.FinalTurn && st.attempts+1 == a.Limits.ModelAttempts && len(st.turns) > 0 && len(names) > 0)
	req, lay := a.request(st, extra, specs, final)
	instr := req.Instructions
	switch {
	case final && st.finalAt < 0:
		r.stageDeferred(r.entry(KindContext, Context{Instructions: instr, Tools: []string{}, FinalTurn: true,
			Note: "This is your last turn: tools are no longer available. Give your final answer now from what you have, and say what is left undone."}))
		req.Messages = r.st.messages() // the note just staged ends the transcript the model reads
	case !final && (st.context == nil || st.context.Instructions != instr || !slices.Equal(st.context.Tools, names) || !sameSpecs(st.context.Specs, sourced)):
		c := Context{Instructions: instr, Tools: slices.Clone(names), Specs: sourced}
		if r.sb != nil {
			if caps := r.sb.Capabilities(); caps.Exec || caps.Warning != "" {
				c.Isolation, c.SandboxWarning = string(caps.Isolation), caps.Warning
			}
		}
		r.stageDeferred(r.entry(KindContext, c))
	}
	// The model is chosen first, so the transcript is compacted for its
	// window; a summary may change the route's breakers, so the choice is
	// made again after one.
	p, err := r.choose(req, st.tries)
	if err != nil {
		return r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "model", Error: err.Error()})
	}
	window := p.window(a.Limits.ContextWindow)
	acct := account(req, lay, st.summaryText(), window)
	if compacted, err := r.maybeCompact(acct.Estimate, window); err != nil || r.st.ended != nil || r.lost() || r.cancelled.Load() {
		return err
	} else if compacted {
		req.Messages = st.messages()
		if p, err = r.choose(req, st.tries); err != nil {
			return r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "model", Error: err.Error()})
		}
		acct = account(req, lay, st.summaryText(), p.window(a.Limits.ContextWindow))
	}
	if r.draining() {
		return r.commit() // the step loop parks it
	}
	name := p.model.Name()
	reserved, ended, err := r.beforeModel(acct.Estimate, name)
	if ended || err != nil {
		return err
	}
	attempt := st.attempts + 1
	if ended, err := r.reserve(reserved, r.entry(KindModelAttempt, p.stamp(ModelAttempt{Attempt: attempt, Turn: len(st.turns) + 1,
		ReservedTokens: reserved.Tokens, ReservedMicroUSD: reserved.MicroUSD, Context: acct}, a.Model.Name())), withNext); ended || err != nil {
		return err
	}
	st = r.st
	began := time.Now()
	reply, err := r.generate(p, req, true)
	took := time.Since(began).Milliseconds()
	if r.lost() {
		return nil // the step loop returns; recovery records the gap
	}
	if err := r.land(); err != nil {
		return err // the last step's commit failed: nothing acts on this reply
	}
	if r.cancelled.Load() {
		// The step loop finalizes. A reply that made it in is kept, so
		// its usage is counted; without one, finish records the attempt
		// as interrupted.
		if err == nil {
			r.stage(r.entry(KindModelReply, ModelReply{Attempt: attempt, Turn: len(st.turns) + 1, Reply: *reply, CostUSD: r.costOf(name, reply.Usage), TookMS: took}))
			r.settleModel(reserved, name, reply.Usage)
		}
		return nil
	}
	r.report(p, err)
	if err != nil {
		r.stage(entry(KindModelFailed, ModelFailed{Attempt: attempt, Kind: model.KindOf(err), Message: err.Error(),
			RetryAfterMS: model.RetryAfterOf(err).Milliseconds(), TookMS: took}))
		return nil
	}
	r.stage(r.entry(KindModelReply, ModelReply{Attempt: attempt, Turn: len(st.turns) + 1, Reply: *reply, CostUSD: r.costOf(name, reply.Usage), TookMS: took}))
	_, err = r.afterReply(reserved, name, reply.Usage)
	return err
}

// generate makes one model call bounded by the model timeout, streaming
// text deltas to observers when stream is set. A call that does not stop
// when its context ends is abandoned after a short grace. A timeout is a
// *model.Error of kind timed_out.
func (r *runner) generate(p pick, req *model.Request, stream bool) (*model.Reply, error) {
	a := r.agent
	ctx, cancel := r.work, context.CancelFunc(func() {})
	if a.Limits.ModelTimeout != Infinite {
		ctx, cancel = context.WithTimeout(r.work, a.Limits.ModelTimeout)
	}
	defer cancel()
	type answer struct {
		reply *model.Reply
		err   error
	}
	ch := make(chan answer, 1)
	go func() {
		var onDelta func(string)
		if f := r.e.cfg.OnDelta; f != nil && stream {
			onDelta = func(d string) { f(r.runID, d) }
		}
		reply, err := model.Collect(p.generate(ctx, req), onDelta)
		ch <- answer{reply, err}
	}()
	r.idle()
	defer r.busy()
	var got answer
	select {
	case got = <-ch:
	case <-ctx.Done():
		// Give the call a moment to surface its own error, then abandon it.
		t := time.NewTimer(settleGrace)
		select {
		case got = <-ch:
		case <-t.C:
			got = answer{err: &model.Error{Kind: model.KindOf(ctx.Err()), Message: "the model call did not stop when asked"}}
		}
		t.Stop()
	}
	if got.err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && r.work.Err() == nil {
		return nil, &model.Error{Kind: model.KindTimedOut, Message: got.err.Error(), Err: got.err}
	}
	return got.reply, got.err
}

// bodyResult is what one tool body returned.
type bodyResult struct {
	c         *callState
	attempt   int
	output    string
	err       error
	abandoned bool
}

// runCalls decides and runs the calls of turn t that have no answer yet, in
// the reply's order, with at most ToolConcurrency bodies at once.
func (r *runner) runCalls(t *turnState) (done bool, err error) {
	lim := r.agent.Limits
	results := make(chan bodyResult, len(t.calls))
	running := 0
	var approvals, delegated, waits []string

	if err := r.expireApprovals(); err != nil {
		return false, err
	}
	if err := r.expireWaits(); err != nil {
		return false, err
	}

	// collect waits for one body and handles its result.

	collect := func() (bool, error) {
		r.idle()
		defer r.busy()
		select {
		case res := <-results:
			running--
			ended, restarted, err := r.settle(res, running, results)
			if restarted {
				running++
			}
			return ended, err
		case <-r.ctx.Done():
			return false, context.Cause(r.ctx)
		}
	}

	for _, c := range t.calls {
		if c.done || c.uncertain {
			continue
		}
		if c.waiting() {
			waits = append(waits, c.key)
			continue
		}
		if r.draining() {
			break // what started finishes; nothing new starts
		}
		if r.recording != nil && !c.decided && c.started == 0 {
			served, ended, err := r.replayCall(c)
			if ended || err != nil {
				return ended, err
			}
			if served {
				continue
			}
		}
		if !c.decided {
			if ended, err := r.decide(c); ended || err != nil {
				return ended, err
			}
			if c.done {
				continue
			}
		}
		if c.decision.Verdict == policy.RequireApproval && c.approval != approvalGranted {
			approvals = append(approvals, c.key)
			break // later calls wait for this one, to keep the reply's order
		}
		if r.agent.children[c.call.Name] != nil {
			if c.started == 0 {
				if ended, err := r.checkWall(); ended || err != nil {
					return ended, err
				}
				if ended, err := r.reserve(r.toolCharge(), r.entry(KindCallStarted, CallStarted{Call: c.key, Attempt: 1, Node: r.e.cfg.Owner}), durableNow); ended || err != nil {
					return ended, err
				}
				if err := r.startChild(c); err != nil {
					return false, err
				}
			}
			delegated = append(delegated, c.key)
			continue
		}
		if c.started == 0 {
			run, ended, err := r.preTool(c)
			if ended || err != nil {
				return ended, err
			}
			if !run {
				if c.approval == approvalPending { // held for a person
					approvals = append(approvals, c.key)
					break
				}
				continue // denied
			}
		}
		t := r.toolFor(c.call.Name)
		if t == nil {
			// Its source withdrew it after the turn began, and this
			// process never held it.
			if c.started > 0 {
				r.markUncertain(c, "the process running this call stopped before its result was recorded, and its tool is no longer offered")
			} else {
				r.stage(entry(KindCallRejected, CallRejected{Call: c.key, Error: withdrawn(c.call.Name)}))
			}
			continue
		}
		info := t.Info()
		if aw, ok := t.(tool.Awaiter); ok {
			if err := r.arm(c, aw); err != nil {
				return false, err
			}
			if c.waiting() {
				waits = append(waits, c.key)
			}
			continue
		}
		if info.External {
			if ended, err := r.startPending(c, info); ended || err != nil {
				return ended, err
			}
			waits = append(waits, c.key)
			continue
		}
		if c.started > 0 && c.started >= max(info.Replay, 1) {
			// Started before a crash, not settled, and not safe to run again.
			r.markUncertain(c, "the process running this call stopped before its result was recorded")
			continue
		}
		for running >= lim.ToolConcurrency {
			if ended, err := collect(); ended || err != nil {
				return ended, err
			}
		}
		if r.cancelled.Load() || r.draining() {
			break
		}
		if c.started > 0 {
			// A replayable call started before and never settled: say the
			// attempt was lost before the next one starts.
			r.stage(entry(KindCallLost, CallLost{Call: c.key, Attempt: c.started,
				Reason: "the runner driving this attempt stopped before its result was recorded"}))
		}
		if ended, err := r.startBody(c, results); ended || err != nil {
			return ended, err
		}
		running++
	}
	for running > 0 {
		if ended, err := collect(); ended || err != nil {
			return ended, err
		}
	}
	if r.cancelled.Load() || r.draining() {
		return false, nil
	}
	var waiting []string
	for _, key := range delegated {
		pending, err := r.childOutcome(r.st.findCall(key))
		if err != nil {
			return false, err
		}
		if pending {
			waiting = append(waiting, key)
		}
	}
	if len(waiting) > 0 && len(approvals) == 0 {
		return true, r.waitForChildren(waiting)
	}
	if len(approvals) > 0 {
		return true, r.park(RunWaiting{Reason: "approval", Calls: approvals})
	}
	if u := r.st.uncertainCalls(); len(u) > 0 {
		return true, r.park(RunWaiting{Reason: "uncertain", Calls: u})
	}
	if len(waits) > 0 {
		reason := "external"
		for _, key := range waits {
			if r.st.findCall(key).wake == wakeArmed {
				reason = "event"
				break
			}
		}
		return true, r.park(RunWaiting{Reason: reason, Calls: waits})
	}
	return false, nil
}

// decide puts a call to the policy. It stages the decision, or a rejection
// for an unknown tool or arguments that are not JSON.
func (r *runner) decide(c *callState) (ended bool, err error) {
	if r.st.finalAt >= 0 && r.st.finalAt < len(r.st.turns) {
		r.stage(entry(KindCallRejected, CallRejected{Call: c.key, Error: "no tools are available on the final turn"}))
		return false, nil
	}
	if r.toolFor(c.call.Name) == nil {
		why := fmt.Sprintf("there is no tool named %q; the tools are: %s", c.call.Name, strings.Join(r.turnNames(), ", "))
		if r.offered(c.call.Name) {
			why = withdrawn(c.call.Name)
		}
		r.stage(entry(KindCallRejected, CallRejected{Call: c.key, Error: why}))
		return false, nil
	}
	action, ok := r.action(c)
	if !ok {
		r.stage(entry(KindCallRejected, CallRejected{Call: c.key,
			Error: fmt.Sprintf("the arguments for %s are not valid JSON: %.200q", c.call.Name, c.call.Arguments)}))
		return false, nil
	}
	if action.Kind == policy.StartAgent {
		if why := r.checkDelegation(c); why != "" {
			r.stage(entry(KindCallRejected, CallRejected{Call: c.key, Error: why}))
			return false, nil
		}
	}
	d, err := r.ask(action)
	if err != nil {
		if r.lost() {
			return false, context.Cause(r.ctx)
		}
		return true, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "policy",
			Error: fmt.Sprintf("no policy decision for %s, so it did not run (fail closed): %v", c.call.Name, err)})
	}
	switch d.Verdict {
	case policy.Allow, policy.Deny, policy.RequireApproval:
	default:
		return true, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "policy",
			Error: fmt.Sprintf("the policy gave an unknown verdict %q for %s (fail closed)", d.Verdict, c.call.Name)})
	}
	if d.Verdict == policy.Deny && d.Reason == "" {
		d.Reason = "no reason given"
	}
	dec := CallDecided{Call: c.key, Verdict: d.Verdict, Reason: d.Reason, Requirement: d.Requirement, Rule: d.Rule}
	if d.Verdict == policy.RequireApproval && r.agent.Limits.ApprovalExpiry != Infinite {
		now, err := r.e.cfg.Store.Now(r.ctx)
		if err != nil {
			return false, fmt.Errorf("read store clock: %w", err)
		}
		at := now.Add(r.agent.Limits.ApprovalExpiry).UTC()
		dec.ExpiresAt = &at
	}
	r.stage(r.entry(KindCallDecided, dec))
	return false, nil
}

// action is the question the policy is asked about c, the same at the
// decision and at an approval answer. ok is false when the arguments are
// not JSON.
func (r *runner) action(c *callState) (a policy.Action, ok bool) {
	args := strings.TrimSpace(c.call.Arguments)
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return a, false
	}
	kind := policy.CallTool
	if r.agent.children[c.call.Name] != nil {
		kind = policy.StartAgent
	}
	a = policy.Action{Kind: kind, RunID: r.runID, RootID: r.row.RootID, Depth: r.row.Depth,
		Agent: r.agent.Name, AgentVersion: r.agent.Version, Tool: c.call.Name, Arguments: json.RawMessage(args)}
	if c.decided {
		// Asked again at approval time: the condition may weigh what was approved.
		a.Requirement = c.decision.Requirement
	}
	if h, ok := r.toolFor(c.call.Name).(tool.Hinter); ok {
		hints := h.Hints()
		a.Hints = &hints
	}
	return a, true
}

// expireApprovals rejects, as expired, approval requests past their
// deadline by the store's clock.
func (r *runner) expireApprovals() error {
	var now time.Time
	for _, c := range r.st.pendingApprovals(time.Time{}) {
		if c.expires == nil {
			continue
		}
		if now.IsZero() {
			var err error
			if now, err = r.e.cfg.Store.Now(r.ctx); err != nil {
				return fmt.Errorf("read store clock: %w", err)
			}
		}
		if c.overdue(now) {
			r.stage(entry(KindApprovalLapse, ApprovalExpired{Call: c.key, ExpiredAt: *c.expires}))
		}
	}
	return nil
}

// ask runs the policy bounded by the policy timeout, even if the policy
// ignores its context.
func (r *runner) ask(a policy.Action) (policy.Decision, error) {
	if policy.Constant(r.agent.Policy) {
		// Fixed and immediate: no goroutine, no timer.
		return r.agent.Policy.Decide(r.ctx, a)
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.agent.Limits.PolicyTimeout)
	defer cancel()
	type answer struct {
		d   policy.Decision
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- answer{err: fmt.Errorf("policy panicked: %v", p)}
			}
		}()
		d, err := r.agent.Policy.Decide(ctx, a)
		ch <- answer{d, err}
	}()
	r.idle()
	defer r.busy()
	select {
	case got := <-ch:
		return got.d, got.err
	case <-ctx.Done():
		if r.lost() {
			return policy.Decision{}, context.Cause(r.ctx)
		}
		return policy.Decision{}, fmt.Errorf("policy decision timed out after %s", r.agent.Limits.PolicyTimeout)
	}
}

// startBody journals the start of a call, with its reservation, and runs
// its body.
func (r *runner) startBody(c *callState, results chan<- bodyResult) (ended bool, err error) {
	if ended, err := r.checkWall(); ended || err != nil {
		return ended, err
	}
	attempt := c.started + 1
	t := r.toolFor(c.call.Name)
	info := t.Info()
	// A replayable body's start rides the next commit: if a crash loses
	// it, recovery runs the body again, as it would anyway.
	// Its commit may stay in flight while the body runs and the next model
	// call goes out: a crash loses at most this step, which recovery redoes.
	// A body that must run at most once waits for its start to be durable.
	how := durableNow
	if info.Replay > 1 {
		how = inFlight
	}
	if ended, err := r.reserve(r.toolCharge(), r.entry(KindCallStarted, CallStarted{Call: c.key, Attempt: attempt, Node: r.e.cfg.Owner}), how); ended || err != nil {
		return ended, err
	}
	c = r.st.findCall(c.key) // reserve may have rebuilt the state
	timeout := info.Timeout
	if timeout == 0 {
		timeout = r.agent.Limits.ToolTimeout
	}
	args := json.RawMessage(c.args())
	go func() {
		base := tool.WithCall(r.work, tool.CallInfo{RunID: r.runID, Call: c.key, Attempt: attempt})
		ctx, cancel := base, context.CancelFunc(func() {})
		if timeout != Infinite && timeout != tool.Infinite {
			ctx, cancel = context.WithTimeout(base, timeout)
		}
		defer cancel()
		ch := make(chan bodyResult, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					ch <- bodyResult{err: tool.Uncertain(fmt.Errorf("the tool panicked: %v", p))}
				}
			}()
			out, err := t.Call(ctx, args)
			ch <- bodyResult{output: out, err: err}
		}()
		var res bodyResult
		select {
		case res = <-ch:
		case <-ctx.Done():
			g := time.NewTimer(settleGrace)
			select {
			case res = <-ch:
			case <-g.C:
				// Signal-deaf: abandon it. Its late result lands in ch's
				// buffer and is dropped.
				res = bodyResult{abandoned: true, err: ctx.Err()}
			}
			g.Stop()
			if res.err == nil && ctx.Err() != nil && !res.abandoned {
				// It finished anyway: keep the result.
				break
			}
			if res.err != nil && !tool.IsUncertain(res.err) {
				res.err = tool.Uncertain(fmt.Errorf("stopped: %w", context.Cause(ctx)))
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				res.err = tool.Uncertain(fmt.Errorf("the tool did not finish within %s", timeout))
			}
		}
		res.c, res.attempt = c, attempt
		select {
		case results <- res:
		case <-r.ctx.Done(): // the runner has returned; nobody will read it
		}
	}()
	return false, nil
}

// settle records one body's result. With other bodies still running the
// result is committed at once, so a crash cannot turn it into an uncertain
// effect; otherwise it rides with the next commit, which is made before the
// model sees it. The result of a body that recovery would run again anyway
// (a replayable tool with attempts left) never forces a commit.
func (r *runner) settle(res bodyResult, others int, results chan<- bodyResult) (ended, restarted bool, err error) {
	c := res.c
	put := r.stage
	if t := r.toolFor(c.call.Name); t != nil && t.Info().Replay > res.attempt {
		put = r.stageDeferred
	}
	if res.err == nil || (!tool.IsUncertain(res.err) && !res.abandoned) {
		// A definite result: the post-tool hook may rewrite it.
		in := hook.Result{Output: res.output}
		if res.err != nil {
			in = hook.Result{Output: res.err.Error(), IsError: true}
		}
		if out := r.postTool(c, in); out != in {
			res.output, res.err = out.Output, nil
			if out.IsError {
				res.err = errors.New(out.Output)
			}
		}
	}
	switch {
	case res.err == nil:
		if n := len(res.output); n > r.agent.Limits.MaxToolResult {
			return true, false, r.finish(Outcome{Status: hitchtype.StatusFailed, Reason: "output_too_large",
				Error: fmt.Sprintf("tool %s returned %d bytes, over the largest kept tool result (%d bytes); its effect has happened",
					c.call.Name, n, r.agent.Limits.MaxToolResult)})
		}
		put(r.entry(KindCallSettled, CallSettled{Call: c.key, Output: res.output}))
	case errors.As(res.err, new(*tool.ArgumentError)):
		put(entry(KindCallFailed, CallFailed{Call: c.key, Error: res.err.Error()}))
	case tool.IsUncertain(res.err) || res.abandoned:
		if r.cancelled.Load() {
			r.markUncertain(c, "the run was cancelled while this call ran: "+res.err.Error())
			break
		}
		if info := r.toolFor(c.call.Name).Info(); info.Replay > res.attempt {
			if r.draining() {
				break // left started: the next runner replays it
			}
			reason := "the attempt was abandoned"
			if res.err != nil {
				reason = res.err.Error()
			}
			r.stage(entry(KindCallLost, CallLost{Call: c.key, Attempt: res.attempt, Reason: reason}))
			if ended, err := r.startBody(c, results); ended || err != nil {
				return ended, false, err
			}
			return false, true, nil
		}
		r.markUncertain(c, res.err.Error())
	default:
		put(entry(KindCallFailed, CallFailed{Call: c.key, Error: res.err.Error()}))
	}
	if others > 0 {
		return false, false, r.flush()
	}
	return false, false, nil
}

// markUncertain stages an uncertain effect, and for agents that opted in,
// tells the model at once that the outcome is unknown.
func (r *runner) markUncertain(c *callState, reason string) {
	r.stage(entry(KindCallUncertain, CallUncertain{Call: c.key, Reason: reason}))
	if r.agent.Limits.ContinueOnUncertain && !r.cancelled.Load() {
		r.stage(entry(KindCallReconcile, CallReconciled{Call: c.key, Unconfirmed: true, By: "agent"}))
	}
}

// stage applies an entry to the state now and queues it for the next
// commit. Nothing acts on staged state outside the runner before a commit:
// the next flush makes it durable.
func (r *runner) stage(e store.EntryInput) {
	r.urgent = true
	r.stageDeferred(e)
}

// stageDeferred stages an entry that need not be durable before the run
// acts on it: one whose loss in a crash recovery makes good by itself (a
// model attempt without a reservation, which is issued again; a context;
// a replayable body's start or result, whose body runs again). It rides
// the next commit.
func (r *runner) stageDeferred(e store.EntryInput) {
	enc := r.encoded
	r.encoded = encoded{}
	e = r.e.redact(e)
	var value any
	if len(e.Data) > 0 && len(enc.data) == len(e.Data) && &enc.data[0] == &e.Data[0] {
		// The entry r.entry just encoded, and redaction changed nothing.
		value = enc.value
	}
	pos := r.st.pos + 1
	if err := r.st.applyValue(store.Entry{RunID: r.runID, Pos: pos, Kind: e.Kind, Data: e.Data}, value); err != nil {
		// The runner built e itself; failing to fold it is a bug.
		panic(err)
	}
	r.pending = append(r.pending, e)
}

// commit makes staged entries and extra durable.
func (r *runner) commit(extra ...store.EntryInput) error {
	return r.write(store.JournalAppendParams{}, extra...)
}

// flush commits what is staged when any of it must be durable before the
// run goes on: before a model call, a tool body or a child's start. This
// is what makes a step one commit: entries that may be lost ride along.
func (r *runner) flush() error {
	if !r.urgent {
		return nil
	}
	return r.commit()
}

// flushInFlight is flush for a point where the run may go on while the
// commit is made (before a replayable body): it sends the commit and
// returns; the runner waits for it at its next write or model reply.
func (r *runner) flushInFlight() error {
	if !r.urgent {
		return nil
	}
	if err := r.land(); err != nil {
		return err
	}
	p, ok := r.params(store.JournalAppendParams{})
	if !ok {
		return nil
	}
	if p.Charge != nil {
		// A settlement of the family budget can be refused: it waits.
		return r.append(p)
	}
	r.send(p)
	return nil
}

// write commits what is staged, extra and p's changes to the run, and
// waits until they are durable.
func (r *runner) write(p store.JournalAppendParams, extra ...store.EntryInput) error {
	if err := r.land(); err != nil {
		return err
	}
	for _, e := range extra {
		r.stage(e)
	}
	p, ok := r.params(p)
	if !ok {
		return nil
	}
	return r.append(p)
}

// params fills p with what is staged and takes it off the runner's hands:
// ok is false when there is nothing to write.
func (r *runner) params(p store.JournalAppendParams) (_ store.JournalAppendParams, ok bool) {
	if len(r.pending) == 0 && p.Status == "" {
		return p, false
	}
	p.RunID, p.Token, p.After, p.Entries = r.runID, r.token, r.durable, r.pending
	p.Outcome = r.e.Redact(p.Outcome)
	if r.fam.ok && r.adjust != (store.Budget{}) {
		if p.Charge == nil {
			p.Charge = &store.BudgetCharge{}
		}
		p.Charge.Adjust = p.Charge.Adjust.Add(r.adjust)
	}
	return p, true
}

// append writes p and waits for it.
func (r *runner) append(p store.JournalAppendParams) error {
	r.idle()
	run, err := r.e.appended(r.ctx, r.runID, p)
	r.busy()
	if err != nil {
		var be *store.BudgetExhaustedError
		if errors.As(err, &be) {
			return be // nothing written; the caller takes its entry back
		}
		return r.refused(err)
	}
	r.released = r.released || (p.Status != "" && p.Status != hitchtype.StatusRunning)
	r.durable += int64(len(p.Entries))
	r.pending, r.adjust, r.urgent = nil, store.Budget{}, false
	if run.Status == hitchtype.StatusWaiting && (run.CancelRequested || r.cancelled.Load()) {
		// A cancel requested while the run parked: act on it now rather
		// than at the wake time.
		go r.e.redrive(r.runID)
	}
	return nil
}

// refused stops the runner when the store refused its append because its
// lease is no longer current, and names the append in err.
func (r *runner) refused(err error) error {
	if errors.Is(err, store.ErrFenced) || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrEnded) {
		r.fenced("append", err)
	}
	return fmt.Errorf("append to journal of %s: %w", r.runID, err)
}

// flight is a commit sent and not yet waited for. Its goroutine sets err,
// then signals done.
type flight struct {
	p    store.JournalAppendParams
	on   bool
	done chan struct{}
	err  error
}

// send commits p on a goroutine of its own; land waits for it. The staged
// entries are the flight's now: the runner stages anew while it flies.
func (r *runner) send(p store.JournalAppendParams) {
	if r.flight.done == nil {
		r.flight.done = make(chan struct{}, 1)
	}
	r.flight.p, r.flight.on, r.flight.err = p, true, nil
	r.pending, r.adjust, r.urgent = nil, store.Budget{}, false
	go r.fly()
}

func (r *runner) fly() {
	_, r.flight.err = r.e.appended(r.ctx, r.runID, r.flight.p)
	r.flight.done <- struct{}{}
}

// land waits for the commit in flight, if any. A failed one stops the
// runner here as a failed write would have.
func (r *runner) land() error {
	if !r.flight.on {
		return nil
	}
	r.idle()
	defer r.busy()
	return r.landed()
}

// landed is land without the step slot: the runner gives its slot back
// while it waits, and does not take one again on its way out.
func (r *runner) landed() error {
	if !r.flight.on {
		return nil
	}
	<-r.flight.done
	f := &r.flight
	f.on = false
	if f.err != nil {
		err := f.err
		f.p, f.err = store.JournalAppendParams{}, nil
		return r.refused(err)
	}
	r.durable += int64(len(f.p.Entries))
	f.p = store.JournalAppendParams{}
	return nil
}

// appended is one journal append of a runner: it is timed for
// OnStoreTiming, and once durable its entries go to OnCommit, in the order
// the run's appends were made (a runner has one append at a time).
func (e *Engine) appended(ctx context.Context, runID string, p store.JournalAppendParams) (store.Appended, error) {
	began := time.Now()
	run, err := e.cfg.Store.JournalAppend(ctx, p)
	if f := e.cfg.OnStoreTiming; f != nil {
		f(TimingAppend, time.Since(began), len(p.Entries), err)
	}
	if err == nil {
		if f := e.cfg.OnCommit; f != nil {
			out := make([]store.Entry, len(p.Entries))
			for i, en := range p.Entries {
				out[i] = store.Entry{RunID: runID, Pos: p.After + 1 + int64(i), Kind: en.Kind, Data: en.Data}
			}
			f(runID, out)
		}
	}
	return run, err
}

// park records why the run waits and releases the lease. The run is due
// again at its earliest deadline (an approval request's, an armed wake's,
// a pending call's), if any. Parking again for the same reason with
// nothing new to journal writes no second entry: a long wait must not
// grow the journal.
func (r *runner) park(w RunWaiting) error {
	var why []store.EntryInput
	if old := r.st.waiting; len(r.pending) > 0 || old == nil || old.Reason != w.Reason || !slices.Equal(old.Calls, w.Calls) {
		why = append(why, entry(KindRunWaiting, w))
	}
	return r.write(store.JournalAppendParams{Status: hitchtype.StatusWaiting, WakeAt: r.st.waitDeadline()}, why...)
}

// finish ends the run with o. Calls started and not settled are recorded as
// uncertain first, so the outcome says which effects are unknown.
func (r *runner) finish(o Outcome) error {
	if r.st.inFlight {
		// A generation abandoned at the end counts, as unreported.
		r.stage(entry(KindModelLost, ModelInterrupted{Attempt: r.st.attempts}))
	}
	for _, t := range r.st.turns {
		for _, c := range t.calls {
			if c.started > 0 && !c.done && !c.uncertain {
				r.stage(entry(KindCallUncertain, CallUncertain{Call: c.key, Reason: "the run ended while this call ran"}))
			}
		}
	}
	o.Uncertain = r.st.uncertainCalls()
	o.Turns, o.Attempts, o.Usage = len(r.st.turns), r.st.attempts, r.st.usage
	switch {
	case o.Usage.Generations == 0:
	case r.route() != nil:
		// Each generation was priced at the model that made it.
		if !r.st.unpriced {
			usd := r.st.cost
			o.CostUSD = &usd
		}
	default:
		u := o.Usage
		if usd, known := r.e.cfg.Prices.Cost(r.agent.Model.Name(), &model.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens}); known {
			o.CostUSD = &usd
		}
	}
	// The terminal append itself requests the cancel of every live child
	// and makes a waiting parent due, in one transaction (the store's
	// contract), so no crash after it can leave a child running or a
	// parent asleep. Runners here are told at once.
	kids := r.liveChildren()
	e := r.entry(KindRunEnded, o)
	if err := r.write(store.JournalAppendParams{Status: o.Status, Outcome: e.Data}, e); err != nil {
		return err
	}
	for _, id := range kids {
		r.e.nudgeCancelled(id)
	}
	if r.row.ParentID != "" {
		go r.e.wake(r.row.ParentID)
	}
	return nil
}

// fenced stops a runner whose append or renewal the store refused because
// its lease is no longer current: another runner claimed the run, or the
// run ended. It says so once, at warn, with the run, this runner's token
// and the winner's, so an operator can tell a lost lease from a crash. A
// renewal that only raced this runner's own end or park of the run (the
// run ended under this runner's token, or its lease was given back with
// the token unchanged: only the holder of a token can release it) lost
// nothing and is not reported.
func (r *runner) fenced(op string, err error) {
	if r.fencedOnce.CompareAndSwap(false, true) {
		attrs := []any{"run", r.runID, "token", r.token, "op", op, "err", err}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), time.Second)
		run, gerr := r.e.cfg.Store.RunGet(ctx, r.runID)
		cancel()
		if gerr == nil {
			attrs = append(attrs, "winner_token", run.LeaseToken, "winner", run.LeaseOwner, "status", run.Status)
		}
		ownRelease := run.LeaseToken == r.token && (run.Status.Terminal() || run.LeaseOwner == "")
		if gerr != nil || !ownRelease {
			r.e.log().Warn("runner refused by fencing: another runner holds the run, this one stops", attrs...)
		}
	}
	r.end(fmt.Errorf("%w: %w", errFenced, err))
}

// readAll reads a whole journal in bounded pages.
func readAll(ctx context.Context, s store.Store, runID string) ([]store.Entry, error) {
	var all []store.Entry
	after := int64(0)
	for {
		page, err := s.JournalRead(ctx, store.JournalReadParams{RunID: runID, After: after, Limit: store.DefaultReadLimit})
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < store.DefaultReadLimit {
			return all, nil
		}
		after = page[len(page)-1].Pos
	}
}
