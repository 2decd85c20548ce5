package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
)

// SessionStore keeps sessions: named conversations whose user messages are
// admitted durably, in order, and worked one submission at a time. A driver
// offers sessions by implementing it next to Store; the conformance suite
// (storetest) checks it on every driver that does.
//
// A session has its own append-only journal, positions 1, 2, …: the
// position of a message.admitted entry is the message's admission order. The
// store also keeps each message's state (hitchtype.MessageState) and the
// session's active run, and enforces them in the same transaction as the
// entry that changes them:
//
//	 admit
//	   │
//	queued ──start──► started   (the submission's run is active)
//	   │ ├──join───► joined    (it steered the active run)
//	   │ └─remove──► removed
//	   └─edit (stays queued)
//
// Only a queued message may be edited, removed, joined or started, so a
// message is worked at most once. At most one submission of a session is
// active at a time: SessionStart sets the active run only when none is set,
// and SessionEnd clears it only for the run that holds it.
type SessionStore interface {
	// SessionCreate creates a session. It is idempotent by ID: when the
	// session exists it returns it, created=false, and writes nothing.
	SessionCreate(ctx context.Context, p SessionCreateParams) (s Session, created bool, err error)

	// SessionGet returns one session, or ErrSessionNotFound.
	SessionGet(ctx context.Context, id string) (Session, error)

	// SessionList returns sessions in order of their ids, after the
	// cursor p.After, at most p.Limit (0 means 100).
	SessionList(ctx context.Context, p SessionListParams) ([]Session, error)

	// SessionAppend appends one message entry to a session's journal, in one
	// transaction with the change it makes to the message's state:
	//   - message.admitted (hitchtype.MessageAdmitted) adds a queued
	//     message; its id must be new in the session (else ErrConflict);
	//   - message.edited replaces a queued message's text;
	//   - message.removed removes a queued message;
	//   - message.joined marks a queued message joined to a run;
	//   - submission.interrupted (hitchtype.SubmissionInterrupted) records
	//     an interrupt of the active run; its run_id must be the active
	//     run (else ErrConflict).
	// Other kinds are refused; submissions start and end through
	// SessionStart and SessionEnd.
	//
	// With p.After at or above 0 the append is conditional: it is refused
	// with ErrConflict unless p.After is the journal's length. AnyPosition
	// appends at the end, whatever it is.
	//
	// An admission with p.IdempotencyKey is idempotent within p.KeyTTL
	// (by the store clock): the same key in the same session, while
	// remembered, returns the first admission's entry with Duplicate set
	// and writes nothing. An expired key is forgotten.
	//
	// Errors: ErrSessionNotFound; ErrConflict; *MessageStateError when the
	// message is not queued; ErrMessageNotFound. Nothing is written on
	// error.
	SessionAppend(ctx context.Context, p SessionAppendParams) (SessionAppendResult, error)

	// SessionRead returns a session's entries with positions above p.After,
	// in order, at most p.Limit (0 means DefaultReadLimit).
	SessionRead(ctx context.Context, p SessionReadParams) ([]SessionEntry, error)

	// SessionMessages returns a session's messages in the order their
	// submissions start: queued interrupt messages first, then every other
	// queued message, each group by admission position. With p.All, it
	// returns every message (any state) by admission position instead.
	// At most p.Limit (0 means 100).
	SessionMessages(ctx context.Context, p SessionMessagesParams) ([]SessionMessage, error)

	// SessionStart starts the next submission atomically: in one
	// transaction it creates the run p.Run (as RunCreate would), sets it as
	// the session's active run, marks the message started, and appends
	// submission.started. It is refused, writing nothing, with
	//   - *SessionBusyError when the session has an active run;
	//   - *MessageStateError when the message is not queued;
	//   - ErrConflict when the message is not the next to start (see
	//     SessionMessages), or its text changed since p.MessageVersion,
	//     or a run with p.Run.ID exists;
	//   - ErrSessionNotFound, ErrMessageNotFound.
	// Two callers can never both start a submission of one session.
	SessionStart(ctx context.Context, p SessionStartParams) (Session, Run, error)

	// SessionEnd ends the active submission: when p.RunID is the session's
	// active run, it marks the messages of p.Joined joined to it (those
	// still queued), appends submission.ended with p.Data, and clears the
	// active run, in one transaction, and returns ended=true. Otherwise it
	// writes nothing and returns ended=false: ending is idempotent, and a
	// stale caller cannot end a submission twice.
	SessionEnd(ctx context.Context, p SessionEndParams) (s Session, ended bool, err error)
}

// Session is a session's row: the store keeps what callers are answered.
type Session = hitchtype.Session

// SessionEntry is one entry of a session's journal.
type SessionEntry struct {
	SessionID string
	Pos       int64
	Kind      string
	At        time.Time // store clock at append
	Data      json.RawMessage
}

// SessionMessage is a message as the store holds it.
type SessionMessage struct {
	ID   string
	Pos  int64 // admission position
	Mode hitchtype.SendMode
	// Text is the current text (after edits).
	Text  string
	State hitchtype.MessageState
	// RunID is the run the message started or joined.
	RunID string
	// Version is the position of the last entry that changed the message;
	// SessionStart checks it.
	Version int64
}

// AnyPosition, as SessionAppendParams.After, appends at the journal's end.
const AnyPosition = -1

// SessionCreateParams are the parameters of SessionCreate.
type SessionCreateParams struct {
	ID string
	// Tenant owns the session; empty means hitchtype.DefaultTenant. A
	// repeated create returns the existing session, whatever its tenant.
	Tenant  string
	Agent   string
	Version int
	// Metadata is a JSON object; nil means {}.
	Metadata json.RawMessage
}

// SessionListParams are the parameters of SessionList.
type SessionListParams struct {
	// After is a cursor: the id of the last session of the previous page.
	After string
	Limit int
	// Tenant keeps one tenant's sessions; empty means all tenants.
	Tenant string
	// NeedsWork keeps only sessions that need a node's attention: an
	// active run that has ended (its submission is not yet ended), no
	// active run and a queued message, or an active run not asked to
	// cancel though the journal holds an interrupt of it (whoever
	// journaled the interrupt died before it cancelled the run).
	NeedsWork bool
}

// SessionAppendParams are the parameters of SessionAppend.
type SessionAppendParams struct {
	SessionID string
	// After is the expected journal length, or AnyPosition.
	After int64
	Kind  string
	Data  json.RawMessage
	// IdempotencyKey, on an admission, makes it idempotent for KeyTTL.
	IdempotencyKey string
	KeyTTL         time.Duration
}

// SessionAppendResult is what SessionAppend did.
type SessionAppendResult struct {
	Session Session
	// Entry is the entry appended, or for a duplicate, the first
	// admission's entry.
	Entry     SessionEntry
	Duplicate bool
}

// SessionReadParams are the parameters of SessionRead.
type SessionReadParams struct {
	SessionID string
	After     int64
	Limit     int
}

// SessionMessagesParams are the parameters of SessionMessages.
type SessionMessagesParams struct {
	SessionID string
	All       bool
	Limit     int
}

// SessionStartParams are the parameters of SessionStart.
type SessionStartParams struct {
	SessionID string
	MessageID string
	// MessageVersion is the message's Version as the caller read it.
	MessageVersion int64
	// Run is the run to create; its first entries hold the message's
	// text as of MessageVersion. It takes the session's tenant: Run.Tenant
	// may be empty or the session's, anything else is ErrTenantMismatch.
	Run RunCreateParams
	// Data is the submission.started entry's data.
	Data json.RawMessage
}

// SessionEndParams are the parameters of SessionEnd.
type SessionEndParams struct {
	SessionID string
	RunID     string
	// Joined are messages the run took in as steering, to be marked
	// joined if they are not yet.
	Joined []string
	// Data is the submission.ended entry's data.
	Data json.RawMessage
}

// Session errors.
var (
	ErrSessionNotFound = errors.New("session not found")
	ErrMessageNotFound = errors.New("message not found")
)

// SessionBusyError refuses to start a submission while another is active.
type SessionBusyError struct {
	SessionID string
	ActiveRun string
}

func (e *SessionBusyError) Error() string {
	return fmt.Sprintf("session %s is working a submission (run %s)", e.SessionID, e.ActiveRun)
}

// MessageStateError refuses a change to a message that is no longer
// queued.
type MessageStateError struct {
	MessageID string
	State     hitchtype.MessageState
	RunID     string
}

func (e *MessageStateError) Error() string {
	if e.RunID != "" {
		return fmt.Sprintf("message %s is %s (run %s), not queued", e.MessageID, e.State, e.RunID)
	}
	return fmt.Sprintf("message %s is %s, not queued", e.MessageID, e.State)
}

// MessageColumns are the columns of a session's message that ScanMessage
// reads, in its order.
const MessageColumns = `id, pos, mode, text, state, run_id, version`

// MessageNextOrder orders queued messages as they start: interrupts
// first, then by position.
const MessageNextOrder = ` ORDER BY (mode = 'interrupt') DESC, pos`

// ScanMessage reads a row of MessageColumns.
func ScanMessage(sc Scanner) (SessionMessage, error) {
	var (
		m           SessionMessage
		mode, state string
	)
	if err := sc.Scan(&m.ID, &m.Pos, &mode, &m.Text, &state, &m.RunID, &m.Version); err != nil {
		return m, err
	}
	m.Mode, m.State = hitchtype.SendMode(mode), hitchtype.MessageState(state)
	return m, nil
}
