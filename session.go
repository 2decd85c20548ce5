package hitch

import (
	"context"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/session"
	"github.com/hitch-dev/hitch/store"
)

// Session errors.
var (
	// ErrSessionNotFound: no session has that id.
	ErrSessionNotFound = store.ErrSessionNotFound
	// ErrMessageNotFound: the session has no message with that id.
	ErrMessageNotFound = store.ErrMessageNotFound
	// ErrNoSessions: the store does not implement store.SessionStore.
	ErrNoSessions = session.ErrNoSessions
	// ErrMessageTooLarge: a message's text is over
	// SessionConfig.MaxMessageBytes.
	ErrMessageTooLarge = session.ErrMessageTooLarge
	// ErrSessionAgent: the session exists under another agent or version.
	ErrSessionAgent = session.ErrSessionAgent
	// ErrSessionTenant: the session exists under another tenant.
	ErrSessionTenant = session.ErrSessionTenant
	// ErrBadSessionID: an id outside the allowed characters or length.
	ErrBadSessionID = hitchtype.ErrBadSessionID
)

// Sessions: the types are hitchtype's.
type (
	// MessageStateError refuses an edit or removal of a message that is
	// no longer queued: it started, steered a submission, or was removed.
	MessageStateError = store.MessageStateError
	// SendMode says how a sent message joins a session: ModeQueue
	// (default), ModeSteer or ModeInterrupt.
	SendMode = hitchtype.SendMode
	// SessionOptions configure OpenSession.
	SessionOptions = hitchtype.SessionOptions
	// Session is a session as the store holds it.
	Session = hitchtype.Session
	// SessionsParams filter and page Sessions.
	SessionsParams = hitchtype.SessionsParams
	// SendOptions configure Send.
	SendOptions = hitchtype.SendOptions
	// SendResult tells what Send did.
	SendResult = hitchtype.SendResult
	// QueuedMessage is a message waiting to start.
	QueuedMessage = hitchtype.QueuedMessage
	// SessionEntry is one entry of a session's journal.
	SessionEntry = store.SessionEntry
	// Submission is one submission of a session: a message and the run
	// that worked it.
	Submission = hitchtype.Submission
	// SessionStatus is a session's state: its row, queue, submissions and
	// usage.
	SessionStatus = hitchtype.SessionStatus
)

// Send modes.
const (
	ModeQueue     = hitchtype.ModeQueue
	ModeSteer     = hitchtype.ModeSteer
	ModeInterrupt = hitchtype.ModeInterrupt
)

// OpenSession creates a session of agent, or returns the existing session
// with o.ID. An existing session of another agent or version is refused
// with ErrSessionAgent.
func (rt *Runtime) OpenSession(ctx context.Context, agent *Agent, o SessionOptions) (Session, error) {
	return rt.n.OpenSession(ctx, agent.engine(), o, "")
}

// GetSession returns a session as it stands.
func (rt *Runtime) GetSession(ctx context.Context, sessionID string) (Session, error) {
	return rt.n.Sess.Get(ctx, sessionID)
}

// Sessions lists sessions by id, after the cursor p.After, at most p.Limit.
func (rt *Runtime) Sessions(ctx context.Context, p SessionsParams) ([]Session, error) {
	return rt.n.Sess.List(ctx, p)
}

// Send admits a user message to a session. When it returns without error
// the message is durable; it is worked exactly once, in admission order
// (ModeQueue), joins the active submission at its next model-turn boundary
// (ModeSteer; queued if the submission ends first, a normal send into an
// idle session), or interrupts the active submission and runs next
// (ModeInterrupt). An idle session starts the message at once.
func (rt *Runtime) Send(ctx context.Context, sessionID, text string, o SendOptions) (SendResult, error) {
	return rt.n.Sess.Send(ctx, sessionID, text, o)
}

// Interrupt interrupts a session's active submission, if any: a durable
// cancel of its run with reason interrupted; the submission ends aborted and
// the next queued message starts.
func (rt *Runtime) Interrupt(ctx context.Context, sessionID string) error {
	return rt.n.Sess.Interrupt(ctx, sessionID)
}

// Queue lists a session's queued messages in the order they will start
// (interrupts first, then by admission), at most limit (0: 100).
func (rt *Runtime) Queue(ctx context.Context, sessionID string, limit int) ([]QueuedMessage, error) {
	return rt.n.Sess.Queue(ctx, sessionID, limit)
}

// Edit replaces the text of a queued message; it keeps its place. A
// message that has started (or steered, or was removed) is refused with a
// *MessageStateError.
func (rt *Runtime) Edit(ctx context.Context, sessionID, messageID, text string) error {
	return rt.n.Sess.Edit(ctx, sessionID, messageID, text)
}

// Remove takes a queued message out of the queue. A message that has
// started is refused with a *MessageStateError.
func (rt *Runtime) Remove(ctx context.Context, sessionID, messageID string) error {
	return rt.n.Sess.Remove(ctx, sessionID, messageID)
}

// SessionJournal returns a session's journal entries after position after,
// at most limit (0: store.DefaultReadLimit).
func (rt *Runtime) SessionJournal(ctx context.Context, sessionID string, after int64, limit int) ([]SessionEntry, error) {
	return rt.n.Sess.Journal(ctx, sessionID, after, limit)
}

// SessionStatus returns a session's state, folded from its journal.
func (rt *Runtime) SessionStatus(ctx context.Context, sessionID string) (SessionStatus, error) {
	return rt.n.Sess.Status(ctx, sessionID)
}

// RecoverSessions moves on every session that needs it: a submission whose
// run ended but whose end is not recorded (its node died), or an idle
// session with a queued message. It returns how many it looked at. A
// sweeper calls it; so may anyone, at any time.
func (rt *Runtime) RecoverSessions(ctx context.Context) (int, error) { return rt.n.Sess.Recover(ctx) }

// AwaitSession waits, bounded by ctx, until a session is at rest: nothing
// active and nothing queued, or its active submission's run parked waiting
// (for an approval, say). It moves the session on itself where it can, so
// it never waits on a node that died.
func (rt *Runtime) AwaitSession(ctx context.Context, sessionID string) (SessionStatus, error) {
	return rt.n.Sess.Await(ctx, sessionID)
}
