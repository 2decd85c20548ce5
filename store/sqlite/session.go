package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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

// scanSessionOnly is scanSession without the session's store key.
func scanSessionOnly(sc scanner) (store.Session, error) {
	r, err := scanSession(sc)
	return r.s, err
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
	m, err := store.ScanMessage(x.row(`SELECT `+store.MessageColumns+` FROM session_messages WHERE session_seq = ? AND id = ?`, seq, id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("%w: %s", store.ErrMessageNotFound, id)
	}
	return m, err
}

// sessionTx is the store.SessionTx of one write transaction: the session
// row at seq, on the writer's connection.
type sessionTx struct {
	sx
	tx  *wtx
	seq int64
	id  string
}

func (s *Store) sessionTx(tx *wtx, id string) (sessionTx, store.Session, error) {
	x := s.sx(tx)
	r, err := x.session(id)
	return sessionTx{sx: x, tx: tx, seq: r.seq, id: r.s.ID}, r.s, err
}

func (x sessionTx) Message(id string) (store.SessionMessage, error) { return x.message(x.seq, id) }

func (x sessionTx) NextQueued() (string, error) {
	var next string
	err := x.row(`SELECT id FROM session_messages WHERE session_seq = ? AND state = 'queued'`+store.MessageNextOrder+` LIMIT 1`, x.seq).Scan(&next)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return next, err
}

func (x sessionTx) Keyed(key string) (store.SessionEntry, bool, error) {
	var (
		e    store.SessionEntry
		at   int64
		data string
	)
	err := x.row(`SELECT j.pos, j.kind, j.at, j.data FROM session_keys k
		JOIN session_journal j ON j.session_seq = k.session_seq AND j.pos = k.pos
		WHERE k.session_seq = ? AND k.key = ? AND k.expires_at > ?`, x.seq, key, x.now).Scan(&e.Pos, &e.Kind, &at, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return store.SessionEntry{}, false, nil
	}
	if err != nil {
		return store.SessionEntry{}, false, fmt.Errorf("read keyed entry: %w", err)
	}
	e.At, e.Data = fromMicros(at), json.RawMessage(data)
	return e, true, nil
}

func (x sessionTx) Remember(key string, pos int64, ttl time.Duration) error {
	if _, err := x.exec(`INSERT INTO session_keys (session_seq, key, pos, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (session_seq, key) DO UPDATE SET pos = excluded.pos, expires_at = excluded.expires_at`,
		x.seq, key, pos, micros(x.tx.now.Add(ttl))); err != nil {
		return fmt.Errorf("insert idempotency key: %w", err)
	}
	if _, err := x.exec(`DELETE FROM session_keys WHERE (session_seq, key) IN (
		SELECT session_seq, key FROM session_keys WHERE expires_at <= ? LIMIT ?)`, x.now, MaxKeysSwept); err != nil {
		return fmt.Errorf("forget expired keys: %w", err)
	}
	return nil
}

func (x sessionTx) InsertMessage(m store.SessionMessage) error {
	_, err := x.exec(`INSERT INTO session_messages (session_seq, id, pos, mode, text, state, version) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		x.seq, m.ID, m.Pos, string(m.Mode), m.Text, string(m.State), m.Version)
	return err
}

func (x sessionTx) UpdateMessage(m store.SessionMessage) error {
	_, err := x.exec(`UPDATE session_messages SET text = ?, state = ?, run_id = ?, version = ? WHERE session_seq = ? AND id = ?`,
		m.Text, string(m.State), m.RunID, m.Version, x.seq, m.ID)
	return err
}

func (x sessionTx) SetActive(runID string) error {
	_, err := x.exec(`UPDATE sessions SET active_run = ? WHERE seq = ?`, runID, x.seq)
	return err
}

func (x sessionTx) CreateRun(p store.RunCreateParams) (store.Run, error) {
	r, ok, err := x.tx.insertNew(p, p.Tenant)
	if err == nil && !ok {
		err = fmt.Errorf("%w: run %s exists", store.ErrConflict, p.ID)
	}
	return r.run, err
}

func (x sessionTx) Append(pos int64, kind string, data json.RawMessage, queued int) (store.SessionEntry, error) {
	if _, err := x.exec(`INSERT INTO session_journal (session_seq, pos, kind, at, data) VALUES (?, ?, ?, ?, ?)`,
		x.seq, pos, kind, x.now, string(data)); err != nil {
		return store.SessionEntry{}, fmt.Errorf("insert entry %d: %w", pos, err)
	}
	if _, err := x.exec(`UPDATE sessions SET position = ?, queued = queued + ?, updated_at = ? WHERE seq = ?`,
		pos, queued, x.now, x.seq); err != nil {
		return store.SessionEntry{}, err
	}
	return store.SessionEntry{SessionID: x.id, Pos: pos, Kind: kind, At: fromMicros(x.now), Data: data}, nil
}

// SessionCreate creates a session, or returns the existing one.
func (s *Store) SessionCreate(ctx context.Context, p store.SessionCreateParams) (store.Session, bool, error) {
	return store.CreateSession(s.createSession).Create(ctx, p)
}

func (s *Store) createSession(ctx context.Context, p store.SessionCreateParams) (out store.Session, created bool, err error) {
	err = s.write(ctx, func(tx *wtx) error {
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
	return out, created, err
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
	return store.Result(r.s, err, "session get", id)
}

// SessionList returns sessions by id after a cursor.
func (s *Store) SessionList(ctx context.Context, p store.SessionListParams) ([]store.Session, error) {
	limit, err := store.CheckSessionList(p)
	if err := s.ready(err, "session list", ""); err != nil {
		return nil, err
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
	out, err := readAll(ctx, s, scanSessionOnly, q+` ORDER BY id LIMIT ?2`, args...)
	return store.Result(out, err, "session list", "")
}

// inSession runs fn on the writer, in the transaction of its batch.
func (s *Store) inSession(ctx context.Context, id string, fn func(store.SessionTx, store.Session) error) error {
	return s.write(ctx, func(tx *wtx) error {
		x, sess, err := s.sessionTx(tx, id)
		if err != nil {
			return err
		}
		return fn(x, sess)
	})
}

// SessionAppend appends one message entry with its change of state.
func (s *Store) SessionAppend(ctx context.Context, p store.SessionAppendParams) (store.SessionAppendResult, error) {
	return store.InSession(s.inSession).Append(ctx, p)
}

// SessionRead returns a session's entries after an offset.
func (s *Store) SessionRead(ctx context.Context, p store.SessionReadParams) ([]store.SessionEntry, error) {
	limit, err := store.CheckReadLimit(p.After, p.Limit)
	if err := s.ready(err, "session read", p.SessionID); err != nil {
		return nil, err
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
	out, err := store.SessionEntries(rows, func() (store.SessionEntry, bool, error) {
		var (
			pos, at    sql.NullInt64
			kind, data sql.NullString
		)
		if err := rows.Scan(&pos, &kind, &at, &data); err != nil || !pos.Valid {
			return store.SessionEntry{}, false, err
		}
		return store.SessionEntry{SessionID: p.SessionID, Pos: pos.Int64, Kind: kind.String,
			At: fromMicros(at.Int64), Data: json.RawMessage(data.String)}, true, nil
	})
	return store.Result(out, err, "session read", p.SessionID)
}

// SessionMessages lists a session's messages.
func (s *Store) SessionMessages(ctx context.Context, p store.SessionMessagesParams) ([]store.SessionMessage, error) {
	limit, err := store.CheckPage(p.Limit)
	if err := s.ready(err, "session messages", p.SessionID); err != nil {
		return nil, err
	}
	if _, err := s.SessionGet(ctx, p.SessionID); err != nil {
		return nil, fmt.Errorf("session messages: %w", err)
	}
	q := `SELECT ` + store.MessageColumns + ` FROM session_messages WHERE session_seq = (SELECT seq FROM sessions WHERE id = ?) AND state = 'queued'` + store.MessageNextOrder + ` LIMIT ?`
	if p.All {
		q = `SELECT ` + store.MessageColumns + ` FROM session_messages WHERE session_seq = (SELECT seq FROM sessions WHERE id = ?) ORDER BY pos LIMIT ?`
	}
	out, err := readAll(ctx, s, store.ScanMessage, q, p.SessionID, limit)
	return store.Result(out, err, "session messages", p.SessionID)
}

// SessionStart starts the next submission and creates its run.
func (s *Store) SessionStart(ctx context.Context, p store.SessionStartParams) (store.Session, store.Run, error) {
	return store.InSession(s.inSession).Start(ctx, p)
}

// SessionEnd ends the active submission, once.
func (s *Store) SessionEnd(ctx context.Context, p store.SessionEndParams) (store.Session, bool, error) {
	return store.InSession(s.inSession).End(ctx, p)
}
