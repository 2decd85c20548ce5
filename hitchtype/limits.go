package hitchtype

import "time"

// Infinite, as a timeout, leaves the wait unbounded.
const Infinite time.Duration = -1

// Defaults of Limits; defaults.Table lists each with its range.
const (
	DefaultModelAttempts   = 8
	DefaultAnswerAttempts  = 2
	DefaultApprovalExpiry  = 7 * 24 * time.Hour
	DefaultMaxChildren     = 4
	DefaultMaxDepth        = 1
	DefaultHookTimeout     = 5 * time.Second
	DefaultKeepTurns       = 4
	DefaultRetryDelay      = 200 * time.Millisecond
	MaxRetryBackoffFactor  = 64
	DefaultMaxRetryAfter   = 10 * time.Minute
	DefaultModelTimeout    = 600 * time.Second
	DefaultPolicyTimeout   = 5 * time.Second
	DefaultToolTimeout     = 60 * time.Second
	DefaultToolConcurrency = 4
	DefaultMaxToolResult   = 1 << 20
	DefaultCommandWait     = 5 * time.Second
)

// Limits bound one run. A zero field takes its default (see the defaults table, defaults.Table).
type Limits struct {
	// ModelAttempts counts model calls per run, the first and every retry.
	// Default 8.
	ModelAttempts int
	// RetryDelay is the wait before the first retry of a retryable model
	// failure; it doubles with each consecutive failure, up to 64 times.
	// Default 200ms.
	RetryDelay time.Duration
	// MaxRetryAfter caps a provider's requested retry delay, which wins
	// when longer than the backoff. Default 10m.
	MaxRetryAfter time.Duration
	// ModelTimeout bounds one model call. Infinite leaves it unbounded.
	// Default 600s.
	ModelTimeout time.Duration
	// PolicyTimeout bounds one policy decision; a policy that does not
	// answer in time stops the run closed. Default 5s.
	PolicyTimeout time.Duration
	// ToolTimeout bounds one tool body; a body still running then becomes
	// an uncertain effect unless the tool is replayable. Infinite leaves it
	// unbounded. Default 60s.
	ToolTimeout time.Duration
	// ToolConcurrency bounds the tool bodies of one run running at once.
	// Default 4.
	ToolConcurrency int
	// MaxToolResult is the largest tool result, in bytes, a run keeps; a
	// larger one ends the run as failed (output_too_large). Default 1 MiB.
	MaxToolResult int
	// CommandWait is how long a command (cancel, reconcile) waits for the
	// run's live runner before it is refused as runner busy. Default 5s.
	CommandWait time.Duration
	// ApprovalExpiry is how long an approval request waits for an answer,
	// judged by the store's clock; then it is rejected as expired and the
	// model is told. Infinite never expires. Default 7 days.
	ApprovalExpiry time.Duration
	// MaxChildren bounds the sub-agent runs one run starts; a start past
	// it is refused before the policy, and the model is told why. Default
	// 4, at most 999.
	MaxChildren int
	// MaxDepth is how many levels of sub-agents may run below a run of
	// this agent (1: its children may not delegate in turn). A child is
	// bounded by its own setting and by what its parent has left. Default
	// 1, at most 16.
	MaxDepth int
	// ContextWindow, when above zero, is the model's context window in
	// tokens. When a request is estimated past 80% of it, the turns before
	// the last KeepTurns are summarized by the model (a model attempt like
	// any other, journaled) and later requests carry the summary instead;
	// a tool call and its result are never split. 0 (the default) never
	// compacts.
	ContextWindow int64
	// KeepTurns is how many recent turns compaction keeps verbatim.
	// Default 4.
	KeepTurns int
	// HookTimeout bounds one hook call; a hook that gives no answer in
	// time has failed. Default 5s.
	HookTimeout time.Duration
	// FinalTurn spends the last model attempt on a turn without tools, in
	// which the model is asked to report what it has; the run then
	// completes with that answer and the stop reason max_turns. By default
	// a run that runs out of attempts completes with max_turns and the
	// last reply's text.
	FinalTurn bool
	// MaxTokens bounds the input plus output tokens of one run, as the
	// provider reports them; a reply without usage then ends the run as
	// budget_unverifiable. 0 (the default) is no bound.
	MaxTokens int64
	// AnswerAttempts is how many final answers a run with a typed answer
	// asks for in all before it ends answer_invalid: 2 means one corrective
	// turn. Default 2.
	AnswerAttempts int
	// ContinueOnUncertain, when set, tells the model "outcome unknown" for
	// an uncertain effect and goes on; by default the run waits for the
	// call to be reconciled.
	ContinueOnUncertain bool
	// MaxWait bounds how far ahead the deadline of an armed wake
	// (await_event) or of a pending external call may be. Default 7 days.
	MaxWait time.Duration
	// PendingCallTimeout is how long an external call waits for its
	// result when its tool names no timeout; then it is settled as timed
	// out and the model is told. Default 24h, at most MaxWait.
	PendingCallTimeout time.Duration
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	l.ModelAttempts = or(l.ModelAttempts, DefaultModelAttempts)
	l.RetryDelay = or(l.RetryDelay, DefaultRetryDelay)
	l.MaxRetryAfter = or(l.MaxRetryAfter, DefaultMaxRetryAfter)
	l.ModelTimeout = or(l.ModelTimeout, DefaultModelTimeout)
	l.PolicyTimeout = or(l.PolicyTimeout, DefaultPolicyTimeout)
	l.ToolTimeout = or(l.ToolTimeout, DefaultToolTimeout)
	l.ToolConcurrency = or(l.ToolConcurrency, DefaultToolConcurrency)
	l.MaxToolResult = or(l.MaxToolResult, DefaultMaxToolResult)
	l.CommandWait = or(l.CommandWait, DefaultCommandWait)
	l.AnswerAttempts = or(l.AnswerAttempts, DefaultAnswerAttempts)
	l.ApprovalExpiry = or(l.ApprovalExpiry, DefaultApprovalExpiry)
	l.MaxChildren = or(l.MaxChildren, DefaultMaxChildren)
	l.MaxDepth = or(l.MaxDepth, DefaultMaxDepth)
	l.HookTimeout = or(l.HookTimeout, DefaultHookTimeout)
	l.KeepTurns = or(l.KeepTurns, DefaultKeepTurns)
	l.MaxWait = or(l.MaxWait, DefaultMaxWait)
	l.PendingCallTimeout = or(l.PendingCallTimeout, DefaultPendingCallTimeout)
	return l
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
