package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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

// scanSessionOnly is scanSession without the session's store key.
func scanSessionOnly(sc pgx.Row) (store.Session, error) {
	r, err := scanSession(sc)
	return r.s, err
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

// sessionTx is the store.SessionTx of one transaction that holds the
// session row at seq locked.
type sessionTx struct {
	stx
	s   *Store
	seq int64
	id  string
}

// lockTx locks a session's row (see lock) and returns its store.SessionTx.
func (s *Store) lockTx(ctx context.Context, tx pgx.Tx, id string) (sessionTx, store.Session, error) {
	x, r, err := s.lock(ctx, tx, id)
	return sessionTx{stx: x, s: s, seq: r.seq, id: r.s.ID}, r.s, err
}

func (x stx) exec(q string, args ...any) error {
	_, err := x.tx.Exec(x.ctx, q, args...)
	return err
}

func (x sessionTx) Message(id string) (store.SessionMessage, error) {
	m, err := scanMessage(x.tx.QueryRow(x.ctx, `SELECT `+store.MessageColumns+` FROM hitch_session_messages
		WHERE session_seq = $1 AND id = $2`, x.seq, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return m, fmt.Errorf("%w: %s", store.ErrMessageNotFound, id)
	}
	return m, err
}

func (x sessionTx) NextQueued() (string, error) {
	var next string
	err := x.tx.QueryRow(x.ctx, `SELECT id FROM hitch_session_messages WHERE session_seq = $1 AND state = 'queued'`+store.MessageNextOrder+` LIMIT 1`,
		x.seq).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return next, err
}

func (x sessionTx) Keyed(key string) (store.SessionEntry, bool, error) {
	e := store.SessionEntry{SessionID: x.id}
	var data string
	err := x.tx.QueryRow(x.ctx, `SELECT j.pos, j.kind, j.at, j.data::text FROM hitch_session_keys k
		JOIN hitch_session_journal j ON j.session_seq = k.session_seq AND j.pos = k.pos
		WHERE k.session_seq = $1 AND k.key = $2 AND k.expires_at > $3`, x.seq, key, x.now).Scan(&e.Pos, &e.Kind, &e.At, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.SessionEntry{}, false, nil
	}
	if err != nil {
		return store.SessionEntry{}, false, fmt.Errorf("read keyed entry: %w", err)
	}
	e.At, e.Data = e.At.UTC(), json.RawMessage(data)
	return e, true, nil
}

func (x sessionTx) Remember(key string, pos int64, ttl time.Duration) error {
	if err := x.exec(`INSERT INTO hitch_session_keys (session_seq, key, pos, expires_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (session_seq, key) DO UPDATE SET pos = excluded.pos, expires_at = excluded.expires_at`,
		x.seq, key, pos, x.now.Add(ttl)); err != nil {
		return fmt.Errorf("insert idempotency key: %w", err)
	}
	// Keys of other sessions may be locked by their own admissions: skip
	// them rather than wait.
	if err := x.exec(`DELETE FROM hitch_session_keys WHERE (session_seq, key) IN (
		SELECT session_seq, key FROM hitch_session_keys WHERE expires_at <= $1
		LIMIT $2 FOR UPDATE SKIP LOCKED)`, x.now, MaxKeysSwept); err != nil {
		return fmt.Errorf("forget expired keys: %w", err)
	}
	return nil
}

func (x sessionTx) InsertMessage(m store.SessionMessage) error {
	return x.exec(`INSERT INTO hitch_session_messages (session_seq, id, pos, mode, text, state, version)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, x.seq, m.ID, m.Pos, string(m.Mode), m.Text, string(m.State), m.Version)
}

func (x sessionTx) UpdateMessage(m store.SessionMessage) error {
	return x.exec(`UPDATE hitch_session_messages SET text = $3, state = $4, run_id = $5, version = $6
		WHERE session_seq = $1 AND id = $2`, x.seq, m.ID, m.Text, string(m.State), m.RunID, m.Version)
}

// SetActive sets the active run only where none is set, so even a caller
// that skipped the row lock could not start a second submission.
func (x sessionTx) SetActive(runID string) error {
	tag, err := x.tx.Exec(x.ctx, `UPDATE hitch_sessions SET active_run = $2 WHERE seq = $1 AND ($2 = '' OR active_run = '')`, x.seq, runID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("%w: session %s became busy", store.ErrConflict, x.id)
	}
	return nil
}

// CreateRun creates the run stamped with the transaction's clock reading.
func (x sessionTx) CreateRun(p store.RunCreateParams) (store.Run, error) {
	r, err := createRun(x.ctx, x.tx, x.now, p, p.Tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Run{}, fmt.Errorf("%w: run %s exists", store.ErrConflict, p.ID)
	}
	return r.run, err
}

func (x sessionTx) Append(pos int64, kind string, data json.RawMessage, queued int) (store.SessionEntry, error) {
	if err := x.exec(`INSERT INTO hitch_session_journal (session_seq, pos, kind, at, data) VALUES ($1, $2, $3, $4, $5::json)`,
		x.seq, pos, kind, x.now, string(data)); err != nil {
		return store.SessionEntry{}, fmt.Errorf("insert entry %d: %w", pos, err)
	}
	if err := x.exec(`UPDATE hitch_sessions SET position = $2, queued = queued + $3, updated_at = $4 WHERE seq = $1`,
		x.seq, pos, queued, x.now); err != nil {
		return store.SessionEntry{}, err
	}
	return store.SessionEntry{SessionID: x.id, Pos: pos, Kind: kind, At: x.now, Data: data}, nil
}

// SessionCreate creates a session, or returns the existing one.
func (s *Store) SessionCreate(ctx context.Context, p store.SessionCreateParams) (store.Session, bool, error) {
	return store.CreateSession(s.createSession).Create(ctx, p)
}

func (s *Store) createSession(ctx context.Context, p store.SessionCreateParams) (out store.Session, created bool, err error) {
	err = s.retry(ctx, func() error {
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
	return out, created, err
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
	return store.Result(r.s, err, "session get", id)
}

// SessionList returns sessions by id after a cursor.
func (s *Store) SessionList(ctx context.Context, p store.SessionListParams) ([]store.Session, error) {
	limit, err := store.CheckSessionList(p)
	if err := s.ready(err, "session list", ""); err != nil {
		return nil, err
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
	args := []any{p.After, limit}
	if p.Tenant != "" {
		q += ` AND tenant = $3`
		args = append(args, p.Tenant)
	}
	out, err := readAll(ctx, s.pool, scanSessionOnly, q+` ORDER BY id LIMIT $2`, args...)
	return store.Result(out, err, "session list", "")
}

// inSession runs fn in a transaction under the session's row lock, so the
// changes of one session are serial across nodes.
func (s *Store) inSession(ctx context.Context, id string, fn func(store.SessionTx, store.Session) error) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		x, sess, err := s.lockTx(ctx, tx, id)
		if err != nil {
			return err
		}
		return fn(x, sess)
	})
}

// SessionAppend appends one message entry with its change of state, in one
// transaction under the session's row lock.
func (s *Store) SessionAppend(ctx context.Context, p store.SessionAppendParams) (store.SessionAppendResult, error) {
	return store.InSession(s.inSession).Append(ctx, p)
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
	limit, err := store.CheckReadLimit(p.After, p.Limit)
	if err := s.ready(err, "session read", p.SessionID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, sessionReadSQL, p.SessionID, p.After, limit)
	if err != nil {
		return nil, fmt.Errorf("session read %q: %w", p.SessionID, err)
	}
	defer rows.Close()
	out, err := store.SessionEntries(rows, func() (store.SessionEntry, bool, error) {
		var (
			pos        *int64
			kind, data *string
			at         *time.Time
		)
		if err := rows.Scan(&pos, &kind, &at, &data); err != nil || pos == nil {
			return store.SessionEntry{}, false, err
		}
		return store.SessionEntry{SessionID: p.SessionID, Pos: *pos, Kind: *kind, At: at.UTC(), Data: json.RawMessage(*data)}, true, nil
	})
	return store.Result(out, err, "session read", p.SessionID)
}

// scanMessage is store.ScanMessage of a pgx row.
func scanMessage(sc pgx.Row) (store.SessionMessage, error) { return store.ScanMessage(sc) }

// SessionMessages lists a session's messages.
func (s *Store) SessionMessages(ctx context.Context, p store.SessionMessagesParams) ([]store.SessionMessage, error) {
	limit, err := store.CheckPage(p.Limit)
	if err := s.ready(err, "session messages", p.SessionID); err != nil {
		return nil, err
	}
	r, err := s.sessionRow(ctx, p.SessionID)
	if err != nil {
		return nil, fmt.Errorf("session messages %q: %w", p.SessionID, err)
	}
	q := `SELECT ` + store.MessageColumns + ` FROM hitch_session_messages WHERE session_seq = $1 AND state = 'queued'` + store.MessageNextOrder + ` LIMIT $2`
	if p.All {
		q = `SELECT ` + store.MessageColumns + ` FROM hitch_session_messages WHERE session_seq = $1 ORDER BY pos LIMIT $2`
	}
	out, err := readAll(ctx, s.pool, scanMessage, q, r.seq, limit)
	return store.Result(out, err, "session messages", p.SessionID)
}

// SessionStart starts the next submission and creates its run, in one
// transaction under the session's row lock. A second node starting the
// same session waits for the lock and then finds the run active.
func (s *Store) SessionStart(ctx context.Context, p store.SessionStartParams) (store.Session, store.Run, error) {
	return store.InSession(s.inSession).Start(ctx, p)
}

// SessionEnd ends the active submission, once.
func (s *Store) SessionEnd(ctx context.Context, p store.SessionEndParams) (store.Session, bool, error) {
	return store.InSession(s.inSession).End(ctx, p)
}
