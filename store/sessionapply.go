package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
)

// SessionTx is one driver transaction that holds a session's row (locked,
// or on the single writer): the statements of the driver's dialect and
// nothing else. InSession's Append, Start and End make the checks and
// decisions of the session state machine over it, so every driver decides
// them the same way.
type SessionTx interface {
	// Message reads one message of the session, or ErrMessageNotFound.
	Message(id string) (SessionMessage, error)
	// NextQueued returns the id of the queued message that starts next
	// (interrupts first, then by admission), or "" when none is queued.
	NextQueued() (string, error)
	// Keyed returns the entry an idempotency key admitted; ok is false
	// when the key is not remembered or has expired by the store clock.
	Keyed(key string) (e SessionEntry, ok bool, err error)
	// Remember keeps key, which admitted the entry at pos, for ttl by the
	// store clock, and forgets at most a bounded number of expired keys.
	Remember(key string, pos int64, ttl time.Duration) error
	// InsertMessage adds m to the session's messages.
	InsertMessage(m SessionMessage) error
	// UpdateMessage writes m's state, text, run and version.
	UpdateMessage(m SessionMessage) error
	// SetActive sets the session's active run, or clears it with "".
	SetActive(runID string) error
	// CreateRun creates a submission's run, as RunCreate would; a run
	// with its id is ErrConflict.
	CreateRun(p RunCreateParams) (Run, error)
	// Append writes an entry at position pos of the session's journal and
	// sets the session's length to pos, its queued count moved by queued;
	// it returns the entry, stamped by the store clock.
	Append(pos int64, kind string, data json.RawMessage, queued int) (SessionEntry, error)
}

// InSession is a driver's way into a session: it runs fn in one
// transaction that holds session id's row, with the session as it stands
// (ErrSessionNotFound when there is none), and commits when fn returns nil.
type InSession func(ctx context.Context, id string, fn func(tx SessionTx, s Session) error) error

// Append makes a SessionAppend (see SessionStore).
func (in InSession) Append(ctx context.Context, p SessionAppendParams) (SessionAppendResult, error) {
	ref, err := CheckSessionAppend(p)
	if err != nil {
		return SessionAppendResult{}, fmt.Errorf("session append %q: %w", p.SessionID, err)
	}
	var res SessionAppendResult
	err = in(ctx, p.SessionID, func(tx SessionTx, s Session) (err error) {
		res, err = applyAppend(tx, s, p, ref)
		return err
	})
	if err != nil {
		return SessionAppendResult{}, fmt.Errorf("session append %q: %w", p.SessionID, err)
	}
	return res, nil
}

// Start makes a SessionStart (see SessionStore).
func (in InSession) Start(ctx context.Context, p SessionStartParams) (Session, Run, error) {
	if err := CheckSessionStart(&p); err != nil {
		return Session{}, Run{}, fmt.Errorf("session start %q: %w", p.SessionID, err)
	}
	var (
		sess Session
		run  Run
	)
	err := in(ctx, p.SessionID, func(tx SessionTx, s Session) (err error) {
		sess, run, err = applyStart(tx, s, p)
		return err
	})
	if err != nil {
		return Session{}, Run{}, fmt.Errorf("session start %q: %w", p.SessionID, err)
	}
	return sess, run, nil
}

// End makes a SessionEnd (see SessionStore).
func (in InSession) End(ctx context.Context, p SessionEndParams) (Session, bool, error) {
	if err := CheckSessionEnd(p); err != nil {
		return Session{}, false, fmt.Errorf("session end %q: %w", p.SessionID, err)
	}
	var (
		sess  Session
		ended bool
	)
	err := in(ctx, p.SessionID, func(tx SessionTx, s Session) (err error) {
		sess, ended, err = applyEnd(tx, s, p)
		return err
	})
	if err != nil {
		return Session{}, false, fmt.Errorf("session end %q: %w", p.SessionID, err)
	}
	return sess, ended, nil
}

// appendTo appends an entry to s's journal through tx and keeps s as the
// store has it.
func appendTo(tx SessionTx, s *Session, kind string, data json.RawMessage, queued int) (SessionEntry, error) {
	e, err := tx.Append(s.Position+1, kind, data, queued)
	if err != nil {
		return SessionEntry{}, err
	}
	s.Position, s.Queued, s.UpdatedAt = e.Pos, s.Queued+queued, e.At
	return e, nil
}

// queuedMessage reads a message that must still be queued.
func queuedMessage(tx SessionTx, id string) (SessionMessage, error) {
	m, err := tx.Message(id)
	if err != nil {
		return m, err
	}
	if m.State != hitchtype.StateQueued {
		return m, &MessageStateError{MessageID: m.ID, State: m.State, RunID: m.RunID}
	}
	return m, nil
}

// applyAppend makes a SessionAppend in tx, for the session s as tx read
// it; ref is what CheckSessionAppend read of p's data.
func applyAppend(tx SessionTx, s Session, p SessionAppendParams, ref MessageRef) (SessionAppendResult, error) {
	if p.After >= 0 && p.After != s.Position {
		return SessionAppendResult{}, fmt.Errorf("%w (after %d, journal length %d)", ErrConflict, p.After, s.Position)
	}
	pos, queued := s.Position+1, 0
	switch p.Kind {
	case hitchtype.KindSubmissionInterrupt:
		if ref.RunID != s.ActiveRun {
			return SessionAppendResult{}, fmt.Errorf("%w: run %s is not the active submission's run (%q)", ErrConflict, ref.RunID, s.ActiveRun)
		}
	case hitchtype.KindMessageAdmitted:
		if p.IdempotencyKey != "" {
			first, ok, err := tx.Keyed(p.IdempotencyKey)
			if err != nil || ok {
				return SessionAppendResult{Session: s, Entry: first, Duplicate: ok}, err
			}
		}
		if _, err := tx.Message(ref.ID); err == nil {
			return SessionAppendResult{}, fmt.Errorf("%w: message id %s is taken", ErrConflict, ref.ID)
		} else if !errors.Is(err, ErrMessageNotFound) {
			return SessionAppendResult{}, err
		}
		m := SessionMessage{ID: ref.ID, Pos: pos, Mode: ref.Mode, Text: ref.Text, State: hitchtype.StateQueued, Version: pos}
		if err := tx.InsertMessage(m); err != nil {
			return SessionAppendResult{}, fmt.Errorf("insert message: %w", err)
		}
		queued = 1
		if p.IdempotencyKey != "" {
			if err := tx.Remember(p.IdempotencyKey, pos, p.KeyTTL); err != nil {
				return SessionAppendResult{}, err
			}
		}
	default:
		m, err := queuedMessage(tx, ref.ID)
		if err != nil {
			return SessionAppendResult{}, err
		}
		switch p.Kind {
		case hitchtype.KindMessageEdited:
			m.Text = ref.Text
		case hitchtype.KindMessageRemoved:
			m.State, queued = hitchtype.StateRemoved, -1
		case hitchtype.KindMessageJoined:
			m.State, m.RunID, queued = hitchtype.StateJoined, ref.RunID, -1
		}
		m.Version = pos
		if err := tx.UpdateMessage(m); err != nil {
			return SessionAppendResult{}, err
		}
	}
	e, err := appendTo(tx, &s, p.Kind, p.Data, queued)
	if err != nil {
		return SessionAppendResult{}, err
	}
	return SessionAppendResult{Session: s, Entry: e}, nil
}

// applyStart makes a SessionStart in tx, for the session s as tx read it,
// once CheckSessionStart has passed p. It returns the session as it now
// stands and the submission's run.
func applyStart(tx SessionTx, s Session, p SessionStartParams) (Session, Run, error) {
	if s.ActiveRun != "" {
		return Session{}, Run{}, &SessionBusyError{SessionID: s.ID, ActiveRun: s.ActiveRun}
	}
	m, err := queuedMessage(tx, p.MessageID)
	if err != nil {
		return Session{}, Run{}, err
	}
	if m.Version != p.MessageVersion {
		return Session{}, Run{}, fmt.Errorf("%w: message %s changed at position %d, after %d", ErrConflict, m.ID, m.Version, p.MessageVersion)
	}
	next, err := tx.NextQueued()
	if err != nil {
		return Session{}, Run{}, err
	}
	if next != m.ID {
		return Session{}, Run{}, fmt.Errorf("%w: message %s is not next to start; %s is", ErrConflict, m.ID, next)
	}
	if p.Run.Tenant, err = ResolveTenant(p.Run.Tenant, s.Tenant); err != nil {
		return Session{}, Run{}, err
	}
	run, err := tx.CreateRun(p.Run)
	if err != nil {
		return Session{}, Run{}, err
	}
	m.State, m.RunID, m.Version = hitchtype.StateStarted, run.ID, s.Position+1
	if err := tx.UpdateMessage(m); err != nil {
		return Session{}, Run{}, err
	}
	if err := tx.SetActive(run.ID); err != nil {
		return Session{}, Run{}, err
	}
	s.ActiveRun = run.ID
	if _, err := appendTo(tx, &s, hitchtype.KindSubmissionStarted, p.Data, -1); err != nil {
		return Session{}, Run{}, err
	}
	return s, run, nil
}

// applyEnd makes a SessionEnd in tx, for the session s as tx read it, once
// CheckSessionEnd has passed p. It returns the session as it now stands,
// and ended=false, having written nothing, when p.RunID is not the
// session's active run.
func applyEnd(tx SessionTx, s Session, p SessionEndParams) (Session, bool, error) {
	if s.ActiveRun != p.RunID {
		return s, false, nil
	}
	for _, id := range p.Joined {
		m, err := queuedMessage(tx, id)
		var state *MessageStateError
		if errors.As(err, &state) {
			continue
		}
		if err != nil {
			return Session{}, false, err
		}
		m.State, m.RunID, m.Version = hitchtype.StateJoined, p.RunID, s.Position+1
		if err := tx.UpdateMessage(m); err != nil {
			return Session{}, false, err
		}
		data, _ := json.Marshal(hitchtype.MessageJoined{ID: id, RunID: p.RunID})
		if _, err := appendTo(tx, &s, hitchtype.KindMessageJoined, data, -1); err != nil {
			return Session{}, false, err
		}
	}
	if err := tx.SetActive(""); err != nil {
		return Session{}, false, err
	}
	s.ActiveRun = ""
	if _, err := appendTo(tx, &s, hitchtype.KindSubmissionEnded, p.Data, 0); err != nil {
		return Session{}, false, err
	}
	return s, true, nil
}

// CreateSession is a driver's SessionCreate statement, once
// CheckSessionCreate has passed p: it inserts the session, or reads the
// one that holds p.ID, with created false.
type CreateSession func(ctx context.Context, p SessionCreateParams) (s Session, created bool, err error)

// Create makes a SessionCreate (see SessionStore).
func (create CreateSession) Create(ctx context.Context, p SessionCreateParams) (Session, bool, error) {
	if err := CheckSessionCreate(&p); err != nil {
		return Session{}, false, fmt.Errorf("session create %q: %w", p.ID, err)
	}
	s, created, err := create(ctx, p)
	if err != nil {
		return Session{}, false, fmt.Errorf("session create %q: %w", p.ID, err)
	}
	return s, created, nil
}

// CheckSessionCreate checks a SessionCreate's parameters and fills its
// defaults: Metadata {} and the default tenant.
func CheckSessionCreate(p *SessionCreateParams) error {
	if len(p.Metadata) == 0 {
		p.Metadata = json.RawMessage(`{}`)
	}
	if p.Tenant == "" {
		p.Tenant = hitchtype.DefaultTenant
	}
	if err := errors.Join(CheckName("id", p.ID, true), CheckName("agent", p.Agent, true),
		CheckTenant("tenant", p.Tenant, true)); err != nil {
		return err
	}
	switch {
	case p.Version < 0:
		return fmt.Errorf("version %d is negative", p.Version)
	case len(p.Metadata) > MaxEntryBytes:
		return fmt.Errorf("metadata is %d bytes, more than %d", len(p.Metadata), MaxEntryBytes)
	case !IsObject(p.Metadata):
		return errors.New("metadata is not a JSON object")
	}
	return nil
}

// CheckSessionStart checks a SessionStart's parameters, filling its run's
// as CheckCreate does.
func CheckSessionStart(p *SessionStartParams) error {
	if err := CheckCreate(&p.Run); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if err := CheckName("message id", p.MessageID, true); err != nil {
		return err
	}
	return checkEntryData(p.Data)
}

// CheckSessionEnd checks a SessionEnd's parameters.
func CheckSessionEnd(p SessionEndParams) error {
	if err := errors.Join(CheckName("session id", p.SessionID, true), CheckName("run id", p.RunID, true)); err != nil {
		return err
	}
	if len(p.Joined) > MaxListLimit {
		return fmt.Errorf("joined has %d messages, more than %d", len(p.Joined), MaxListLimit)
	}
	return checkEntryData(p.Data)
}

// checkEntryData checks an entry's data a driver is given whole.
func checkEntryData(data json.RawMessage) error {
	if !json.Valid(data) || len(data) > MaxEntryBytes {
		return fmt.Errorf("data is not valid JSON of at most %d bytes", MaxEntryBytes)
	}
	return nil
}

// CheckPage checks a page's limit and returns it: 0 means DefaultListLimit.
func CheckPage(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultListLimit, nil
	case limit < 0 || limit > MaxListLimit:
		return 0, fmt.Errorf("limit %d is outside 0..%d", limit, MaxListLimit)
	}
	return limit, nil
}

// CheckSessionList checks a SessionList's parameters and returns its
// limit.
func CheckSessionList(p SessionListParams) (int, error) {
	limit, err := CheckPage(p.Limit)
	if err != nil {
		return 0, err
	}
	return limit, CheckTenant("tenant", p.Tenant, false)
}
