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

// appendSQL is an append in one statement: it moves the journal's length
// and sets the status only when the token, a held lease and the position
// are right, and inserts the entries from the same row, so a refused append
// writes nothing. $5 is the new status or NULL.
//
// A concurrent append of the same position waits for the row lock, and
// PostgreSQL then re-checks the conditions against the committed row, so
// of two such appends exactly one matches.
const appendSQL = `
WITH r AS (
	UPDATE hitch_runs SET
		position = $4 + cardinality($8::text[]),
		status = coalesce($5::text, status),
		lease_owner = CASE WHEN $5::text IS NULL OR $5::text = 'running' THEN lease_owner ELSE '' END,
		lease_expires = CASE WHEN $5::text IS NULL OR $5::text = 'running' THEN lease_expires END,
		wake_at = CASE WHEN $5::text IS NULL THEN wake_at WHEN $5::text = 'waiting' THEN $6::timestamptz END,
		outcome = CASE WHEN $5::text IN ('completed', 'failed', 'cancelled', 'answer_invalid', 'budget_exhausted')
			THEN $7::json ELSE outcome END,
		updated_at = ` + nowSQL + `
	WHERE id = $2 AND lease_token = $3 AND position = $4 AND lease_owner <> ''
		AND status IN ('queued', 'running', 'waiting')
	RETURNING ` + runCols + `
), j AS (
	INSERT INTO hitch_journal (run_seq, pos, kind, at, data)
	SELECT r.seq, $4 + e.ord, e.kind, r.updated_at, e.data::json
	FROM r, unnest($8::text[], $9::text[]) WITH ORDINALITY AS e (kind, data, ord)
)
SELECT ` + runCols + ` FROM r`

// JournalAppend appends entries under a lease token at the expected
// position, optionally changing the run's status, atomically.
//
// Besides the documented errors, an append is refused with store.ErrFenced
// when the run holds no lease at all (it is queued or waiting, its lease
// released), even if the token matches: a released lease cannot write.
func (s *Store) JournalAppend(ctx context.Context, p store.JournalAppendParams) (store.Run, error) {
	if err := validateAppend(p); err != nil {
		return store.Run{}, fmt.Errorf("journal append %q: %w", p.RunID, err)
	}
	kinds, data := entryArrays(p.Entries)
	var status, outcome *string
	if p.Status != "" {
		st := string(p.Status)
		status = &st
	}
	if p.Status.Terminal() && p.Outcome != nil {
		o := string(p.Outcome)
		outcome = &o
	}
	var run store.Run
	err := s.retry(ctx, func() error {
		r, err := scanRun(s.pool.QueryRow(ctx, appendSQL, s.clockArg(), p.RunID, p.Token, p.After, status,
			nullTime(p.WakeAt), outcome, kinds, data))
		if errors.Is(err, pgx.ErrNoRows) {
			return s.refusal(ctx, s.pool, p)
		}
		run = r.run
		return err
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("journal append %q: %w", p.RunID, err)
	}
	return run, nil
}

// refusal reads a run to say why an append matched nothing.
func (s *Store) refusal(ctx context.Context, q querier, p store.JournalAppendParams) error {
	r, err := s.getRow(ctx, q, p.RunID)
	if err != nil {
		return err
	}
	if err := refused(r.run, p); err != nil {
		return err
	}
	return fmt.Errorf("%w (the append matched no run state)", store.ErrConflict)
}

// refused says why cur does not take an append of p, or nil.
func refused(cur store.Run, p store.JournalAppendParams) error {
	switch {
	case cur.Status.Terminal():
		return fmt.Errorf("%w (status %s)", store.ErrEnded, cur.Status)
	case cur.LeaseToken != p.Token || cur.LeaseOwner == "":
		return fmt.Errorf("%w (token %d, current token %d, lease owner %q)",
			store.ErrFenced, p.Token, cur.LeaseToken, cur.LeaseOwner)
	case cur.Position != p.After:
		return fmt.Errorf("%w (after %d, journal length %d)", store.ErrConflict, p.After, cur.Position)
	}
	return nil
}

// journalReadSQL reads entries in one statement, so the run's existence
// and its entries come from one snapshot: a missing run gives no row, a run
// with nothing after the offset a single row of NULLs.
const journalReadSQL = `
SELECT j.pos, j.kind, j.at, j.data::text
FROM (SELECT seq FROM hitch_runs WHERE id = $1) AS r
LEFT JOIN LATERAL (
	SELECT pos, kind, at, data FROM hitch_journal
	WHERE run_seq = r.seq AND pos > $2 ORDER BY pos LIMIT $3
) AS j ON true
ORDER BY j.pos`

// JournalRead returns a run's entries after an offset, in order. A run that
// does not exist gives store.ErrNotFound.
func (s *Store) JournalRead(ctx context.Context, p store.JournalReadParams) ([]store.Entry, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	limit := p.Limit
	switch {
	case limit == 0:
		limit = store.DefaultReadLimit
	case limit < 0 || limit > MaxReadLimit:
		return nil, fmt.Errorf("journal read %q: limit %d is outside 0..%d", p.RunID, p.Limit, MaxReadLimit)
	}
	if p.After < 0 {
		return nil, fmt.Errorf("journal read %q: after %d is negative", p.RunID, p.After)
	}
	rows, err := s.pool.Query(ctx, journalReadSQL, p.RunID, p.After, limit)
	if err != nil {
		return nil, fmt.Errorf("journal read %q: %w", p.RunID, err)
	}
	defer rows.Close()
	found := false
	entries := make([]store.Entry, 0, min(limit, 64))
	for rows.Next() {
		found = true
		var (
			pos        *int64
			kind, data *string
			at         *time.Time
		)
		if err := rows.Scan(&pos, &kind, &at, &data); err != nil {
			return nil, fmt.Errorf("journal read %q: %w", p.RunID, err)
		}
		if pos == nil {
			continue // the run exists but has nothing after p.After
		}
		entries = append(entries, store.Entry{RunID: p.RunID, Pos: *pos, Kind: *kind, At: at.UTC(), Data: json.RawMessage(*data)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal read %q: %w", p.RunID, err)
	}
	if !found {
		return nil, fmt.Errorf("journal read %q: %w", p.RunID, store.ErrNotFound)
	}
	return entries, nil
}
