package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

var _ store.SessionStore = (*Store)(nil)

// MaxKeysSwept bounds the expired idempotency keys one keyed admission
// deletes, so forgetting old keys costs every admission a little and none
// of them much.
const MaxKeysSwept = 64

const sessionCols = `seq, id, agent, version, metadata::text, active_run, position, queued, created_at, updated_at, tenant`

type sessionRow struct {
	seq int64
	s   store.Session
}

func scanSession(sc pgx.Row, extra ...any) (sessionRow, error) {
	var (
		r    sessionRow
		meta string
	)
	err := sc.Scan(append([]any{&r.seq, &r.s.ID, &r.s.Agent, &r.s.Version, &meta, &r.s.ActiveRun, &r.s.Position,
		&r.s.Queued, &r.s.CreatedAt, &r.s.UpdatedAt, &r.s.Tenant}, extra...)...)
	if err != nil {
		return sessionRow{}, err
	}
	r.s.Metadata = json.RawMessage(meta)
	r.s.CreatedAt, r.s.UpdatedAt = r.s.CreatedAt.UTC(), r.s.UpdatedAt.UTC()
	return r, nil
}

// stx is one session transaction: every change of a session locks its row
// first (lock), so the changes of one session are serial across nodes, and
// stamps everything it writes with one reading of the store clock (now).
type stx struct {
	ctx context.Context
	tx  pgx.Tx
	now time.Time
}

// lock locks a session's row for the rest of the transaction, reads it,
// and reads the store clock.
func (s *Store) lock(ctx context.Context, tx pgx.Tx, id string) (stx, sessionRow, error) {
	x := stx{ctx: ctx, tx: tx}
	r, err := scanSession(tx.QueryRow(ctx, `SELECT `+sessionCols+`, `+nowSQL+` FROM hitch_sessions WHERE id = $2 FOR UPDATE`,
		s.clockArg(), id), &x.now)
	if errors.Is(err, pgx.ErrNoRows) {
		return x, sessionRow{}, store.ErrSessionNotFound
	}
	x.now = x.now.UTC()
	return x, r, err
}

func (x stx) exec(q string, args ...any) error {
	_, err := x.tx.Exec(x.ctx, q, args...)
	return err
}

func (x stx) message(seq int64, id string) (store.SessionMessage, error) {
	m, err := scanMessage(x.tx.QueryRow(x.ctx, `SELECT `+messageCols+` FROM hitch_session_messages
		WHERE session_seq = $1 AND id = $2`, seq, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return m, fmt.Errorf("%w: %s", store.ErrMessageNotFound, id)
	}
	return m, err
}

// appendEntry writes one entry at the session's next position and moves
// the length and the queued count; it returns the entry.
func (x stx) appendEntry(r *sessionRow, kind string, data json.RawMessage, queued int) (store.SessionEntry, error) {
	pos := r.s.Position + 1
	if err := x.exec(`INSERT INTO hitch_session_journal (session_seq, pos, kind, at, data) VALUES ($1, $2, $3, $4, $5::json)`,
		r.seq, pos, kind, x.now, string(data)); err != nil {
		return store.SessionEntry{}, fmt.Errorf("insert entry %d: %w", pos, err)
	}
	if err := x.exec(`UPDATE hitch_sessions SET position = $2, queued = queued + $3, updated_at = $4 WHERE seq = $1`,
		r.seq, pos, queued, x.now); err != nil {
		return store.SessionEntry{}, err
	}
	r.s.Position, r.s.Queued, r.s.UpdatedAt = pos, r.s.Queued+queued, x.now
	return store.SessionEntry{SessionID: r.s.ID, Pos: pos, Kind: kind, At: x.now, Data: data}, nil
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
	err := s.retry(ctx, func() error {
		r, err := scanSession(s.pool.QueryRow(ctx, `INSERT INTO hitch_sessions (id, agent, version, metadata, created_at, updated_at, tenant)
			VALUES ($2, $3, $4, $5::json, `+nowSQL+`, `+nowSQL+`, $6) ON CONFLICT (id) DO NOTHING RETURNING `+sessionCols,
			s.clockArg(), p.ID, p.Agent, p.Version, string(p.Metadata), p.Tenant))
		if err == nil {
			out, created = r.s, true
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		// The id is taken; ON CONFLICT waited for its writer to commit.
		r, err = s.sessionRow(ctx, p.ID)
		out, created = r.s, false
		return err
	})
	if err != nil {
		return store.Session{}, false, fmt.Errorf("session create %q: %w", p.ID, err)
	}
	return out, created, nil
}

func (s *Store) sessionRow(ctx context.Context, id string) (sessionRow, error) {
	r, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionCols+` FROM hitch_sessions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return sessionRow{}, store.ErrSessionNotFound
	}
	return r, err
}

// SessionGet returns one session.
func (s *Store) SessionGet(ctx context.Context, id string) (store.Session, error) {
	if s.closed.Load() {
		return store.Session{}, ErrClosed
	}
	r, err := s.sessionRow(ctx, id)
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
	q := `SELECT ` + sessionCols + ` FROM hitch_sessions WHERE id > $1`
	if p.NeedsWork {
		q = `SELECT ` + sessionCols + ` FROM hitch_sessions s WHERE id > $1 AND (active_run <> '' OR queued > 0)
			AND (active_run = '' OR EXISTS (SELECT 1 FROM hitch_runs r WHERE r.id = s.active_run
				AND r.status NOT IN ('queued', 'running', 'waiting'))
			OR EXISTS (SELECT 1 FROM hitch_runs r JOIN hitch_session_messages m ON m.session_seq = s.seq AND m.run_id = r.id
				JOIN hitch_session_journal j ON j.session_seq = s.seq AND j.pos > m.pos
				WHERE r.id = s.active_run AND NOT r.cancel_requested AND m.state = 'started'
				  AND j.kind = 'submission.interrupted' AND j.data->>'run_id' = s.active_run))`
	}
	if err := store.CheckTenant("tenant", p.Tenant, false); err != nil {
		return nil, fmt.Errorf("session list: %w", err)
	}
	args := []any{p.After, limit}
	if p.Tenant != "" {
		q += ` AND tenant = $3`
		args = append(args, p.Tenant)
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY id LIMIT $2`, args...)
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

// SessionAppend appends one message entry with its change of state, in one
// transaction under the session's row lock.
func (s *Store) SessionAppend(ctx context.Context, p store.SessionAppendParams) (store.SessionAppendResult, error) {
	ref, err := store.CheckSessionAppend(p)
	if err != nil {
		return store.SessionAppendResult{}, fmt.Errorf("session append %q: %w", p.SessionID, err)
	}
	var res store.SessionAppendResult
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		res = store.SessionAppendResult{}
		x, r, err := s.lock(ctx, tx, p.SessionID)
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
		pos := r.s.Position + 1
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
			if err := x.exec(`INSERT INTO hitch_session_messages (session_seq, id, pos, mode, text, state, version)
				VALUES ($1, $2, $3, $4, $5, 'queued', $3)`, r.seq, ref.ID, pos, string(ref.Mode), ref.Text); err != nil {
				return fmt.Errorf("insert message: %w", err)
			}
			queued = 1
			if p.IdempotencyKey != "" {
				if err := x.exec(`INSERT INTO hitch_session_keys (session_seq, key, pos, expires_at) VALUES ($1, $2, $3, $4)
					ON CONFLICT (session_seq, key) DO UPDATE SET pos = excluded.pos, expires_at = excluded.expires_at`,
					r.seq, p.IdempotencyKey, pos, x.now.Add(p.KeyTTL)); err != nil {
					return fmt.Errorf("insert idempotency key: %w", err)
				}
				// Keys of other sessions may be locked by their own
				// admissions: skip them rather than wait.
				if err := x.exec(`DELETE FROM hitch_session_keys WHERE (session_seq, key) IN (
					SELECT session_seq, key FROM hitch_session_keys WHERE expires_at <= $1
					LIMIT $2 FOR UPDATE SKIP LOCKED)`, x.now, MaxKeysSwept); err != nil {
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
			switch p.Kind {
			case hitchtype.KindMessageEdited:
				err = x.exec(`UPDATE hitch_session_messages SET text = $3, version = $4 WHERE session_seq = $1 AND id = $2`,
					r.seq, ref.ID, ref.Text, pos)
			case hitchtype.KindMessageRemoved:
				err = x.exec(`UPDATE hitch_session_messages SET state = 'removed', version = $3 WHERE session_seq = $1 AND id = $2`,
					r.seq, ref.ID, pos)
				queued = -1
			case hitchtype.KindMessageJoined:
				err = x.exec(`UPDATE hitch_session_messages SET state = 'joined', run_id = $3, version = $4 WHERE session_seq = $1 AND id = $2`,
					r.seq, ref.ID, ref.RunID, pos)
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
func (x stx) keyed(r sessionRow, key string) (store.SessionEntry, bool, error) {
	e := store.SessionEntry{SessionID: r.s.ID}
	var data string
	err := x.tx.QueryRow(x.ctx, `SELECT j.pos, j.kind, j.at, j.data::text FROM hitch_session_keys k
		JOIN hitch_session_journal j ON j.session_seq = k.session_seq AND j.pos = k.pos
		WHERE k.session_seq = $1 AND k.key = $2 AND k.expires_at > $3`, r.seq, key, x.now).Scan(&e.Pos, &e.Kind, &e.At, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.SessionEntry{}, false, nil
	}
	if err != nil {
		return store.SessionEntry{}, false, fmt.Errorf("read keyed entry: %w", err)
	}
	e.At, e.Data = e.At.UTC(), json.RawMessage(data)
	return e, true, nil
}

// sessionReadSQL reads entries in one statement: a missing session gives
// no row, a session with nothing after the offset a single row of NULLs.
const sessionReadSQL = `
SELECT j.pos, j.kind, j.at, j.data::text
FROM (SELECT seq FROM hitch_sessions WHERE id = $1) AS s
LEFT JOIN LATERAL (
	SELECT pos, kind, at, data FROM hitch_session_journal
	WHERE session_seq = s.seq AND pos > $2 ORDER BY pos LIMIT $3
) AS j ON true
ORDER BY j.pos`

// SessionRead returns a session's entries after an offset.
func (s *Store) SessionRead(ctx context.Context, p store.SessionReadParams) ([]store.SessionEntry, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	limit, err := store.CheckReadLimit(p.After, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("session read %q: %w", p.SessionID, err)
	}
	rows, err := s.pool.Query(ctx, sessionReadSQL, p.SessionID, p.After, limit)
	if err != nil {
		return nil, fmt.Errorf("session read %q: %w", p.SessionID, err)
	}
	defer rows.Close()
	found := false
	var out []store.SessionEntry
	for rows.Next() {
		found = true
		var (
			pos        *int64
			kind, data *string
			at         *time.Time
		)
		if err := rows.Scan(&pos, &kind, &at, &data); err != nil {
			return nil, fmt.Errorf("session read %q: %w", p.SessionID, err)
		}
		if pos == nil {
			continue
		}
		out = append(out, store.SessionEntry{SessionID: p.SessionID, Pos: *pos, Kind: *kind, At: at.UTC(), Data: json.RawMessage(*data)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session read %q: %w", p.SessionID, err)
	}
	if !found {
		return nil, fmt.Errorf("session read %q: %w", p.SessionID, store.ErrSessionNotFound)
	}
	return out, nil
}

const messageCols = `id, pos, mode, text, state, run_id, version`

func scanMessage(sc pgx.Row) (store.SessionMessage, error) {
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
	r, err := s.sessionRow(ctx, p.SessionID)
	if err != nil {
		return nil, fmt.Errorf("session messages %q: %w", p.SessionID, err)
	}
	q := `SELECT ` + messageCols + ` FROM hitch_session_messages WHERE session_seq = $1 AND state = 'queued'` + nextOrder + ` LIMIT $2`
	if p.All {
		q = `SELECT ` + messageCols + ` FROM hitch_session_messages WHERE session_seq = $1 ORDER BY pos LIMIT $2`
	}
	rows, err := s.pool.Query(ctx, q, r.seq, limit)
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

// SessionStart starts the next submission and creates its run, in one
// transaction under the session's row lock. A second node starting the
// same session waits for the lock and then finds the run active; the
// update that sets the active run also requires none to be set, so even
// a caller that skipped the lock could not start a second one.
func (s *Store) SessionStart(ctx context.Context, p store.SessionStartParams) (store.Session, store.Run, error) {
	if err := store.CheckCreate(&p.Run); err != nil {
		return store.Session{}, store.Run{}, fmt.Errorf("session start %q: run: %w", p.SessionID, err)
	}
	if err := store.CheckName("message id", p.MessageID, true); err != nil {
		return store.Session{}, store.Run{}, fmt.Errorf("session start %q: %w", p.SessionID, err)
	}
	if !json.Valid(p.Data) || len(p.Data) > MaxEntryBytes {
		return store.Session{}, store.Run{}, fmt.Errorf("session start %q: data is not valid JSON of at most %d bytes", p.SessionID, MaxEntryBytes)
	}
	kinds, data := entryArrays(p.Run.Entries)
	var b store.Budget
	withBudget := p.Run.Budget != nil && p.Run.ParentID == ""
	if withBudget {
		b = *p.Run.Budget
	}
	var (
		sess store.Session
		run  store.Run
	)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		x, r, err := s.lock(ctx, tx, p.SessionID)
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
		if err := tx.QueryRow(ctx, `SELECT id FROM hitch_session_messages WHERE session_seq = $1 AND state = 'queued'`+nextOrder+` LIMIT 1`,
			r.seq).Scan(&next); err != nil {
			return err
		}
		if next != m.ID {
			return fmt.Errorf("%w: message %s is not next to start; %s is", store.ErrConflict, m.ID, next)
		}
		tenant, err := store.ResolveTenant(p.Run.Tenant, r.s.Tenant)
		if err != nil {
			return err
		}
		// The run is stamped with the transaction's clock reading.
		rr, err := scanRun(tx.QueryRow(ctx, createSQL, x.now, p.Run.ID, p.Run.RootID, p.Run.ParentID, p.Run.Depth, p.Run.Agent,
			p.Run.Version, p.Run.InputHash, kinds, data, withBudget, b.Tokens, b.MicroUSD, b.ModelCalls, b.ToolCalls, b.WallMS, tenant, store.Title(p.Run.Title)))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: run %s exists", store.ErrConflict, p.Run.ID)
		}
		if err != nil {
			return err
		}
		run = rr.run
		pos := r.s.Position + 1
		if err := x.exec(`UPDATE hitch_session_messages SET state = 'started', run_id = $3, version = $4
			WHERE session_seq = $1 AND id = $2 AND state = 'queued'`, r.seq, m.ID, run.ID, pos); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE hitch_sessions SET active_run = $2 WHERE seq = $1 AND active_run = ''`, r.seq, run.ID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("%w: session %s became busy", store.ErrConflict, r.s.ID)
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
	if len(p.Joined) > MaxListLimit {
		return store.Session{}, false, fmt.Errorf("session end %q: joined has %d messages, more than %d", p.SessionID, len(p.Joined), MaxListLimit)
	}
	var (
		sess  store.Session
		ended bool
	)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		ended = false
		x, r, err := s.lock(ctx, tx, p.SessionID)
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
			if err := x.exec(`UPDATE hitch_session_messages SET state = 'joined', run_id = $3, version = $4
				WHERE session_seq = $1 AND id = $2`, r.seq, id, p.RunID, r.s.Position+1); err != nil {
				return err
			}
			data, _ := json.Marshal(hitchtype.MessageJoined{ID: id, RunID: p.RunID})
			if _, err := x.appendEntry(&r, hitchtype.KindMessageJoined, data, -1); err != nil {
				return err
			}
		}
		if err := x.exec(`UPDATE hitch_sessions SET active_run = '' WHERE seq = $1`, r.seq); err != nil {
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
