// Package session runs the sessions of a node: named conversations whose
// messages are admitted durably to the session's own journal and worked
// one submission at a time, each submission a run that starts from the
// session's transcript.
//
// A Service answers the session commands and, while started, moves a
// session on in the background when the run of its submission ends. Its
// Sweeper is a background service that moves on every session that needs
// it — a submission whose end no node recorded, an idle session with a
// queued message — so no session waits on a node that died.
package session

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/internal/startstop"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/store"
)

// Errors of sessions.
var (
	// ErrNoSessions: the store does not implement store.SessionStore.
	ErrNoSessions = errors.New("the store does not keep sessions")
	// ErrMessageTooLarge: a message's text is over
	// hitchtype.SessionConfig.MaxMessageBytes.
	ErrMessageTooLarge = errors.New("message too large")
	// ErrSessionAgent: the session exists under another agent or version.
	ErrSessionAgent = errors.New("session belongs to another agent")
	// ErrSessionTenant: the session exists under another tenant.
	ErrSessionTenant = errors.New("session belongs to another tenant")
)

// Store is what sessions need of a store: the sessions themselves, and the
// runs of their submissions.
type Store interface {
	store.SessionStore
	RunGet(ctx context.Context, id string) (store.Run, error)
	JournalRead(ctx context.Context, p store.JournalReadParams) ([]store.Entry, error)
}

// Engine is what sessions need of the node's engine: to cancel a run (an
// interrupt), to drive a submission's run, to wait for one, and its one
// redaction point, which every session journal append and a session's
// metadata pass.
type Engine interface {
	Cancel(ctx context.Context, p store.RunRequestCancelParams, wait time.Duration) (store.Run, error)
	Drive(ctx context.Context, runID string) error
	Await(ctx context.Context, runID string) (store.Run, error)
	Redact(data []byte) []byte
	AppendSession(ctx context.Context, ss store.SessionStore, p store.SessionAppendParams) (store.SessionAppendResult, error)
}

// Config configures a Service; the runtime fills it from its own Config.
type Config struct {
	// Store keeps the sessions; nil when the runtime's store keeps none,
	// and then every method answers ErrNoSessions.
	Store Store
	// Engine drives the submissions' runs. It may be set after New,
	// before the service starts.
	Engine Engine
	// Sessions are the bounds of messages, defaults filled in.
	Sessions hitchtype.SessionConfig
	// Agent finds a registered agent by name and version.
	Agent func(name string, version int) (*engine.Agent, bool)
}

// Service answers the session commands and moves sessions on.
type Service struct {
	cfg Config
	// ctx ends when the service stops; wg counts the background work that
	// moves sessions on after a run's end.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex // guards started against wg.Add
	// started is true between Start and Stop.
	started bool
}

// New returns a stopped Service.
func New(cfg Config) *Service { return &Service{cfg: cfg} }

// SetEngine gives the service the engine it drives runs with, once the
// engine exists (it is built after the service, whose hook it calls).
func (s *Service) SetEngine(e Engine) { s.cfg.Engine = e }

func (s *Service) store(op string) (Store, error) {
	if s.cfg.Store == nil {
		return nil, fmt.Errorf("%s: %w", op, ErrNoSessions)
	}
	return s.cfg.Store, nil
}

// Start lets the service move a session on in the background when the run
// of its submission ends (see OnCommit), until ctx ends or Stop.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("start sessions: already started")
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.started = true
	return nil
}

// Stop ends the background work of sessions and waits for it, bounded by
// ctx. A session it leaves midway is moved on by a sweeper.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	if !s.started {
		s.mu.Unlock()
		return nil
	}
	s.started = false
	s.cancel()
	s.mu.Unlock()
	return startstop.Wait(ctx, &s.wg)
}

// OnCommit is the engine's commit hook: when a session's run ends, the
// session moves on in the background. Other runs' ends cost nothing: their
// ids tell them apart without a read.
func (s *Service) OnCommit(runID string, es []store.Entry) {
	if s.cfg.Store == nil || !strings.HasPrefix(runID, submissionPrefix) || !slices.ContainsFunc(es, func(e store.Entry) bool {
		return e.Kind == hitchtype.KindRunEnded
	}) {
		return // a commit can carry no entries at all (a status change)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx := s.ctx
		first, err := s.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: runID, Limit: 1})
		if err != nil || len(first) == 0 {
			return
		}
		var rs hitchtype.RunStarted
		if json.Unmarshal(first[0].Data, &rs) != nil || rs.Session == "" {
			return
		}
		// On error the session waits for a sweeper (Recover).
		_ = s.advance(ctx, rs.Session)
	}()
}

// Open creates a session of agent, or returns the existing session with
// o.ID (created false); see sessions.Client. The agent is registered. stored,
// when set by a tenant's view, is the id the session is stored under: o.ID
// in the tenant's namespace.
func (s *Service) Open(ctx context.Context, agent *engine.Agent, o hitchtype.SessionOptions, stored string) (ses hitchtype.Session, created bool, err error) {
	ss, err := s.store("open session")
	if err != nil {
		return hitchtype.Session{}, false, err
	}
	if o.ID == "" {
		o.ID = hitchtype.NewID("ses_", 10)
	}
	if err := hitchtype.CheckSessionID(o.ID); err != nil {
		return hitchtype.Session{}, false, fmt.Errorf("open session: SessionOptions.ID: %w", err)
	}
	if stored != "" {
		o.ID = stored
	}
	if o.Tenant == "" {
		o.Tenant = hitchtype.DefaultTenant
	}
	if err := hitchtype.CheckTenant(o.Tenant); err != nil {
		return hitchtype.Session{}, false, fmt.Errorf("open session: SessionOptions.Tenant: %w", err)
	}
	var meta json.RawMessage
	if o.Metadata != nil {
		if meta, err = json.Marshal(o.Metadata); err != nil {
			return hitchtype.Session{}, false, fmt.Errorf("open session: SessionOptions.Metadata: %w", err)
		}
		meta = s.cfg.Engine.Redact(meta)
	}
	row, created, err := ss.SessionCreate(ctx, store.SessionCreateParams{ID: o.ID, Tenant: o.Tenant, Agent: agent.Name,
		Version: agent.Version, Metadata: meta})
	if err != nil {
		return hitchtype.Session{}, false, fmt.Errorf("open session: %w", err)
	}
	if row.Tenant != o.Tenant {
		return hitchtype.Session{}, false, fmt.Errorf("open session %s: %w: it belongs to tenant %s", o.ID, ErrSessionTenant, row.Tenant)
	}
	if row.Agent != agent.Name || row.Version != agent.Version {
		return hitchtype.Session{}, false, fmt.Errorf("open session %s: %w: it belongs to %s version %d", o.ID, ErrSessionAgent, row.Agent, row.Version)
	}
	return row, created, nil
}

// Get returns a session as it stands.
func (s *Service) Get(ctx context.Context, sessionID string) (hitchtype.Session, error) {
	ss, err := s.store("get session")
	if err != nil {
		return hitchtype.Session{}, err
	}
	row, err := ss.SessionGet(ctx, sessionID)
	if err != nil {
		return hitchtype.Session{}, fmt.Errorf("get session: %w", err)
	}
	return row, nil
}

// Transcript returns a session and the transcript its next submission
// would start from, as a run of that submission is given it.
func (s *Service) Transcript(ctx context.Context, sessionID string) (hitchtype.Session, []model.Message, error) {
	ss, err := s.store("session transcript")
	if err != nil {
		return hitchtype.Session{}, nil, err
	}
	row, err := ss.SessionGet(ctx, sessionID)
	if err != nil {
		return hitchtype.Session{}, nil, fmt.Errorf("session transcript: %w", err)
	}
	msgs, err := s.transcript(ctx, ss, sessionID)
	if err != nil {
		return hitchtype.Session{}, nil, fmt.Errorf("session transcript of %s: %w", sessionID, err)
	}
	return row, msgs, nil
}

// List lists sessions by id, after the cursor p.After, at most p.Limit.
func (s *Service) List(ctx context.Context, p hitchtype.SessionsParams) ([]hitchtype.Session, error) {
	ss, err := s.store("list sessions")
	if err != nil {
		return nil, err
	}
	list, err := ss.SessionList(ctx, store.SessionListParams{Tenant: p.Tenant, After: p.After, Limit: p.Limit})
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return list, nil
}

// Send admits a user message to a session; see sessions.Client.Send.
func (s *Service) Send(ctx context.Context, sessionID, text string, o hitchtype.SendOptions) (hitchtype.SendResult, error) {
	ss, err := s.store("send")
	if err != nil {
		return hitchtype.SendResult{}, err
	}
	o.Mode = cmp.Or(o.Mode, hitchtype.ModeQueue)
	switch {
	case !o.Mode.Valid():
		return hitchtype.SendResult{}, fmt.Errorf("send to %s: SendOptions.Mode %q: want queue, steer or interrupt", sessionID, o.Mode)
	case text == "":
		return hitchtype.SendResult{}, fmt.Errorf("send to %s: the text is empty", sessionID)
	case len(text) > s.cfg.Sessions.MaxMessageBytes:
		return hitchtype.SendResult{}, fmt.Errorf("send to %s: %w: %d bytes, over Config.Sessions.MaxMessageBytes (%d)",
			sessionID, ErrMessageTooLarge, len(text), s.cfg.Sessions.MaxMessageBytes)
	case len(o.IdempotencyKey) > 256:
		return hitchtype.SendResult{}, fmt.Errorf("send to %s: SendOptions.IdempotencyKey is %d bytes, over 256", sessionID, len(o.IdempotencyKey))
	}
	msg := hitchtype.MessageAdmitted{ID: hitchtype.NewID("msg_", 8), IdempotencyKey: o.IdempotencyKey, Mode: o.Mode, Text: text}
	data, _ := json.Marshal(msg)
	res, err := s.cfg.Engine.AppendSession(ctx, ss, store.SessionAppendParams{SessionID: sessionID, After: store.AnyPosition,
		Kind: hitchtype.KindMessageAdmitted, Data: data, IdempotencyKey: o.IdempotencyKey, KeyTTL: s.cfg.Sessions.IdempotencyTTL})
	if err != nil {
		return hitchtype.SendResult{}, fmt.Errorf("send to %s: %w", sessionID, err)
	}
	if res.Duplicate {
		if err := json.Unmarshal(res.Entry.Data, &msg); err != nil {
			return hitchtype.SendResult{}, fmt.Errorf("send to %s: decode the first admission: %w", sessionID, err)
		}
	}
	out := hitchtype.SendResult{MessageID: msg.ID, Position: res.Entry.Pos, Mode: msg.Mode, Duplicate: res.Duplicate}
	if msg.Mode == hitchtype.ModeInterrupt && res.Session.ActiveRun != "" {
		if err := s.interruptFor(ctx, ss, res.Session, msg.ID); err != nil {
			return out, fmt.Errorf("send to %s: the message is admitted, the interrupt was not: %w", sessionID, err)
		}
	}
	if res.Session.ActiveRun == "" {
		// Best effort: a sweeper starts it when this does not.
		_ = s.advance(ctx, sessionID)
	}
	return out, nil
}

// interruptFor interrupts the active run of a session for the queued
// message msgID ("" for an interrupt without a message).
func (s *Service) interruptFor(ctx context.Context, ss Store, row store.Session, msgID string) error {
	if msgID != "" {
		// A retried send must not interrupt the submission its own message
		// started: only a message still queued interrupts.
		q, err := ss.SessionMessages(ctx, store.SessionMessagesParams{SessionID: row.ID})
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
	data, _ := json.Marshal(hitchtype.SubmissionInterrupted{RunID: row.ActiveRun, MessageID: msgID})
	_, err := s.cfg.Engine.AppendSession(ctx, ss, store.SessionAppendParams{SessionID: row.ID, After: store.AnyPosition,
		Kind: hitchtype.KindSubmissionInterrupt, Data: data})
	if errors.Is(err, store.ErrConflict) {
		return nil // the submission ended meanwhile
	}
	if err != nil {
		return err
	}
	if _, err := s.cfg.Engine.Cancel(ctx, store.RunRequestCancelParams{ID: row.ActiveRun}, 0); err != nil && !errors.Is(err, store.ErrEnded) {
		return err
	}
	return nil
}

// Interrupt interrupts a session's active submission, if any.
func (s *Service) Interrupt(ctx context.Context, sessionID string) error {
	ss, err := s.store("interrupt")
	if err != nil {
		return err
	}
	row, err := ss.SessionGet(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("interrupt %s: %w", sessionID, err)
	}
	if row.ActiveRun == "" {
		return nil
	}
	if err := s.interruptFor(ctx, ss, row, ""); err != nil {
		return fmt.Errorf("interrupt %s: %w", sessionID, err)
	}
	return nil
}

// Queue lists a session's queued messages in the order they will start,
// at most limit (0: 100).
func (s *Service) Queue(ctx context.Context, sessionID string, limit int) ([]hitchtype.QueuedMessage, error) {
	ss, err := s.store("queue")
	if err != nil {
		return nil, err
	}
	ms, err := ss.SessionMessages(ctx, store.SessionMessagesParams{SessionID: sessionID, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("queue of %s: %w", sessionID, err)
	}
	out := make([]hitchtype.QueuedMessage, len(ms))
	for i, m := range ms {
		out[i] = hitchtype.QueuedMessage{ID: m.ID, Position: m.Pos, Mode: m.Mode, Text: m.Text}
	}
	return out, nil
}

// Edit replaces the text of a queued message; it keeps its place.
func (s *Service) Edit(ctx context.Context, sessionID, messageID, text string) error {
	ss, err := s.store("edit")
	if err != nil {
		return err
	}
	switch {
	case text == "":
		return fmt.Errorf("edit %s in %s: the text is empty", messageID, sessionID)
	case len(text) > s.cfg.Sessions.MaxMessageBytes:
		return fmt.Errorf("edit %s in %s: %w: %d bytes, over Config.Sessions.MaxMessageBytes (%d)",
			messageID, sessionID, ErrMessageTooLarge, len(text), s.cfg.Sessions.MaxMessageBytes)
	}
	data, _ := json.Marshal(hitchtype.MessageEdited{ID: messageID, Text: text})
	if _, err := s.cfg.Engine.AppendSession(ctx, ss, store.SessionAppendParams{SessionID: sessionID, After: store.AnyPosition,
		Kind: hitchtype.KindMessageEdited, Data: data}); err != nil {
		return fmt.Errorf("edit %s in %s: %w", messageID, sessionID, err)
	}
	return nil
}

// Remove takes a queued message out of the queue.
func (s *Service) Remove(ctx context.Context, sessionID, messageID string) error {
	ss, err := s.store("remove")
	if err != nil {
		return err
	}
	data, _ := json.Marshal(hitchtype.MessageRemoved{ID: messageID})
	if _, err := s.cfg.Engine.AppendSession(ctx, ss, store.SessionAppendParams{SessionID: sessionID, After: store.AnyPosition,
		Kind: hitchtype.KindMessageRemoved, Data: data}); err != nil {
		return fmt.Errorf("remove %s from %s: %w", messageID, sessionID, err)
	}
	return nil
}

// Journal returns a session's journal entries after position after, at
// most limit (0: store.DefaultReadLimit).
func (s *Service) Journal(ctx context.Context, sessionID string, after int64, limit int) ([]store.SessionEntry, error) {
	ss, err := s.store("session journal")
	if err != nil {
		return nil, err
	}
	es, err := ss.SessionRead(ctx, store.SessionReadParams{SessionID: sessionID, After: after, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("session journal of %s: %w", sessionID, err)
	}
	return es, nil
}

// Status returns a session's state, folded from its journal.
func (s *Service) Status(ctx context.Context, sessionID string) (hitchtype.SessionStatus, error) {
	ss, err := s.store("session status")
	if err != nil {
		return hitchtype.SessionStatus{}, err
	}
	row, err := ss.SessionGet(ctx, sessionID)
	if err != nil {
		return hitchtype.SessionStatus{}, fmt.Errorf("session status: %w", err)
	}
	q, err := s.Queue(ctx, sessionID, 0)
	if err != nil {
		return hitchtype.SessionStatus{}, err
	}
	f, err := foldSession(ctx, ss, sessionID)
	if err != nil {
		return hitchtype.SessionStatus{}, fmt.Errorf("session status of %s: %w", sessionID, err)
	}
	out := hitchtype.SessionStatus{Session: row, Queue: q}
	var usages []hitchtype.Usage
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
func sumUsage(us []hitchtype.Usage) hitchtype.Usage {
	var out hitchtype.Usage
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

// Await waits, bounded by ctx, until a session is at rest; see
// sessions.Client.Await.
func (s *Service) Await(ctx context.Context, sessionID string) (hitchtype.SessionStatus, error) {
	ss, err := s.store("await session")
	if err != nil {
		return hitchtype.SessionStatus{}, err
	}
	for {
		row, err := ss.SessionGet(ctx, sessionID)
		if err != nil {
			return hitchtype.SessionStatus{}, fmt.Errorf("await session: %w", err)
		}
		switch {
		case row.ActiveRun != "":
			run, err := s.cfg.Engine.Await(ctx, row.ActiveRun)
			if err != nil {
				return hitchtype.SessionStatus{}, fmt.Errorf("await session %s: %w", sessionID, err)
			}
			if !run.Status.Terminal() {
				return s.Status(ctx, sessionID)
			}
		case row.Queued == 0:
			return s.Status(ctx, sessionID)
		}
		if err := s.advance(ctx, sessionID); err != nil {
			return hitchtype.SessionStatus{}, fmt.Errorf("await session %s: %w", sessionID, err)
		}
	}
}

// Recover moves on every session that needs it: a submission whose run
// ended but whose end is not recorded (its node died), or an idle session
// with a queued message. It returns how many it looked at.
func (s *Service) Recover(ctx context.Context) (int, error) {
	ss, err := s.store("recover sessions")
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
		for _, row := range page {
			n++
			if err := s.advance(ctx, row.ID); err != nil {
				errs = append(errs, fmt.Errorf("session %s: %w", row.ID, err))
			}
		}
		if len(page) < 100 || len(errs) > 16 {
			return n, errors.Join(errs...)
		}
		after = page[len(page)-1].ID
	}
}
