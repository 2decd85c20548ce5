// Package sessions is the client of a runtime's sessions: conversations
// whose messages are worked one submission (one run) at a time, in order.
// hitch.Runtime.Sessions hands out a Client that acts for the library;
// hitch.Scope.Sessions one that acts for a principal, inside its tenant
// and with its role checked. The types are hitchtype's.
package sessions

import (
	"context"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/session"
	"github.com/hitch-dev/hitch/store"
)

// Client opens sessions and sends, queues and reads their messages.
type Client interface {
	// Open creates a session of agent, or returns the existing session
	// with o.ID; created is false when it existed. The agent must be
	// registered with the runtime (hitch.Config.Agents). An existing
	// session of another agent or version is refused with ErrAgent. A
	// Scope's o.ID is its tenant's own, and an id another tenant uses is
	// as free as any; its o.Tenant may only name the scope's tenant (any,
	// for hitch.AllTenants).
	Open(ctx context.Context, agent Agent, o Options) (s Session, created bool, err error)
	// Get returns a session as it stands.
	Get(ctx context.Context, sessionID string) (Session, error)
	// List lists sessions in the order of their stored ids, after the
	// cursor p.After (the next of the previous page), at most p.Limit;
	// next is empty after a page that is not full.
	List(ctx context.Context, p ListParams) (page []Session, next string, err error)
	// Send admits a user message to a session. When it returns without
	// error the message is durable; it is worked exactly once, in
	// admission order (ModeQueue), joins the active submission at its
	// next model-turn boundary (ModeSteer; queued if the submission ends
	// first, a normal send into an idle session), or interrupts the
	// active submission and runs next (ModeInterrupt). An idle session
	// starts the message at once.
	Send(ctx context.Context, sessionID, text string, o SendOptions) (SendResult, error)
	// Interrupt interrupts a session's active submission, if any: a
	// durable cancel of its run with reason interrupted; the submission
	// ends aborted and the next queued message starts.
	Interrupt(ctx context.Context, sessionID string) error
	// Queue lists a session's queued messages in the order they will
	// start (interrupts first, then by admission), at most limit (0: 100).
	Queue(ctx context.Context, sessionID string, limit int) ([]QueuedMessage, error)
	// Edit replaces the text of a queued message; it keeps its place. A
	// message that has started (or steered, or was removed) is refused
	// with a *MessageStateError.
	Edit(ctx context.Context, sessionID, messageID, text string) error
	// Remove takes a queued message out of the queue. A message that has
	// started is refused with a *MessageStateError.
	Remove(ctx context.Context, sessionID, messageID string) error
	// Journal returns a session's journal entries after position after,
	// at most limit (0: store.DefaultReadLimit).
	Journal(ctx context.Context, sessionID string, after int64, limit int) ([]Entry, error)
	// Status returns a session's state, folded from its journal.
	Status(ctx context.Context, sessionID string) (Status, error)
	// Await waits, bounded by ctx, until a session is at rest: nothing
	// active and nothing queued, or its active submission's run parked
	// waiting (for an approval, say). It moves the session on itself
	// where it can, so it never waits on a node that died.
	Await(ctx context.Context, sessionID string) (Status, error)
	// Cost sums what a session has cost so far: the family of every
	// submission's run, the one at work included.
	Cost(ctx context.Context, sessionID string) (hitchtype.RunningCost, error)
}

// Agent names the agent a session is opened with: a *hitch.Agent.
type Agent interface {
	Name() string
	Version() int
}

// The types of sessions.
type (
	// Config configures the sessions of a runtime (hitch.Config.Sessions).
	Config = hitchtype.SessionConfig
	// Options configure Open.
	Options = hitchtype.SessionOptions
	// Session is a session as the store holds it.
	Session = hitchtype.Session
	// ListParams filter and page List.
	ListParams = hitchtype.SessionsParams
	// Mode says how a sent message joins a session: ModeQueue (default),
	// ModeSteer or ModeInterrupt.
	Mode = hitchtype.SendMode
	// SendOptions configure Send.
	SendOptions = hitchtype.SendOptions
	// SendResult tells what Send did.
	SendResult = hitchtype.SendResult
	// QueuedMessage is a message waiting to start.
	QueuedMessage = hitchtype.QueuedMessage
	// Entry is one entry of a session's journal.
	Entry = store.SessionEntry
	// Submission is one submission of a session: a message and the run
	// that worked it.
	Submission = hitchtype.Submission
	// Status is a session's state: its row, queue, submissions and usage.
	Status = hitchtype.SessionStatus
	// MessageStateError refuses an edit or removal of a message that is
	// no longer queued: it started, steered a submission, or was removed.
	MessageStateError = store.MessageStateError
)

// Send modes.
const (
	ModeQueue     = hitchtype.ModeQueue
	ModeSteer     = hitchtype.ModeSteer
	ModeInterrupt = hitchtype.ModeInterrupt
)

// Errors of sessions.
var (
	// ErrNotFound: no session has that id.
	ErrNotFound = store.ErrSessionNotFound
	// ErrMessageNotFound: the session has no message with that id.
	ErrMessageNotFound = store.ErrMessageNotFound
	// ErrNoSessions: the store does not implement store.SessionStore.
	ErrNoSessions = session.ErrNoSessions
	// ErrMessageTooLarge: a message's text is over Config.MaxMessageBytes.
	ErrMessageTooLarge = session.ErrMessageTooLarge
	// ErrAgent: the session exists under another agent or version.
	ErrAgent = session.ErrSessionAgent
	// ErrTenant: the session exists under another tenant.
	ErrTenant = session.ErrSessionTenant
	// ErrBadID: an id outside the allowed characters or length.
	ErrBadID = hitchtype.ErrBadSessionID
)
