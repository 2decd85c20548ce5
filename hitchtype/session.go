package hitchtype

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
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

// Defaults of sessions; defaults.Table lists them.
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

// SessionConfig configures the sessions of a runtime (hitch.Config.Sessions).
type SessionConfig struct {
	// MaxMessageBytes bounds the text of one message. Default 256 KiB;
	// 1 B to 16 MiB.
	MaxMessageBytes int
	// IdempotencyTTL is how long a send's idempotency key is remembered.
	// Default 24h; 1s to 30 days.
	IdempotencyTTL time.Duration
}

// WithDefaults returns the config with every unset field set to its
// default.
func (c SessionConfig) WithDefaults() SessionConfig {
	c.MaxMessageBytes = cmp.Or(c.MaxMessageBytes, DefaultMaxMessageBytes)
	c.IdempotencyTTL = cmp.Or(c.IdempotencyTTL, DefaultIdempotencyTTL)
	return c
}

// Validate reports every field out of its range, naming it as a field of
// hitch.Config.
func (c SessionConfig) Validate() error {
	var errs []error
	if c.MaxMessageBytes < 1 || c.MaxMessageBytes > 16<<20 {
		errs = append(errs, fmt.Errorf("out of range: Config.Sessions.MaxMessageBytes is %d, want 1 to %d", c.MaxMessageBytes, 16<<20))
	}
	if c.IdempotencyTTL < time.Second || c.IdempotencyTTL > 30*24*time.Hour {
		errs = append(errs, fmt.Errorf("out of range: Config.Sessions.IdempotencyTTL is %s, want 1s to 720h", c.IdempotencyTTL))
	}
	return errors.Join(errs...)
}

// SessionOptions configure sessions.Client.Open.
type SessionOptions struct {
	// ID names the session; opening an existing id returns it. Default: a
	// fresh random id. Letters, digits and . _ : -, at most 128 bytes.
	ID string
	// Tenant owns the session and the runs of its submissions (see
	// CheckTenant). Default: DefaultTenant. Opening an
	// existing session of another tenant is refused with sessions.ErrTenant.
	Tenant string
	// Metadata is stored with a new session, as a JSON object.
	Metadata map[string]any
}

// Session is a session as the store holds it.
type Session struct {
	ID string
	// Tenant owns the session and the runs of its submissions.
	Tenant   string
	Agent    string
	Version  int
	Metadata json.RawMessage
	// ActiveRun is the run of the submission being worked, or "".
	ActiveRun string
	// Position is the length of the session's journal.
	Position int64
	// Queued counts messages waiting to start.
	Queued    int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SessionsParams filter and page sessions.Client.List.
type SessionsParams struct {
	// Tenant keeps one tenant's sessions; empty means every tenant.
	Tenant string
	// After is a cursor: the id of the last session of the previous page.
	After string
	// Limit bounds the page: 0 means 100, at most
	// 1000.
	Limit int
}

// SendOptions configure sessions.Client.Send.
type SendOptions struct {
	// IdempotencyKey makes a retried send admit the message once: the same
	// key within SessionConfig.IdempotencyTTL returns the first admission.
	IdempotencyKey string
	// Mode is ModeQueue (default), ModeSteer or ModeInterrupt.
	Mode SendMode
}

// SendResult tells what sessions.Client.Send did.
type SendResult struct {
	MessageID string
	// Position is the message's admission position in the session.
	Position int64
	Mode     SendMode
	// Duplicate is set when the idempotency key matched an earlier send:
	// nothing new was admitted, and MessageID is the first admission's.
	Duplicate bool
}

// QueuedMessage is a message waiting to start.
type QueuedMessage struct {
	ID       string
	Position int64
	Mode     SendMode
	Text     string
}

// Submission is one submission of a session: a message and the run that
// worked it.
type Submission struct {
	MessageID string
	RunID     string
	Text      string
	// Joined are the messages that steered it.
	Joined []string
	// Outcome is "" while the submission runs.
	Outcome SubmissionOutcome
	Status  Status
	Reason  string
	Answer  string
	Error   string
	// Usage is the run's usage; nil while the submission runs.
	Usage   *Usage
	CostUSD *float64
}

// SessionStatus is a session's state: its row, queue, submissions and
// usage.
type SessionStatus struct {
	Session     Session
	Queue       []QueuedMessage
	Submissions []Submission
	// Usage sums the ended submissions' usage: a counter is nil when any
	// generation did not report it.
	Usage Usage
	// CostUSD is nil when any ended submission's cost is unknown.
	CostUSD *float64
}
