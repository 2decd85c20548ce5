package hitch

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/store"
)

// SessionConfig configures the sessions of a Runtime.
type SessionConfig struct {
	// MaxMessageBytes bounds the text of one message. Default 256 KiB;
	// 1 B to 16 MiB.
	MaxMessageBytes int
	// IdempotencyTTL is how long a send's idempotency key is remembered.
	// Default 24h; 1s to 30 days.
	IdempotencyTTL time.Duration
}

func (c SessionConfig) withDefaults() SessionConfig {
	c.MaxMessageBytes = cmp.Or(c.MaxMessageBytes, hitchtype.DefaultMaxMessageBytes)
	c.IdempotencyTTL = cmp.Or(c.IdempotencyTTL, hitchtype.DefaultIdempotencyTTL)
	return c
}

func (c SessionConfig) validate() error {
	var errs []error
	if c.MaxMessageBytes < 1 || c.MaxMessageBytes > 16<<20 {
		errs = append(errs, fmt.Errorf("out of range: Config.Sessions.MaxMessageBytes is %d, want 1 to %d", c.MaxMessageBytes, 16<<20))
	}
	if c.IdempotencyTTL < time.Second || c.IdempotencyTTL > 30*24*time.Hour {
		errs = append(errs, fmt.Errorf("out of range: Config.Sessions.IdempotencyTTL is %s, want 1s to 720h", c.IdempotencyTTL))
	}
	return errors.Join(errs...)
}

// Session errors.
var (
	// ErrSessionNotFound: no session has that id.
	ErrSessionNotFound = store.ErrSessionNotFound
	// ErrMessageNotFound: the session has no message with that id.
	ErrMessageNotFound = store.ErrMessageNotFound
	// ErrNoSessions: the store does not implement store.SessionStore.
	ErrNoSessions = errors.New("the store does not keep sessions")
	// ErrMessageTooLarge: a message's text is over
	// SessionConfig.MaxMessageBytes.
	ErrMessageTooLarge = errors.New("message too large")
	// ErrSessionAgent: the session exists under another agent or version.
	ErrSessionAgent = errors.New("session belongs to another agent")
	// ErrSessionTenant: the session exists under another tenant.
	ErrSessionTenant = errors.New("session belongs to another tenant")
	// ErrBadSessionID: an id outside the allowed characters or length.
	ErrBadSessionID = errors.New("bad session id")
)

// MessageStateError refuses an edit or removal of a message that is no
// longer queued: it started, steered a submission, or was removed.
type MessageStateError = store.MessageStateError

// SendMode says how a sent message joins a session: ModeQueue (default),
// ModeSteer or ModeInterrupt.
type SendMode = hitchtype.SendMode

// Send modes.
const (
	ModeQueue     = hitchtype.ModeQueue
	ModeSteer     = hitchtype.ModeSteer
	ModeInterrupt = hitchtype.ModeInterrupt
)

// SessionOptions configure OpenSession.
type SessionOptions struct {
	// ID names the session; opening an existing id returns it. Default: a
	// fresh random id. Letters, digits and . _ : -, at most 128 bytes.
	ID string
	// Tenant owns the session and the runs of its submissions (see
	// hitchtype.CheckTenant). Default: hitchtype.DefaultTenant. Opening an
	// existing session of another tenant is refused with ErrSessionTenant.
	Tenant string
	// Metadata is stored with a new session, as a JSON object.
	Metadata map[string]any

	// stored, set by a Scope, is the id the session is stored under: ID
	// in the tenant's namespace.
	stored string
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

func sessionOf(s store.Session) Session {
	return Session{ID: s.ID, Tenant: s.Tenant, Agent: s.Agent, Version: s.Version, Metadata: s.Metadata, ActiveRun: s.ActiveRun,
		Position: s.Position, Queued: s.Queued, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

// sessions is the runtime's session machinery.
type sessions struct {
	cfg SessionConfig
	// ctx ends when the runtime closes; wg counts the background work
	// that starts next submissions.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex // guards closed against wg.Add
	closed bool
}

func (rt *Runtime) sessionStore(op string) (store.SessionStore, error) {
	ss, ok := rt.cfg.Store.(store.SessionStore)
	if !ok {
		return nil, fmt.Errorf("%s: %w", op, ErrNoSessions)
	}
	return ss, nil
}

func checkSessionID(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("%w: %.40q is %d bytes long: want 1 to 128", ErrBadSessionID, id, len(id))
	}
	if id == "." || id == ".." {
		return fmt.Errorf("%w: %q is a path's dot segment, which a URL cannot carry", ErrBadSessionID, id)
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return fmt.Errorf("%w: %.40q has %q at byte %d: want letters, digits and . _ : -", ErrBadSessionID, id, c, i)
		}
	}
	return nil
}

// OpenSession creates a session of agent, or returns the existing session
// with o.ID. An existing session of another agent or version is refused
// with ErrSessionAgent.
func (rt *Runtime) OpenSession(ctx context.Context, agent *Agent, o SessionOptions) (Session, error) {
	ss, err := rt.sessionStore("open session")
	if err != nil {
		return Session{}, err
	}
	if agent == nil {
		return Session{}, errors.New("open session: agent is nil")
	}
	if _, ok := rt.agents[agentKey(agent.Name(), agent.Version())]; !ok {
		return Session{}, fmt.Errorf("open session: %w: %s version %d (add it to Config.Agents)", ErrUnknownAgent, agent.Name(), agent.Version())
	}
	if o.ID == "" {
		o.ID = "ses_" + randomID(10)
	}
	if err := checkSessionID(o.ID); err != nil {
		return Session{}, fmt.Errorf("open session: SessionOptions.ID: %w", err)
	}
	if o.stored != "" {
		o.ID = o.stored
	}
	if o.Tenant == "" {
		o.Tenant = hitchtype.DefaultTenant
	}
	if err := hitchtype.CheckTenant(o.Tenant); err != nil {
		return Session{}, fmt.Errorf("open session: SessionOptions.Tenant: %w", err)
	}
	var meta json.RawMessage
	if o.Metadata != nil {
		if meta, err = json.Marshal(o.Metadata); err != nil {
			return Session{}, fmt.Errorf("open session: SessionOptions.Metadata: %w", err)
		}
		meta = rt.eng.Redact(meta)
	}
	s, _, err := ss.SessionCreate(ctx, store.SessionCreateParams{ID: o.ID, Tenant: o.Tenant, Agent: agent.Name(),
		Version: agent.Version(), Metadata: meta})
	if err != nil {
		return Session{}, fmt.Errorf("open session: %w", err)
	}
	if s.Tenant != o.Tenant {
		return Session{}, fmt.Errorf("open session %s: %w: it belongs to tenant %s", o.ID, ErrSessionTenant, s.Tenant)
	}
	if s.Agent != agent.Name() || s.Version != agent.Version() {
		return Session{}, fmt.Errorf("open session %s: %w: it belongs to %s version %d", o.ID, ErrSessionAgent, s.Agent, s.Version)
	}
	return sessionOf(s), nil
}

// GetSession returns a session as it stands.
func (rt *Runtime) GetSession(ctx context.Context, sessionID string) (Session, error) {
	ss, err := rt.sessionStore("get session")
	if err != nil {
		return Session{}, err
	}
	s, err := ss.SessionGet(ctx, sessionID)
	if err != nil {
		return Session{}, fmt.Errorf("get session: %w", err)
	}
	return sessionOf(s), nil
}

// SessionsParams filter and page Sessions.
type SessionsParams struct {
	// Tenant keeps one tenant's sessions; empty means every tenant.
	Tenant string
	// After is a cursor: the id of the last session of the previous page.
	After string
	// Limit bounds the page: 0 means DefaultPageLimit (100), at most
	// MaxPageLimit (1000).
	Limit int
}

// Sessions lists sessions by id, after the cursor p.After, at most p.Limit.
func (rt *Runtime) Sessions(ctx context.Context, p SessionsParams) ([]Session, error) {
	ss, err := rt.sessionStore("list sessions")
	if err != nil {
		return nil, err
	}
	list, err := ss.SessionList(ctx, store.SessionListParams{Tenant: p.Tenant, After: p.After, Limit: p.Limit})
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out := make([]Session, len(list))
	for i, s := range list {
		out[i] = sessionOf(s)
	}
	return out, nil
}

// SendOptions configure Send.
type SendOptions struct {
	// IdempotencyKey makes a retried send admit the message once: the same
	// key within SessionConfig.IdempotencyTTL returns the first admission.
	IdempotencyKey string
	// Mode is ModeQueue (default), ModeSteer or ModeInterrupt.
	Mode SendMode
}

// SendResult tells what Send did.
type SendResult struct {
	MessageID string
	// Position is the message's admission position in the session.
	Position int64
	Mode     SendMode
	// Duplicate is set when the idempotency key matched an earlier send:
	// nothing new was admitted, and MessageID is the first admission's.
	Duplicate bool
}

// Send admits a user message to a session. When it returns without error
// the message is durable; it is worked exactly once, in admission order
// (ModeQueue), joins the active submission at its next model-turn boundary
// (ModeSteer; queued if the submission ends first, a normal send into an
// idle session), or interrupts the active submission and runs next
// (ModeInterrupt). An idle session starts the message at once.
func (rt *Runtime) Send(ctx context.Context, sessionID, text string, o SendOptions) (SendResult, error) {
	ss, err := rt.sessionStore("send")
	if err != nil {
		return SendResult{}, err
	}
	o.Mode = cmp.Or(o.Mode, ModeQueue)
	switch {
	case !o.Mode.Valid():
		return SendResult{}, fmt.Errorf("send to %s: SendOptions.Mode %q: want queue, steer or interrupt", sessionID, o.Mode)
	case text == "":
		return SendResult{}, fmt.Errorf("send to %s: the text is empty", sessionID)
	case len(text) > rt.sess.cfg.MaxMessageBytes:
		return SendResult{}, fmt.Errorf("send to %s: %w: %d bytes, over Config.Sessions.MaxMessageBytes (%d)",
			sessionID, ErrMessageTooLarge, len(text), rt.sess.cfg.MaxMessageBytes)
	case len(o.IdempotencyKey) > 256:
		return SendResult{}, fmt.Errorf("send to %s: SendOptions.IdempotencyKey is %d bytes, over 256", sessionID, len(o.IdempotencyKey))
	}
	msg := hitchtype.MessageAdmitted{ID: "msg_" + randomID(8), IdempotencyKey: o.IdempotencyKey, Mode: o.Mode, Text: text}
	data, _ := json.Marshal(msg)
	res, err := rt.eng.AppendSession(ctx, ss, store.SessionAppendParams{SessionID: sessionID, After: store.AnyPosition,
		Kind: hitchtype.KindMessageAdmitted, Data: data, IdempotencyKey: o.IdempotencyKey, KeyTTL: rt.sess.cfg.IdempotencyTTL})
	if err != nil {
		return SendResult{}, fmt.Errorf("send to %s: %w", sessionID, err)
	}
	if res.Duplicate {
		if err := json.Unmarshal(res.Entry.Data, &msg); err != nil {
			return SendResult{}, fmt.Errorf("send to %s: decode the first admission: %w", sessionID, err)
		}
	}
	out := SendResult{MessageID: msg.ID, Position: res.Entry.Pos, Mode: msg.Mode, Duplicate: res.Duplicate}
	if msg.Mode == ModeInterrupt && res.Session.ActiveRun != "" {
		if err := rt.interruptFor(ctx, ss, res.Session, msg.ID); err != nil {
			return out, fmt.Errorf("send to %s: the message is admitted, the interrupt was not: %w", sessionID, err)
		}
	}
	if res.Session.ActiveRun == "" {
		// Best effort: a sweeper starts it when this does not.
		_ = rt.advance(ctx, sessionID)
	}
	return out, nil
}

// interruptFor interrupts the active run of s for the queued message msgID
// ("" for an interrupt without a message).
func (rt *Runtime) interruptFor(ctx context.Context, ss store.SessionStore, s store.Session, msgID string) error {
	if msgID != "" {
		// A retried send must not interrupt the submission its own message
		// started: only a message still queued interrupts.
		q, err := ss.SessionMessages(ctx, store.SessionMessagesParams{SessionID: s.ID})
		if err != nil {
			return err
		}
		queued := false
		for _, m := range q {
			queued = queued || m.ID == msgID
		}
		if !queued {
			return nil
		}
	}
	data, _ := json.Marshal(hitchtype.SubmissionInterrupted{RunID: s.ActiveRun, MessageID: msgID})
	_, err := rt.eng.AppendSession(ctx, ss, store.SessionAppendParams{SessionID: s.ID, After: store.AnyPosition,
		Kind: hitchtype.KindSubmissionInterrupt, Data: data})
	if errors.Is(err, store.ErrConflict) {
		return nil // the submission ended meanwhile
	}
	if err != nil {
		return err
	}
	if _, err := rt.eng.Cancel(ctx, store.RunRequestCancelParams{ID: s.ActiveRun}, 0); err != nil && !errors.Is(err, store.ErrEnded) {
		return err
	}
	return nil
}

// Interrupt interrupts a session's active submission, if any: a durable
// cancel of its run with reason interrupted; the submission ends aborted and
// the next queued message starts.
func (rt *Runtime) Interrupt(ctx context.Context, sessionID string) error {
	ss, err := rt.sessionStore("interrupt")
	if err != nil {
		return err
	}
	s, err := ss.SessionGet(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("interrupt %s: %w", sessionID, err)
	}
	if s.ActiveRun == "" {
		return nil
	}
	if err := rt.interruptFor(ctx, ss, s, ""); err != nil {
		return fmt.Errorf("interrupt %s: %w", sessionID, err)
	}
	return nil
}

// QueuedMessage is a message waiting to start.
type QueuedMessage struct {
	ID       string
	Position int64
	Mode     SendMode
	Text     string
}

// Queue lists a session's queued messages in the order they will start
// (interrupts first, then by admission), at most limit (0: 100).
func (rt *Runtime) Queue(ctx context.Context, sessionID string, limit int) ([]QueuedMessage, error) {
	ss, err := rt.sessionStore("queue")
	if err != nil {
		return nil, err
	}
	ms, err := ss.SessionMessages(ctx, store.SessionMessagesParams{SessionID: sessionID, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("queue of %s: %w", sessionID, err)
	}
	out := make([]QueuedMessage, len(ms))
	for i, m := range ms {
		out[i] = QueuedMessage{ID: m.ID, Position: m.Pos, Mode: m.Mode, Text: m.Text}
	}
	return out, nil
}

// Edit replaces the text of a queued message; it keeps its place. A
// message that has started (or steered, or was removed) is refused with a
// *MessageStateError.
func (rt *Runtime) Edit(ctx context.Context, sessionID, messageID, text string) error {
	ss, err := rt.sessionStore("edit")
	if err != nil {
		return err
	}
	switch {
	case text == "":
		return fmt.Errorf("edit %s in %s: the text is empty", messageID, sessionID)
	case len(text) > rt.sess.cfg.MaxMessageBytes:
		return fmt.Errorf("edit %s in %s: %w: %d bytes, over Config.Sessions.MaxMessageBytes (%d)",
			messageID, sessionID, ErrMessageTooLarge, len(text), rt.sess.cfg.MaxMessageBytes)
	}
	data, _ := json.Marshal(hitchtype.MessageEdited{ID: messageID, Text: text})
	if _, err := rt.eng.AppendSession(ctx, ss, store.SessionAppendParams{SessionID: sessionID, After: store.AnyPosition,
		Kind: hitchtype.KindMessageEdited, Data: data}); err != nil {
		return fmt.Errorf("edit %s in %s: %w", messageID, sessionID, err)
	}
	return nil
}

// Remove takes a queued message out of the queue. A message that has
// started is refused with a *MessageStateError.
func (rt *Runtime) Remove(ctx context.Context, sessionID, messageID string) error {
	ss, err := rt.sessionStore("remove")
	if err != nil {
		return err
	}
	data, _ := json.Marshal(hitchtype.MessageRemoved{ID: messageID})
	if _, err := rt.eng.AppendSession(ctx, ss, store.SessionAppendParams{SessionID: sessionID, After: store.AnyPosition,
		Kind: hitchtype.KindMessageRemoved, Data: data}); err != nil {
		return fmt.Errorf("remove %s from %s: %w", messageID, sessionID, err)
	}
	return nil
}

// SessionEntry is one entry of a session's journal.
type SessionEntry = store.SessionEntry

// SessionJournal returns a session's journal entries after position after,
// at most limit (0: store.DefaultReadLimit).
func (rt *Runtime) SessionJournal(ctx context.Context, sessionID string, after int64, limit int) ([]SessionEntry, error) {
	ss, err := rt.sessionStore("session journal")
	if err != nil {
		return nil, err
	}
	es, err := ss.SessionRead(ctx, store.SessionReadParams{SessionID: sessionID, After: after, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("session journal of %s: %w", sessionID, err)
	}
	return es, nil
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
	Outcome hitchtype.SubmissionOutcome
	Status  hitchtype.Status
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

// SessionStatus returns a session's state, folded from its journal.
func (rt *Runtime) SessionStatus(ctx context.Context, sessionID string) (SessionStatus, error) {
	ss, err := rt.sessionStore("session status")
	if err != nil {
		return SessionStatus{}, err
	}
	s, err := ss.SessionGet(ctx, sessionID)
	if err != nil {
		return SessionStatus{}, fmt.Errorf("session status: %w", err)
	}
	q, err := rt.Queue(ctx, sessionID, 0)
	if err != nil {
		return SessionStatus{}, err
	}
	f, err := foldSession(ctx, ss, sessionID)
	if err != nil {
		return SessionStatus{}, fmt.Errorf("session status of %s: %w", sessionID, err)
	}
	out := SessionStatus{Session: sessionOf(s), Queue: q}
	var usages []Usage
	cost, costKnown := 0.0, true
	for _, sub := range f.subs {
		out.Submissions = append(out.Submissions, *sub)
		if sub.Outcome != "" {
			usages = append(usages, *sub.Usage)
			if sub.CostUSD == nil {
				costKnown = false
			} else {
				cost += *sub.CostUSD
			}
		}
	}
	out.Usage = sumUsage(usages)
	if costKnown && len(usages) > 0 {
		out.CostUSD = &cost
	}
	return out, nil
}

// sumUsage adds usages: a counter is nil when any is.
func sumUsage(us []Usage) Usage {
	var out Usage
	first := true
	add := func(total, v *int64) *int64 {
		if v == nil || (total == nil && !first) {
			return nil
		}
		t := *v
		if total != nil {
			t += *total
		}
		return &t
	}
	for _, u := range us {
		if u.Generations == 0 {
			continue
		}
		out.InputTokens = add(out.InputTokens, u.InputTokens)
		out.OutputTokens = add(out.OutputTokens, u.OutputTokens)
		out.CachedInputTokens = add(out.CachedInputTokens, u.CachedInputTokens)
		out.Generations += u.Generations
		first = false
	}
	return out
}

// sessionFold is a session's journal folded.
type sessionFold struct {
	subs  []*Submission
	text  map[string]string // message → latest text
	byRun map[string]*Submission
	// history holds, by run, what a compacting submission's run left
	// for later submissions to start from (SubmissionEnded.History).
	history map[string][]model.Message
}

func foldSession(ctx context.Context, ss store.SessionStore, sessionID string) (*sessionFold, error) {
	f := &sessionFold{text: map[string]string{}, byRun: map[string]*Submission{}, history: map[string][]model.Message{}}
	after := int64(0)
	for {
		page, err := ss.SessionRead(ctx, store.SessionReadParams{SessionID: sessionID, After: after, Limit: store.DefaultReadLimit})
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			if err := f.apply(e); err != nil {
				return nil, err
			}
		}
		if len(page) < store.DefaultReadLimit {
			return f, nil
		}
		after = page[len(page)-1].Pos
	}
}

func (f *sessionFold) apply(e store.SessionEntry) error {
	decode := func(v any) error {
		if err := json.Unmarshal(e.Data, v); err != nil {
			return fmt.Errorf("session entry %d (%s): %w", e.Pos, e.Kind, err)
		}
		return nil
	}
	switch e.Kind {
	case hitchtype.KindMessageAdmitted:
		var m hitchtype.MessageAdmitted
		if err := decode(&m); err != nil {
			return err
		}
		f.text[m.ID] = m.Text
	case hitchtype.KindMessageEdited:
		var m hitchtype.MessageEdited
		if err := decode(&m); err != nil {
			return err
		}
		f.text[m.ID] = m.Text
	case hitchtype.KindMessageJoined:
		var m hitchtype.MessageJoined
		if err := decode(&m); err != nil {
			return err
		}
		if sub := f.byRun[m.RunID]; sub != nil {
			sub.Joined = append(sub.Joined, m.ID)
		}
	case hitchtype.KindSubmissionStarted:
		var m hitchtype.SubmissionStarted
		if err := decode(&m); err != nil {
			return err
		}
		sub := &Submission{MessageID: m.MessageID, RunID: m.RunID, Text: m.Text, Status: hitchtype.StatusRunning}
		f.subs = append(f.subs, sub)
		f.byRun[m.RunID] = sub
	case hitchtype.KindSubmissionEnded:
		var m hitchtype.SubmissionEnded
		if err := decode(&m); err != nil {
			return err
		}
		if sub := f.byRun[m.RunID]; sub != nil {
			u := m.Usage
			sub.Outcome, sub.Status, sub.Reason, sub.Answer, sub.Error = m.Outcome, m.Status, m.Reason, m.Answer, m.Error
			sub.Usage, sub.CostUSD = &u, m.CostUSD
			if m.History != nil {
				f.history[m.RunID] = m.History
			}
		}
	}
	return nil
}

// submissionRunID names the run of a message's submission. It is the same
// on every node, so the run is one run whoever starts it.
func submissionRunID(sessionID, messageID string) string {
	h := sha256.Sum256([]byte(sessionID + "\x00" + messageID))
	return "sub_" + hex.EncodeToString(h[:12])
}

// advance moves a session on: it ends the active submission when its run
// has ended, and starts the next queued message when none is active. Any
// node may call it at any time; the store keeps one submission active and
// ends each once.
func (rt *Runtime) advance(ctx context.Context, sessionID string) error {
	ss, err := rt.sessionStore("advance session")
	if err != nil {
		return err
	}
	for range 16 {
		s, err := ss.SessionGet(ctx, sessionID)
		if err != nil {
			return err
		}
		if s.ActiveRun != "" {
			run, err := rt.cfg.Store.RunGet(ctx, s.ActiveRun)
			if err != nil {
				return fmt.Errorf("run of session %s: %w", sessionID, err)
			}
			if !run.Status.Terminal() {
				if run.CancelRequested {
					return nil
				}
				return rt.reapplyInterrupt(ctx, ss, s.ID, run.ID)
			}
			if err := rt.endSubmission(ctx, ss, s, run); err != nil {
				return err
			}
			continue
		}
		if s.Queued == 0 {
			return nil
		}
		started, err := rt.startNext(ctx, ss, s)
		if err != nil || started {
			return err
		}
	}
	return fmt.Errorf("advance session %s: it kept changing under this node; a sweeper tries again", sessionID)
}

// reapplyInterrupt cancels the session's active run when the session
// journal holds an interrupt of it: the process that journaled the
// interrupt may have died before it cancelled the run. It reads the
// session's entries from the run's message on.
func (rt *Runtime) reapplyInterrupt(ctx context.Context, ss store.SessionStore, sessionID, runID string) error {
	first, err := rt.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: runID, Limit: 1})
	if err != nil || len(first) == 0 {
		return err
	}
	var rs hitchtype.RunStarted
	if err := json.Unmarshal(first[0].Data, &rs); err != nil {
		return fmt.Errorf("run %s: %w", runID, err)
	}
	for after := max(rs.SessionPos-1, 0); ; {
		page, err := ss.SessionRead(ctx, store.SessionReadParams{SessionID: sessionID, After: after, Limit: store.DefaultReadLimit})
		if err != nil {
			return err
		}
		for _, e := range page {
			if e.Kind != hitchtype.KindSubmissionInterrupt {
				continue
			}
			var m hitchtype.SubmissionInterrupted
			if json.Unmarshal(e.Data, &m) == nil && m.RunID == runID {
				if _, err := rt.eng.Cancel(ctx, store.RunRequestCancelParams{ID: runID}, 0); err != nil && !errors.Is(err, store.ErrEnded) {
					return fmt.Errorf("interrupt %s: %w", runID, err)
				}
				return nil
			}
		}
		if len(page) < store.DefaultReadLimit {
			return nil
		}
		after = page[len(page)-1].Pos
	}
}

// endSubmission records the end of the submission worked by run.
func (rt *Runtime) endSubmission(ctx context.Context, ss store.SessionStore, s store.Session, run store.Run) error {
	entries, err := readRun(ctx, rt.cfg.Store, run.ID)
	if err != nil {
		return err
	}
	_, joined, err := engine.SubmissionTranscript(entries)
	if err != nil {
		return fmt.Errorf("fold run %s: %w", run.ID, err)
	}
	var started hitchtype.RunStarted
	if err := json.Unmarshal(entries[0].Data, &started); err != nil {
		return fmt.Errorf("run %s: %w", run.ID, err)
	}
	r, err := RunOf(run)
	if err != nil {
		return err
	}
	end := hitchtype.SubmissionEnded{MessageID: started.SessionMessage, RunID: run.ID, Status: run.Status}
	switch {
	case run.Status == hitchtype.StatusCompleted:
		end.Outcome = hitchtype.SubmissionCompleted
	case run.Status == hitchtype.StatusCancelled:
		end.Outcome = hitchtype.SubmissionAborted
	default:
		end.Outcome = hitchtype.SubmissionFailed
	}
	if o := r.Outcome; o != nil {
		end.Reason, end.Answer, end.Error, end.Usage, end.CostUSD = o.Reason, o.Answer, o.Error, o.Usage, o.CostUSD
	}
	if h, ok, err := engine.CompactedHistory(entries); err != nil {
		return fmt.Errorf("fold run %s: %w", run.ID, err)
	} else if ok {
		end.History = h
	}
	data, _ := json.Marshal(end)
	if _, _, err := ss.SessionEnd(ctx, store.SessionEndParams{SessionID: s.ID, RunID: run.ID, Joined: joined, Data: data}); err != nil {
		return err
	}
	return nil
}

// startNext starts the first queued message of s as a submission. started
// is false when the session changed meanwhile (try again).
func (rt *Runtime) startNext(ctx context.Context, ss store.SessionStore, s store.Session) (started bool, err error) {
	a, ok := rt.agents[agentKey(s.Agent, s.Version)]
	if !ok {
		return false, fmt.Errorf("session %s: %w: %s version %d", s.ID, ErrUnknownAgent, s.Agent, s.Version)
	}
	q, err := ss.SessionMessages(ctx, store.SessionMessagesParams{SessionID: s.ID, Limit: 1})
	if err != nil || len(q) == 0 {
		return false, err
	}
	m := q[0]
	history, err := rt.transcript(ctx, ss, s.ID)
	if err != nil {
		return false, fmt.Errorf("transcript of %s: %w", s.ID, err)
	}
	runID := submissionRunID(s.ID, m.ID)
	rs := hitchtype.RunStarted{Agent: a.Name(), Version: a.Version(), Input: m.Text, DepthLeft: a.eng.Limits.MaxDepth,
		Session: s.ID, SessionMessage: m.ID, SessionPos: m.Pos, History: history}
	first, err := json.Marshal(rs)
	if err != nil {
		return false, err
	}
	data, _ := json.Marshal(hitchtype.SubmissionStarted{MessageID: m.ID, RunID: runID, Text: m.Text})
	_, run, err := ss.SessionStart(ctx, store.SessionStartParams{SessionID: s.ID, MessageID: m.ID, MessageVersion: m.Version,
		Data: data, Run: store.RunCreateParams{ID: runID, Tenant: s.Tenant, Agent: a.Name(), Version: a.Version(), Budget: a.eng.Budget,
			InputHash: engine.InputHash(a.Name(), a.Version(), m.Text),
			Entries:   []store.EntryInput{{Kind: hitchtype.KindRunStarted, Data: first}}, Title: m.Text}})
	var busy *store.SessionBusyError
	var mse *store.MessageStateError
	switch {
	case errors.As(err, &busy):
		return true, nil // another node started one
	case errors.As(err, &mse), errors.Is(err, store.ErrConflict):
		return false, nil
	case err != nil:
		return false, err
	}
	if err := rt.eng.Drive(ctx, run.ID); err != nil && !errors.As(err, new(*store.LeaseHeldError)) {
		// The run is queued in the store; any worker claims it.
		return true, nil
	}
	return true, nil
}

// transcript is the history a new submission starts from: for each ended
// submission, its message, the messages that steered it, and its answer; an
// aborted submission contributes its replies and their results (a call left
// without one gets a synthetic "cancelled" result), then any message joined
// to it that no request of its run carried.
func (rt *Runtime) transcript(ctx context.Context, ss store.SessionStore, sessionID string) ([]model.Message, error) {
	f, err := foldSession(ctx, ss, sessionID)
	if err != nil {
		return nil, err
	}
	var msgs []model.Message
	for _, sub := range f.subs {
		if sub.Outcome == "" {
			continue
		}
		if h, ok := f.history[sub.RunID]; ok {
			// Its run summarized what came before it: start from that.
			msgs = append(msgs[:0:0], h...)
		}
		msgs = append(msgs, model.Message{Role: model.RoleUser, Text: sub.Text})
		if sub.Outcome == hitchtype.SubmissionAborted {
			entries, err := readRun(ctx, rt.cfg.Store, sub.RunID)
			if err != nil {
				return nil, err
			}
			work, steered, err := engine.SubmissionTranscript(entries)
			if err != nil {
				return nil, fmt.Errorf("fold run %s: %w", sub.RunID, err)
			}
			msgs = append(msgs, work...)
			// A message joined to the run whose session.steered never
			// reached its journal (the runner died, then the run was
			// interrupted before another boundary) follows the work.
			for _, id := range sub.Joined {
				if !slices.Contains(steered, id) {
					msgs = append(msgs, model.Message{Role: model.RoleUser, Text: f.text[id]})
				}
			}
			continue
		}
		for _, id := range sub.Joined {
			msgs = append(msgs, model.Message{Role: model.RoleUser, Text: f.text[id]})
		}
		answer := sub.Answer
		if sub.Outcome == hitchtype.SubmissionFailed {
			answer = "(this request ended without an answer: " + cmp.Or(sub.Error, string(sub.Status)) + ")"
		}
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Text: answer})
	}
	return msgs, nil
}

// readRun reads a run's whole journal in bounded pages.
func readRun(ctx context.Context, s store.Store, runID string) ([]store.Entry, error) {
	var all []store.Entry
	after := int64(0)
	for {
		page, err := s.JournalRead(ctx, store.JournalReadParams{RunID: runID, After: after, Limit: store.DefaultReadLimit})
		if err != nil {
			return nil, fmt.Errorf("read journal of %s: %w", runID, err)
		}
		all = append(all, page...)
		if len(page) < store.DefaultReadLimit {
			if len(all) == 0 {
				return nil, fmt.Errorf("read journal of %s: it is empty", runID)
			}
			return all, nil
		}
		after = page[len(page)-1].Pos
	}
}

// RecoverSessions moves on every session that needs it: a submission whose
// run ended but whose end is not recorded (its node died), or an idle
// session with a queued message. It returns how many it looked at. A
// sweeper calls it; so may anyone, at any time.
func (rt *Runtime) RecoverSessions(ctx context.Context) (int, error) {
	ss, err := rt.sessionStore("recover sessions")
	if err != nil {
		return 0, err
	}
	n, after := 0, ""
	var errs []error
	for {
		page, err := ss.SessionList(ctx, store.SessionListParams{After: after, Limit: 100, NeedsWork: true})
		if err != nil {
			return n, fmt.Errorf("recover sessions: %w", err)
		}
		for _, s := range page {
			n++
			if err := rt.advance(ctx, s.ID); err != nil {
				errs = append(errs, fmt.Errorf("session %s: %w", s.ID, err))
			}
		}
		if len(page) < 100 || len(errs) > 16 {
			return n, errors.Join(errs...)
		}
		after = page[len(page)-1].ID
	}
}

// watchSessions wraps a commit hook: when a session's run ends, the
// session moves on in the background.
func (rt *Runtime) watchSessions(next func(string, []store.Entry)) func(string, []store.Entry) {
	return func(runID string, es []store.Entry) {
		if next != nil {
			next(runID, es)
		}
		if _, ok := rt.cfg.Store.(store.SessionStore); !ok || !slices.ContainsFunc(es, func(e store.Entry) bool {
			return e.Kind == hitchtype.KindRunEnded
		}) {
			return // a commit can carry no entries at all (a status change)
		}
		rt.sess.mu.Lock()
		defer rt.sess.mu.Unlock()
		if rt.sess.closed {
			return
		}
		rt.sess.wg.Add(1)
		go func() {
			defer rt.sess.wg.Done()
			ctx := rt.sess.ctx
			first, err := rt.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: runID, Limit: 1})
			if err != nil || len(first) == 0 {
				return
			}
			var rs hitchtype.RunStarted
			if json.Unmarshal(first[0].Data, &rs) != nil || rs.Session == "" {
				return
			}
			// On error the session waits for a sweeper (RecoverSessions).
			_ = rt.advance(ctx, rs.Session)
		}()
	}
}

// openSessions sets the session machinery up while the runtime opens.
func (rt *Runtime) openSessions(ecfg *engine.Config) error {
	rt.sess.cfg = rt.cfg.Sessions.withDefaults()
	if err := rt.sess.cfg.validate(); err != nil {
		return err
	}
	rt.sess.ctx, rt.sess.cancel = context.WithCancel(context.Background())
	ecfg.OnCommit = rt.watchSessions(ecfg.OnCommit)
	return nil
}

// closeSessions stops the background work of sessions, bounded by ctx.
func (rt *Runtime) closeSessions(ctx context.Context) error {
	rt.sess.mu.Lock()
	rt.sess.closed = true
	rt.sess.mu.Unlock()
	rt.sess.cancel()
	done := make(chan struct{})
	go func() { rt.sess.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AwaitSession waits, bounded by ctx, until a session is at rest: nothing
// active and nothing queued, or its active submission's run parked waiting
// (for an approval, say). It moves the session on itself where it can, so
// it never waits on a node that died.
func (rt *Runtime) AwaitSession(ctx context.Context, sessionID string) (SessionStatus, error) {
	ss, err := rt.sessionStore("await session")
	if err != nil {
		return SessionStatus{}, err
	}
	for {
		s, err := ss.SessionGet(ctx, sessionID)
		if err != nil {
			return SessionStatus{}, fmt.Errorf("await session: %w", err)
		}
		switch {
		case s.ActiveRun != "":
			run, err := rt.eng.Await(ctx, s.ActiveRun)
			if err != nil {
				return SessionStatus{}, fmt.Errorf("await session %s: %w", sessionID, err)
			}
			if !run.Status.Terminal() {
				return rt.SessionStatus(ctx, sessionID)
			}
		case s.Queued == 0:
			return rt.SessionStatus(ctx, sessionID)
		}
		if err := rt.advance(ctx, sessionID); err != nil {
			return SessionStatus{}, fmt.Errorf("await session %s: %w", sessionID, err)
		}
	}
}

// sweepSessions calls RecoverSessions every interval until the returned
// stop is called; a failure is tried again at the next tick. It does
// nothing on a store without sessions.
func (rt *Runtime) sweepSessions(ctx context.Context, every time.Duration) (stop func()) {
	if _, ok := rt.cfg.Store.(store.SessionStore); !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			_, _ = rt.RecoverSessions(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}
