package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

var _ store.SessionStore = (*Store)(nil)

// MaxKeysSwept bounds the expired idempotency keys one keyed admission
// deletes, so forgetting old keys costs every admission a little and none
// of them much.
const MaxKeysSwept = 64

const sessionColumns = `seq, id, agent, version, metadata, active_run, position, queued, created_at, updated_at, tenant`

type sessionRow struct {
	seq int64
	s   store.Session
}

func scanSession(sc scanner) (sessionRow, error) {
	var (
		r        sessionRow
		meta     string
		cre, upd int64
	)
	err := sc.Scan(&r.seq, &r.s.ID, &r.s.Agent, &r.s.Version, &meta, &r.s.ActiveRun, &r.s.Position,
		&r.s.Queued, &cre, &upd, &r.s.Tenant)
	if err != nil {
		return sessionRow{}, err
	}
	r.s.Metadata = json.RawMessage(meta)
	r.s.CreatedAt, r.s.UpdatedAt = fromMicros(cre), fromMicros(upd)
	return r, nil
}

// sx runs statements inside the writer's transaction, on the writer's
// connection. Only apply functions (on the writer goroutine) use it.
type sx struct {
	c   *sql.Conn
	now int64
}

func (s *Store) sx(tx *wtx) sx { return sx{c: s.wconn, now: micros(tx.now)} }

func (x sx) exec(q string, args ...any) (sql.Result, error) {
	return x.c.ExecContext(context.Background(), q, args...)
}

func (x sx) row(q string, args ...any) *sql.Row {
	return x.c.QueryRowContext(context.Background(), q, args...)
}

func (x sx) session(id string) (sessionRow, error) {
	r, err := scanSession(x.row(`SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return sessionRow{}, store.ErrSessionNotFound
	}
	return r, err
}

func (x sx) message(seq int64, id string) (store.SessionMessage, error) {
	m, err := scanMessage(x.row(`SELECT `+messageColumns+` FROM session_messages WHERE session_seq = ? AND id = ?`, seq, id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("%w: %s", store.ErrMessageNotFound, id)
	}
	return m, err
}

// appendEntry writes one entry at the session's next position and moves
// the length and the queued count; it returns the entry.
func (x sx) appendEntry(r *sessionRow, kind string, data json.RawMessage, queued int) (store.SessionEntry, error) {
	pos := r.s.Position + 1
	if _, err := x.exec(`INSERT INTO session_journal (session_seq, pos, kind, at, data) VALUES (?, ?, ?, ?, ?)`,
		r.seq, pos, kind, x.now, string(data)); err != nil {
		return store.SessionEntry{}, fmt.Errorf("insert entry %d: %w", pos, err)
	}
	if _, err := x.exec(`UPDATE sessions SET position = ?, queued = queued + ?, updated_at = ? WHERE seq = ?`,
		pos, queued, x.now, r.seq); err != nil {
		return store.SessionEntry{}, err
	}
	r.s.Position, r.s.Queued, r.s.UpdatedAt = pos, r.s.Queued+queued, fromMicros(x.now)
	return store.SessionEntry{SessionID: r.s.ID, Pos: pos, Kind: kind, At: fromMicros(x.now), Data: data}, nil
}

// SessionCreate creates a session, or returns the existing one.
func (s *Store) SessionCreate(ctx context.Context, p store.SessionCreateParams) (store.Session, bool, error) {
	if len(p.Metadata) == 0 {
		p.Metadata = json.RawMessage(`{}`)
	}
	if p.Tenant == "" {
		p.Tenant = hitchtype.DefaultTenant
	}
	if err := errors.Join(store.CheckName("id", p.ID, true), store.CheckName("agent", p.Agent, true),
		store.CheckTenant("tenant", p.Tenant, true)); err != nil {
		return store.Session{}, false, fmt.Errorf("session create %q: %w", p.ID, err)
	}
	switch {
	case p.Version < 0:
		return store.Session{}, false, fmt.Errorf("session create %q: version %d is negative", p.ID, p.Version)
	case len(p.Metadata) > MaxEntryBytes:
		return store.Session{}, false, fmt.Errorf("session create %q: metadata is %d bytes, more than %d", p.ID, len(p.Metadata), MaxEntryBytes)
	case !store.IsObject(p.Metadata):
		return store.Session{}, false, fmt.Errorf("session create %q: metadata is not a JSON object", p.ID)
	}
	var (
		out     store.Session
		created bool
	)
	err := s.write(ctx, func(tx *wtx) error {
		x := s.sx(tx)
		old, err := x.session(p.ID)
		if err == nil {
			out = old.s
			return nil
		}
		if !errors.Is(err, store.ErrSessionNotFound) {
			return err
		}
		r, err := scanSession(x.row(`INSERT INTO sessions (id, agent, version, metadata, created_at, updated_at, tenant)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING `+sessionColumns, p.ID, p.Agent, p.Version, string(p.Metadata), x.now, x.now, p.Tenant))
		if err != nil {
			return err
		}
		out, created = r.s, true
		return nil
	})
	if err != nil {
		return store.Session{}, false, fmt.Errorf("session create %q: %w", p.ID, err)
	}
	return out, created, nil
}

// SessionGet returns one session.
func (s *Store) SessionGet(ctx context.Context, id string) (store.Session, error) {
	if s.closed.Load() {
		return store.Session{}, ErrClosed
	}
	r, err := scanSession(s.rdb.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, fmt.Errorf("session get %q: %w", id, store.ErrSessionNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("session get %q: %w", id, err)
	}
	return r.s, nil
}

// SessionList returns sessions by id after a cursor.
func (s *Store) SessionList(ctx context.Context, p store.SessionListParams) ([]store.Session, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	limit := p.Limit
	switch {
	case limit == 0:
		limit = defaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return nil, fmt.Errorf("session list: limit %d is outside 0..%d", p.Limit, MaxListLimit)
	}
	if err := store.CheckTenant("tenant", p.Tenant, false); err != nil {
		return nil, fmt.Errorf("session list: %w", err)
	}
	q := `SELECT ` + sessionColumns + ` FROM sessions WHERE id > ?1`
	if p.NeedsWork {
		q = `SELECT ` + sessionColumns + ` FROM sessions WHERE id > ?1 AND (active_run <> '' OR queued > 0)
			AND (active_run = '' OR EXISTS (SELECT 1 FROM runs WHERE runs.id = sessions.active_run
				AND runs.status NOT IN ('queued', 'running', 'waiting'))
			OR EXISTS (SELECT 1 FROM runs JOIN session_messages m ON m.session_seq = sessions.seq AND m.run_id = runs.id
				JOIN session_journal j ON j.session_seq = sessions.seq AND j.pos > m.pos
				WHERE runs.id = sessions.active_run AND runs.cancel_requested = 0 AND m.state = 'started'
				  AND j.kind = 'submission.interrupted' AND json_extract(j.data, '$.run_id') = sessions.active_run))`
	}
	args := []any{p.After, limit}
	if p.Tenant != "" {
		q += ` AND tenant = ?3`
		args = append(args, p.Tenant)
	}
	rows, err := s.rdb.QueryContext(ctx, q+` ORDER BY id LIMIT ?2`, args...)
	if err != nil {
		return nil, fmt.Errorf("session list: %w", err)
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		r, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("session list: %w", err)
		}
		out = append(out, r.s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session list: %w", err)
	}
	return out, nil
}

// SessionAppend appends one message entry with its change of state.
func (s *Store) SessionAppend(ctx context.Context, p store.SessionAppendParams) (store.SessionAppendResult, error) {
	ref, err := store.CheckSessionAppend(p)
	if err != nil {
		return store.SessionAppendResult{}, fmt.Errorf("session append %q: %w", p.SessionID, err)
	}
	var res store.SessionAppendResult
	err = s.write(ctx, func(tx *wtx) error {
		x := s.sx(tx)
		r, err := x.session(p.SessionID)
		if err != nil {
			return err
		}
		if p.After >= 0 && p.After != r.s.Position {
			return fmt.Errorf("%w (after %d, journal length %d)", store.ErrConflict, p.After, r.s.Position)
		}
		if p.Kind == hitchtype.KindMessageAdmitted && p.IdempotencyKey != "" {
			first, ok, err := x.keyed(r, p.IdempotencyKey)
			if err != nil || ok {
				res = store.SessionAppendResult{Session: r.s, Entry: first, Duplicate: ok}
				return err
			}
		}
		queued := 0
		switch p.Kind {
		case hitchtype.KindSubmissionInterrupt:
			if ref.RunID != r.s.ActiveRun {
				return fmt.Errorf("%w: run %s is not the active submission's run (%q)", store.ErrConflict, ref.RunID, r.s.ActiveRun)
			}
		case hitchtype.KindMessageAdmitted:
			if _, err := x.message(r.seq, ref.ID); err == nil {
				return fmt.Errorf("%w: message id %s is taken", store.ErrConflict, ref.ID)
			} else if !errors.Is(err, store.ErrMessageNotFound) {
				return err
			}
			if _, err := x.exec(`INSERT INTO session_messages (session_seq, id, pos, mode, text, state, version)
				VALUES (?, ?, ?, ?, ?, 'queued', ?)`, r.seq, ref.ID, r.s.Position+1, string(ref.Mode), ref.Text, r.s.Position+1); err != nil {
				return fmt.Errorf("insert message: %w", err)
			}
			queued = 1
			if p.IdempotencyKey != "" {
				exp := micros(tx.now.Add(p.KeyTTL))
				if _, err := x.exec(`INSERT INTO session_keys (session_seq, key, pos, expires_at) VALUES (?, ?, ?, ?)
					ON CONFLICT (session_seq, key) DO UPDATE SET pos = excluded.pos, expires_at = excluded.expires_at`,
					r.seq, p.IdempotencyKey, r.s.Position+1, exp); err != nil {
					return fmt.Errorf("insert idempotency key: %w", err)
				}
				if _, err := x.exec(`DELETE FROM session_keys WHERE (session_seq, key) IN (
					SELECT session_seq, key FROM session_keys WHERE expires_at <= ? LIMIT ?)`, x.now, MaxKeysSwept); err != nil {
					return fmt.Errorf("forget expired keys: %w", err)
				}
			}
		default:
			m, err := x.message(r.seq, ref.ID)
			if err != nil {
				return err
			}
			if m.State != hitchtype.StateQueued {
				return &store.MessageStateError{MessageID: m.ID, State: m.State, RunID: m.RunID}
			}
			pos := r.s.Position + 1
			switch p.Kind {
			case hitchtype.KindMessageEdited:
				_, err = x.exec(`UPDATE session_messages SET text = ?, version = ? WHERE session_seq = ? AND id = ?`, ref.Text, pos, r.seq, ref.ID)
			case hitchtype.KindMessageRemoved:
				_, err = x.exec(`UPDATE session_messages SET state = 'removed', version = ? WHERE session_seq = ? AND id = ?`, pos, r.seq, ref.ID)
				queued = -1
			case hitchtype.KindMessageJoined:
				_, err = x.exec(`UPDATE session_messages SET state = 'joined', run_id = ?, version = ? WHERE session_seq = ? AND id = ?`, ref.RunID, pos, r.seq, ref.ID)
				queued = -1
			}
			if err != nil {
				return err
			}
		}
		e, err := x.appendEntry(&r, p.Kind, p.Data, queued)
		res = store.SessionAppendResult{Session: r.s, Entry: e}
		return err
	})
	if err != nil {
		return store.SessionAppendResult{}, fmt.Errorf("session append %q: %w", p.SessionID, err)
	}
	return res, nil
}

// keyed looks an idempotency key up: ok when it is remembered, with the
// entry it admitted.
func (x sx) keyed(r sessionRow, key string) (store.SessionEntry, bool, error) {
	var pos int64
	err := x.row(`SELECT pos FROM session_keys WHERE session_seq = ? AND key = ? AND expires_at > ?`, r.seq, key, x.now).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return store.SessionEntry{}, false, nil
	}
	if err != nil {
		return store.SessionEntry{}, false, err
	}
	e := store.SessionEntry{SessionID: r.s.ID, Pos: pos}
	var at int64
	var data string
	if err := x.row(`SELECT kind, at, data FROM session_journal WHERE session_seq = ? AND pos = ?`, r.seq, pos).Scan(&e.Kind, &at, &data); err != nil {
		return store.SessionEntry{}, false, fmt.Errorf("read keyed entry %d: %w", pos, err)
	}
	e.At, e.Data = fromMicros(at), json.RawMessage(data)
	return e, true, nil
}

// SessionRead returns a session's entries after an offset.
func (s *Store) SessionRead(ctx context.Context, p store.SessionReadParams) ([]store.SessionEntry, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	limit, err := store.CheckReadLimit(p.After, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("session read %q: %w", p.SessionID, err)
	}
	rows, err := s.rdb.QueryContext(ctx, `
		SELECT j.pos, j.kind, j.at, j.data
		FROM (SELECT seq FROM sessions WHERE id = ?1) AS r
		LEFT JOIN session_journal AS j ON j.session_seq = r.seq AND j.pos > ?2
		ORDER BY j.pos LIMIT ?3`, p.SessionID, p.After, limit)
	if err != nil {
		return nil, fmt.Errorf("session read %q: %w", p.SessionID, err)
	}
	defer rows.Close()
	found := false
	var out []store.SessionEntry
	for rows.Next() {
		found = true
		var (
			pos, at    sql.NullInt64
			kind, data sql.NullString
		)
		if err := rows.Scan(&pos, &kind, &at, &data); err != nil {
			return nil, fmt.Errorf("session read %q: %w", p.SessionID, err)
		}
		if !pos.Valid {
			continue
		}
		out = append(out, store.SessionEntry{SessionID: p.SessionID, Pos: pos.Int64, Kind: kind.String,
			At: fromMicros(at.Int64), Data: json.RawMessage(data.String)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session read %q: %w", p.SessionID, err)
	}
	if !found {
		return nil, fmt.Errorf("session read %q: %w", p.SessionID, store.ErrSessionNotFound)
	}
	return out, nil
}

const messageColumns = `id, pos, mode, text, state, run_id, version`

func scanMessage(sc scanner) (store.SessionMessage, error) {
	var m store.SessionMessage
	var mode, state string
	if err := sc.Scan(&m.ID, &m.Pos, &mode, &m.Text, &state, &m.RunID, &m.Version); err != nil {
		return m, err
	}
	m.Mode, m.State = hitchtype.SendMode(mode), hitchtype.MessageState(state)
	return m, nil
}

// nextOrder is the order in which queued messages start.
const nextOrder = ` ORDER BY (mode = 'interrupt') DESC, pos`

// SessionMessages lists a session's messages.
func (s *Store) SessionMessages(ctx context.Context, p store.SessionMessagesParams) ([]store.SessionMessage, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	limit := p.Limit
	switch {
	case limit == 0:
		limit = defaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return nil, fmt.Errorf("session messages %q: limit %d is outside 0..%d", p.SessionID, p.Limit, MaxListLimit)
	}
	if _, err := s.SessionGet(ctx, p.SessionID); err != nil {
		return nil, fmt.Errorf("session messages: %w", err)
	}
	q := `SELECT ` + messageColumns + ` FROM session_messages WHERE session_seq = (SELECT seq FROM sessions WHERE id = ?) AND state = 'queued'` + nextOrder + ` LIMIT ?`
	if p.All {
		q = `SELECT ` + messageColumns + ` FROM session_messages WHERE session_seq = (SELECT seq FROM sessions WHERE id = ?) ORDER BY pos LIMIT ?`
	}
	rows, err := s.rdb.QueryContext(ctx, q, p.SessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("session messages %q: %w", p.SessionID, err)
	}
	defer rows.Close()
	var out []store.SessionMessage
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, fmt.Errorf("session messages %q: %w", p.SessionID, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session messages %q: %w", p.SessionID, err)
	}
	return out, nil
}

// SessionStart starts the next submission and creates its run.
func (s *Store) SessionStart(ctx context.Context, p store.SessionStartParams) (store.Session, store.Run, error) {
	if err := store.CheckCreate(&p.Run); err != nil {
		return store.Session{}, store.Run{}, fmt.Errorf("session start %q: run: %w", p.SessionID, err)
	}
	if err := store.CheckName("message id", p.MessageID, true); err != nil {
		return store.Session{}, store.Run{}, fmt.Errorf("session start %q: %w", p.SessionID, err)
	}
	if !json.Valid(p.Data) {
		return store.Session{}, store.Run{}, fmt.Errorf("session start %q: data is not valid JSON", p.SessionID)
	}
	var (
		sess store.Session
		run  store.Run
	)
	err := s.write(ctx, func(tx *wtx) error {
		x := s.sx(tx)
		r, err := x.session(p.SessionID)
		if err != nil {
			return err
		}
		if r.s.ActiveRun != "" {
			return &store.SessionBusyError{SessionID: r.s.ID, ActiveRun: r.s.ActiveRun}
		}
		m, err := x.message(r.seq, p.MessageID)
		if err != nil {
			return err
		}
		if m.State != hitchtype.StateQueued {
			return &store.MessageStateError{MessageID: m.ID, State: m.State, RunID: m.RunID}
		}
		if m.Version != p.MessageVersion {
			return fmt.Errorf("%w: message %s changed at position %d, after %d", store.ErrConflict, m.ID, m.Version, p.MessageVersion)
		}
		var next string
		if err := x.row(`SELECT id FROM session_messages WHERE session_seq = ? AND state = 'queued'`+nextOrder+` LIMIT 1`, r.seq).Scan(&next); err != nil {
			return err
		}
		if next != m.ID {
			return fmt.Errorf("%w: message %s is not next to start; %s is", store.ErrConflict, m.ID, next)
		}
		if _, err := tx.getRow(p.Run.ID); err == nil {
			return fmt.Errorf("%w: run %s exists", store.ErrConflict, p.Run.ID)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		tenant, err := store.ResolveTenant(p.Run.Tenant, r.s.Tenant)
		if err != nil {
			return err
		}
		rr, err := scanRun(tx.insertRun.QueryRow(p.Run.ID, p.Run.RootID, p.Run.ParentID, p.Run.Depth, p.Run.Agent, p.Run.Version,
			p.Run.InputHash, len(p.Run.Entries), x.now, x.now, tenant, store.Title(p.Run.Title)))
		if err != nil {
			return err
		}
		if err := tx.insertEntries(rr.seq, 0, p.Run.Entries, x.now); err != nil {
			return err
		}
		if p.Run.Budget != nil {
			b, _ := json.Marshal(p.Run.Budget)
			if _, err := tx.budgetNew.Exec(rr.seq, string(b)); err != nil {
				return fmt.Errorf("insert budget: %w", err)
			}
		}
		run = rr.run
		pos := r.s.Position + 1
		if _, err := x.exec(`UPDATE session_messages SET state = 'started', run_id = ?, version = ? WHERE session_seq = ? AND id = ?`,
			run.ID, pos, r.seq, m.ID); err != nil {
			return err
		}
		if _, err := x.exec(`UPDATE sessions SET active_run = ? WHERE seq = ?`, run.ID, r.seq); err != nil {
			return err
		}
		r.s.ActiveRun = run.ID
		_, err = x.appendEntry(&r, hitchtype.KindSubmissionStarted, p.Data, -1)
		sess = r.s
		return err
	})
	if err != nil {
		return store.Session{}, store.Run{}, fmt.Errorf("session start %q: %w", p.SessionID, err)
	}
	return sess, run, nil
}

// SessionEnd ends the active submission, once.
func (s *Store) SessionEnd(ctx context.Context, p store.SessionEndParams) (store.Session, bool, error) {
	if err := errors.Join(store.CheckName("session id", p.SessionID, true), store.CheckName("run id", p.RunID, true)); err != nil {
		return store.Session{}, false, fmt.Errorf("session end: %w", err)
	}
	if !json.Valid(p.Data) || len(p.Data) > MaxEntryBytes {
		return store.Session{}, false, fmt.Errorf("session end %q: data is not valid JSON of at most %d bytes", p.SessionID, MaxEntryBytes)
	}
	var (
		sess  store.Session
		ended bool
	)
	err := s.write(ctx, func(tx *wtx) error {
		x := s.sx(tx)
		r, err := x.session(p.SessionID)
		if err != nil {
			return err
		}
		sess = r.s
		if r.s.ActiveRun != p.RunID {
			return nil
		}
		for _, id := range p.Joined {
			m, err := x.message(r.seq, id)
			if err != nil {
				return err
			}
			if m.State != hitchtype.StateQueued {
				continue
			}
			if _, err := x.exec(`UPDATE session_messages SET state = 'joined', run_id = ?, version = ? WHERE session_seq = ? AND id = ?`,
				p.RunID, r.s.Position+1, r.seq, id); err != nil {
				return err
			}
			data, _ := json.Marshal(hitchtype.MessageJoined{ID: id, RunID: p.RunID})
			if _, err := x.appendEntry(&r, hitchtype.KindMessageJoined, data, -1); err != nil {
				return err
			}
		}
		if _, err := x.exec(`UPDATE sessions SET active_run = '' WHERE seq = ?`, r.seq); err != nil {
			return err
		}
		r.s.ActiveRun = ""
		if _, err := x.appendEntry(&r, hitchtype.KindSubmissionEnded, p.Data, 0); err != nil {
			return err
		}
		sess, ended = r.s, true
		return nil
	})
	if err != nil {
		return store.Session{}, false, fmt.Errorf("session end %q: %w", p.SessionID, err)
	}
	return sess, ended, nil
}
