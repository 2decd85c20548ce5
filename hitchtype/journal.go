package hitchtype

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/route"
	"github.com/hitch-dev/hitch/policy"
)

// Journal entry kinds. The data of each is the struct of the same name.
const (
	KindRunStarted    = "run.started"
	KindContext       = "context"
	KindModelAttempt  = "model.attempt"
	KindModelReply    = "model.reply"
	KindModelFailed   = "model.failed"
	KindModelLost     = "model.interrupted"
	KindCompacted     = "context.compacted"
	KindCallDecided   = "call.decided"
	KindCallRejected  = "call.rejected"
	KindCallHooked    = "call.hooked"
	KindCallStarted   = "call.started"
	KindCallSettled   = "call.settled"
	KindCallFailed    = "call.failed"
	KindCallUncertain = "call.uncertain"
	KindCallLost      = "call.lost"
	KindCallReconcile = "call.reconciled"
	KindAnswerRefused = "answer.refused"
	KindHookDecided   = "hook.decided"
	KindApprovalGrant = "approval.granted"
	KindApprovalDeny  = "approval.rejected"
	KindApprovalLapse = "approval.expired"
	KindRootGranted   = "workspace.granted"
	KindRootRevoked   = "workspace.revoked"
	KindRunWaiting    = "run.waiting"
	KindRunEnded      = "run.ended"
)

// RunStarted opens every journal.
type RunStarted struct {
	Agent   string `json:"agent"`
	Version int    `json:"version"`
	Input   string `json:"input"`
	// DepthLeft is how many levels of sub-agents this run may still start
	// below itself.
	DepthLeft int `json:"depth_left"`
	// Instructions are the caller's layer of instructions for this run,
	// laid over the agent's (the caller's win where they disagree).
	Instructions string `json:"instructions,omitempty"`
	// Metadata is what the caller attached to the run (a JSON object: a
	// ticket, who asked), kept as given and never sent to the model.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Session, for a run that works a session's submission, names the
	// session; SessionMessage is the submission's message and SessionPos
	// its admission position, and History the session's transcript as of the start:
	// earlier submissions' messages and results, sent before Input.
	Session        string          `json:"session,omitempty"`
	SessionMessage string          `json:"session_message,omitempty"`
	SessionPos     int64           `json:"session_pos,omitempty"`
	History        []model.Message `json:"history,omitempty"`
	// ForkedFrom, for a fork, names the run and position its history was
	// copied from: its journal holds that run's entries 2 to Pos after
	// this one.
	ForkedFrom *ForkedFrom `json:"forked_from,omitempty"`
	// Model, for a fork told to go on with another model, names that
	// model (its Name): it answers the run's turns in place of its
	// agent's.
	Model string `json:"model,omitempty"`
}

// ForkedFrom names where a fork's history came from.
type ForkedFrom struct {
	Run string `json:"run"`
	Pos int64  `json:"pos"`
	// Replay marks a replay: every tool call is answered from Run's
	// recorded results, and a call the recording does not have at that
	// point ends the run as diverged; RunReplayable lets such a call of
	// a replayable tool run for real instead.
	Replay        bool `json:"replay,omitempty"`
	RunReplayable bool `json:"run_replayable,omitempty"`
}

// Context records what a turn observes when it differs from the previous
// turn: instructions and the tool set, so replay rebuilds the same history.
type Context struct {
	Instructions string   `json:"instructions"`
	Tools        []string `json:"tools"`
	// Specs declare, as the turn offered them, the tools of Tools that
	// came from a tool source (such as an MCP server) rather than from the
	// agent's definition: a source may change or vanish, so a replay
	// takes them from here.
	Specs []model.ToolSpec `json:"specs,omitempty"`
	// FinalTurn marks the last, tool-free turn an agent asked for when
	// its model attempts run out; Note is what the model is told.
	FinalTurn bool   `json:"final_turn,omitempty"`
	Note      string `json:"note,omitempty"`
	// Isolation is how the turn's workspace ran commands ("bwrap" or
	// "none"), and SandboxWarning what the sandbox said about it (commands
	// run unconfined, or are refused): the turn's view of the host.
	Isolation      string `json:"isolation,omitempty"`
	SandboxWarning string `json:"sandbox_warning,omitempty"`
}

// ModelAttempt is the intent to call the model. A journal whose last attempt
// has no reply or failure was interrupted mid-call.
type ModelAttempt struct {
	Attempt int `json:"attempt"`
	Turn    int `json:"turn"`
	// Purpose is "compaction" for a call that summarizes the history.
	Purpose string `json:"purpose,omitempty"`
	// ReservedTokens and ReservedMicroUSD are what the family budget was
	// charged for this attempt with its append (an estimate of the input);
	// the append of its reply settles the charge to the reply's usage. An
	// attempt with no reply keeps its reservation.
	ReservedTokens   int64 `json:"reserved_tokens,omitempty"`
	ReservedMicroUSD int64 `json:"reserved_micro_usd,omitempty"`
	// Context is where the request's tokens sit, by estimate, and the
	// window it was fitted into; nil in journals written before hitch
	// kept context accounts.
	Context *ContextAccount `json:"context,omitempty"`
	// Route names the route of an agent whose model is one (its Name,
	// "route/main"); the fields below are set only then. Model is the
	// route's model this attempt went to, by its Name; the reply is
	// priced at its price.
	Route string `json:"route,omitempty"`
	Model string `json:"model,omitempty"`
	// Why says how the route came to Model: first, retry, fallback,
	// again (every model was tried: from the top) or recovered (the
	// same model again after an attempt cut short by a crash); After is
	// the class of the failure that led here.
	Why   string     `json:"why,omitempty"`
	After model.Kind `json:"after,omitempty"`
	// Skipped are the route's models passed over on the way: cooling
	// down after a failure, or unable to serve the request (no tools, no
	// structured output).
	Skipped []route.Skip `json:"skipped,omitempty"`
}

// ModelReply is a model's complete reply to one attempt.
type ModelReply struct {
	Attempt int         `json:"attempt"`
	Turn    int         `json:"turn"`
	Reply   model.Reply `json:"reply"`
	// CostUSD is the reply's usage at the model's price when it came;
	// absent when the price or a counter is unknown (and in journals
	// written before replies were priced).
	CostUSD *float64 `json:"cost_usd,omitempty"`
	// TookMS is how long the call took, by the runner's clock. The
	// attempt is often journaled in the same commit as the reply, so the
	// two entries' times need not tell it.
	TookMS int64 `json:"took_ms,omitempty"`
	// Edited marks a reply a person rewrote when forking the run; Usage
	// and CostUSD are still the original reply's.
	Edited bool `json:"edited,omitempty"`
}

// ModelFailed is a failed attempt.
type ModelFailed struct {
	Attempt      int        `json:"attempt"`
	Kind         model.Kind `json:"kind"`
	Message      string     `json:"message"`
	RetryAfterMS int64      `json:"retry_after_ms,omitempty"`
	// TookMS is how long the call took, as in ModelReply.
	TookMS int64 `json:"took_ms,omitempty"`
}

// Compacted records a compaction of the history: turns up to Through are
// replaced, in every later request, by Summary. A failed compaction has
// Error and changes nothing.
type Compacted struct {
	Attempt int `json:"attempt"`
	Through int `json:"through"`
	// History, when Through is 0, is how many of the first messages of
	// the run's history (RunStarted.History, a session's transcript) the
	// summary stands for; the rest are kept verbatim.
	History int          `json:"history,omitempty"`
	Summary string       `json:"summary,omitempty"`
	Error   string       `json:"error,omitempty"`
	Usage   *model.Usage `json:"usage,omitempty"`
	// CostUSD prices Usage as ModelReply.CostUSD does.
	CostUSD *float64 `json:"cost_usd,omitempty"`
}

// ModelInterrupted records, at recovery, an attempt whose process stopped
// before its reply or failure was journaled. It brought no usage back.
type ModelInterrupted struct {
	Attempt int `json:"attempt"`
}

// CallDecided is the policy's decision on a call.
type CallDecided struct {
	Call        string         `json:"call"`
	Verdict     policy.Verdict `json:"verdict"`
	Reason      string         `json:"reason,omitempty"`
	Requirement string         `json:"requirement,omitempty"`
	// Rule names what decided (policy.Decision.Rule); empty when the
	// policy did not say.
	Rule string `json:"rule,omitempty"`
	// ExpiresAt is when an approval request lapses, by the store's clock;
	// nil means never.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// ApprovalAnswer records a granted or rejected approval request.
type ApprovalAnswer struct {
	Call   string `json:"call"`
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

// ApprovalExpired records a request nobody answered in time.
type ApprovalExpired struct {
	Call      string    `json:"call"`
	ExpiredAt time.Time `json:"expired_at"`
}

// CallRejected is a call that never reached the policy: an unknown tool or
// arguments that are not JSON. The model sees Error.
type CallRejected struct {
	Call  string `json:"call"`
	Error string `json:"error"`
}

// CallHooked records the pre-tool hook's verdict on a call: run (with
// rewritten arguments, if any), deny, or hold.
type CallHooked struct {
	Call      string          `json:"call"`
	Action    string          `json:"action"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	// Hooks are the named hooks that answered, in the order they ran,
	// when the agent's hooks name themselves (hooks from a config do).
	Hooks []HookDecision `json:"hooks,omitempty"`
}

// HookDecision is what one named hook answered at one point.
type HookDecision struct {
	Hook string `json:"hook"`
	// Action is what it decided: run (go on, possibly with a rewrite),
	// deny, hold, or skipped (its match or when left the event out).
	Action string `json:"action"`
	// Rewrote says it changed the arguments, the result or the
	// instructions that the next hook and the run see.
	Rewrote bool   `json:"rewrote,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Value is a post-turn validator's measured value.
	Value string `json:"value,omitempty"`
	// Error is why the hook failed; OnError says what its failure did:
	// fail_open went on without it, fail_closed denied.
	Error   string `json:"error,omitempty"`
	OnError string `json:"on_error,omitempty"`
}

// HookDecided records what named hooks answered at a point whose outcome
// is journaled elsewhere (pre_generate in the turn's context, post_tool in
// the call's result, post_turn in the run's end or a refusal): the record
// of who decided, never read back to decide again.
type HookDecided struct {
	Point string         `json:"point"`
	Turn  int            `json:"turn,omitempty"`
	Call  string         `json:"call,omitempty"`
	Hooks []HookDecision `json:"hooks"`
}

// CallStarted is the intent to run a body; Attempt counts replays. Node
// names the process that runs it (its lease owner), so a call left
// uncertain says where it was running.
type CallStarted struct {
	Call    string `json:"call"`
	Attempt int    `json:"attempt"`
	Node    string `json:"node,omitempty"`
}

// CallSettled is a body's result.
type CallSettled struct {
	Call   string `json:"call"`
	Output string `json:"output"`
	// Replayed marks a result a replay served from its recording: no
	// body ran.
	Replayed bool `json:"replayed,omitempty"`
}

// CallFailed is a definite failure: nothing happened that matters, and the
// model sees Error.
type CallFailed struct {
	Call  string `json:"call"`
	Error string `json:"error"`
	// Replayed is as in CallSettled.
	Replayed bool `json:"replayed,omitempty"`
}

// CallUncertain is an effect of unknown status.
type CallUncertain struct {
	Call   string `json:"call"`
	Reason string `json:"reason"`
}

// CallLost is an attempt of a replayable call whose outcome is unknown:
// its runner stopped, it timed out, or its connection failed after the
// request left. The call runs again as the next attempt.
type CallLost struct {
	Call    string `json:"call"`
	Attempt int    `json:"attempt"`
	Reason  string `json:"reason"`
}

// CallReconciled settles an uncertain call from outside.
type CallReconciled struct {
	Call        string `json:"call"`
	Output      string `json:"output,omitempty"`
	Unconfirmed bool   `json:"unconfirmed,omitempty"`
	By          string `json:"by,omitempty"`
	// Error settles the call as failed: it did not act, and the model
	// sees this error as its result.
	Error string `json:"error,omitempty"`
}

// AnswerRefused records a final text that did not decode as the typed
// answer, and the correction the model is sent.
type AnswerRefused struct {
	Turn    int    `json:"turn"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// RootChanged records a workspace root granted to, or revoked from, a run.
type RootChanged struct {
	Path string `json:"path"`
	By   string `json:"by,omitempty"`
}

// RunWaiting records why a run parked.
type RunWaiting struct {
	Reason string   `json:"reason"`
	Calls  []string `json:"calls,omitempty"`
}

// Outcome is a run's terminal summary, stored as run.ended's data and as the
// run row's outcome.
type Outcome struct {
	Status Status `json:"status"`
	// Answer is the final answer of a completed run: its text, or for an
	// agent with a typed answer, the answer's JSON.
	Answer string `json:"answer,omitempty"`
	// Raw is the last refused text of a run that ended answer_invalid.
	Raw string `json:"raw,omitempty"`
	// Reason is a short machine-readable cause: max_turns, output_too_large,
	// model_attempts, policy, cancelled, uncertain, diverged (a replay).
	Reason string `json:"reason,omitempty"`
	// Error is the human explanation of a failure.
	Error string `json:"error,omitempty"`
	// Uncertain lists calls whose effect is unknown at the end.
	Uncertain []string `json:"uncertain,omitempty"`
	// CancelledBy and CancelReason, for a cancelled run, say who asked
	// and why, as the cancel request said.
	CancelledBy  string `json:"cancelled_by,omitempty"`
	CancelReason string `json:"cancel_reason,omitempty"`
	Turns        int    `json:"turns"`
	Attempts     int    `json:"attempts"`
	Usage        Usage  `json:"usage"`
	// CostUSD is the usage priced by the model's list price; absent when
	// the price or a counter is unknown.
	CostUSD *float64 `json:"cost_usd,omitempty"`
}

// Usage sums what providers reported over every generation: each model
// attempt that got a reply, failed, or was interrupted. A nil counter means
// at least one generation did not report it (a provider that omits it, an
// attempt that failed or was cut off before usage came back): never a
// made-up zero.
type Usage struct {
	InputTokens       *int64 `json:"input_tokens"`
	OutputTokens      *int64 `json:"output_tokens"`
	CachedInputTokens *int64 `json:"cached_input_tokens"`
	Generations       int    `json:"generations"`
}

// Add counts one generation and what it reported (nil: nothing).
func (u *Usage) Add(r *model.Usage) {
	first := u.Generations == 0
	u.Generations++
	var in, out, cached *int64
	if r != nil {
		in, out, cached = r.InputTokens, r.OutputTokens, r.CachedInputTokens
	}
	u.InputTokens = sum(u.InputTokens, in, first)
	u.OutputTokens = sum(u.OutputTokens, out, first)
	u.CachedInputTokens = sum(u.CachedInputTokens, cached, first)
}

func sum(total, v *int64, first bool) *int64 {
	if v == nil || (total == nil && !first) {
		return nil
	}
	t := *v
	if total != nil {
		t += *total
	}
	return &t
}

// Reconciliation settles an uncertain call from outside the run.
type Reconciliation struct {
	Call string `json:"call"`
	// Output is the call's confirmed result, shown to the model.
	Output string `json:"output,omitempty"`
	// Unconfirmed says the outcome could not be established; the model is
	// told so and the run goes on.
	Unconfirmed bool `json:"unconfirmed,omitempty"`
	// By names who reconciled, for the journal.
	By string `json:"by,omitempty"`
	// Error settles the call as failed: it is confirmed not to have
	// acted, and the model sees Error as its result.
	Error string `json:"error,omitempty"`
}

// PendingApproval is one request waiting for an answer.
type PendingApproval struct {
	RunID       string          `json:"run_id"`
	RootID      string          `json:"root_id"`
	Agent       string          `json:"agent"`
	Call        string          `json:"call"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	Requirement string          `json:"requirement"`
	Reason      string          `json:"reason,omitempty"`
	// Rule names the policy rule that asked for the approval, when the
	// policy said.
	Rule      string     `json:"rule,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Input is the head of the run's input (its title), so a request can
	// be judged without opening the run.
	Input string `json:"input,omitempty"`
}

// CallKey is the journal's id of a tool call: "t<turn>c<n>" for the n-th
// call (from 1) of the reply of model turn turn. Every call.* and
// approval.* entry names its call by it; the provider's own id of the call
// stays in the reply (model.ToolCall.ID).
func CallKey(turn, n int) string { return fmt.Sprintf("t%dc%d", turn, n) }

// ParseCallKey returns the turn and the call's place in its reply of a
// CallKey; ok is false for any other text.
func ParseCallKey(key string) (turn, n int, ok bool) {
	rest, found := strings.CutPrefix(key, "t")
	if !found {
		return 0, 0, false
	}
	ts, cs, found := strings.Cut(rest, "c")
	if !found {
		return 0, 0, false
	}
	t, err1 := strconv.Atoi(ts)
	c, err2 := strconv.Atoi(cs)
	if err1 != nil || err2 != nil || t < 1 || c < 1 || CallKey(t, c) != key {
		return 0, 0, false
	}
	return t, c, true
}
