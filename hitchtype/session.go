package hitchtype

import (
	"time"

	"github.com/hitch-dev/hitch/model"
)

// Session journal entry kinds. A session's journal is its own, apart from
// the journals of the runs that work its submissions; the position of an
// entry is its admission order. The data of each is the struct of the same
// name.
const (
	KindMessageAdmitted     = "message.admitted"
	KindMessageEdited       = "message.edited"
	KindMessageRemoved      = "message.removed"
	KindMessageJoined       = "message.joined"
	KindSubmissionStarted   = "submission.started"
	KindSubmissionInterrupt = "submission.interrupted"
	KindSubmissionEnded     = "submission.ended"
	KindSessionSteered      = "session.steered" // in a run's journal
)

// Defaults of sessions; hitch.Defaults lists them.
const (
	// DefaultMaxMessageBytes bounds the text of one session message.
	DefaultMaxMessageBytes = 256 << 10
	// DefaultIdempotencyTTL is how long an idempotency key of a send is
	// remembered.
	DefaultIdempotencyTTL = 24 * time.Hour
)

// SendMode says how a message joins a session.
type SendMode string

// Send modes.
const (
	// ModeQueue (the default) queues the message as its own submission,
	// worked after those admitted before it.
	ModeQueue SendMode = "queue"
	// ModeSteer joins the active submission at its next model-turn
	// boundary; when none is active, or it ends first, the message is
	// queued.
	ModeSteer SendMode = "steer"
	// ModeInterrupt cancels the active submission (reason interrupted) and
	// runs next.
	ModeInterrupt SendMode = "interrupt"
)

// Valid reports whether m is a known mode.
func (m SendMode) Valid() bool {
	return m == ModeQueue || m == ModeSteer || m == ModeInterrupt
}

// MessageState is where a session message stands.
type MessageState string

// Message states. Only a queued message may be edited, removed, joined or
// started.
const (
	StateQueued  MessageState = "queued"
	StateStarted MessageState = "started" // it is a submission's first message
	StateJoined  MessageState = "joined"  // it steered a running submission
	StateRemoved MessageState = "removed"
)

// SubmissionOutcome is a submission's one terminal outcome.
type SubmissionOutcome string

// Submission outcomes.
const (
	SubmissionCompleted SubmissionOutcome = "completed"
	SubmissionFailed    SubmissionOutcome = "failed"
	SubmissionAborted   SubmissionOutcome = "aborted"
)

// MessageAdmitted admits a user message to a session.
type MessageAdmitted struct {
	ID             string   `json:"id"`
	IdempotencyKey string   `json:"idempotency_key,omitempty"`
	Mode           SendMode `json:"mode"`
	Text           string   `json:"text"`
}

// MessageEdited replaces the text of a queued message.
type MessageEdited struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// MessageRemoved takes a queued message out of the queue.
type MessageRemoved struct {
	ID string `json:"id"`
}

// MessageJoined records that a steering message joined a running
// submission's run.
type MessageJoined struct {
	ID    string `json:"id"`
	RunID string `json:"run_id"`
}

// SubmissionStarted records that a message became a submission, worked by
// the run RunID; Text is the message's text as the run got it.
type SubmissionStarted struct {
	MessageID string `json:"message_id"`
	RunID     string `json:"run_id"`
	Text      string `json:"text"`
}

// SubmissionInterrupted records a durable request to interrupt the run of
// a submission; MessageID names the interrupting message, if any.
type SubmissionInterrupted struct {
	RunID     string `json:"run_id"`
	MessageID string `json:"message_id,omitempty"`
}

// SubmissionEnded is a submission's terminal entry.
type SubmissionEnded struct {
	MessageID string            `json:"message_id"`
	RunID     string            `json:"run_id"`
	Outcome   SubmissionOutcome `json:"outcome"`
	// Status is the run's terminal status; Reason its reason, if any.
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Answer is the final answer of a completed submission.
	Answer string `json:"answer,omitempty"`
	Error  string `json:"error,omitempty"`
	Usage  Usage  `json:"usage"`
	// CostUSD is absent when the price or a counter is unknown.
	CostUSD *float64 `json:"cost_usd,omitempty"`
	// History is set when the run compacted what came before its own
	// message: the summary and the messages it kept. Later submissions
	// start from it in place of the submissions before this one.
	History []model.Message `json:"history,omitempty"`
}

// SessionSteered, in a run's journal, is a user message that joined the
// run at a model-turn boundary: the model sees it after the results of the
// turn before.
type SessionSteered struct {
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
	// SessionPos is the message's admission position in the session.
	SessionPos int64 `json:"session_pos"`
}
