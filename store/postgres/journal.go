package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// appendWith is an append in one statement's common table expressions: it
// moves the journal's length and sets the status only when the token, a
// held lease and the position are right, and inserts the entries from the
// same row, so a refused append writes nothing. $5 is the new status or
// NULL.
//
// A concurrent append of the same position waits for the row lock, and
// PostgreSQL then re-checks the conditions against the committed row, so
// of two such appends exactly one matches.
const appendWith = `
WITH r AS (
	UPDATE hitch_runs SET
		position = $4 + cardinality($8::text[]),
		status = coalesce($5::text, status),
		lease_owner = CASE WHEN $5::text IS NULL OR $5::text = 'running' THEN lease_owner ELSE '' END,
		lease_expires = CASE WHEN $5::text IS NULL OR $5::text = 'running' THEN lease_expires END,
		wake_at = CASE WHEN $5::text IS NULL THEN wake_at
			WHEN $5::text = 'waiting' AND cancel_requested
				THEN least(coalesce($6::timestamptz, ` + nowSQL + `), ` + nowSQL + `)
			WHEN $5::text = 'waiting' THEN $6::timestamptz END,
		outcome = CASE WHEN $5::text IN ('completed', 'failed', 'cancelled', 'answer_invalid', 'budget_exhausted')
			THEN $7::json ELSE outcome END,
		updated_at = ` + nowSQL + `
	WHERE id = $2 AND lease_token = $3 AND position = $4 AND lease_owner <> ''
		AND status IN ('queued', 'running', 'waiting')
	RETURNING seq, id, root_id, parent_id, position, status, lease_owner, cancel_requested, updated_at
), j AS (
	INSERT INTO hitch_journal (run_seq, pos, kind, at, data)
	SELECT r.seq, $4 + e.ord, e.kind, r.updated_at, e.data::json
	FROM r, unnest($8::text[], $9::text[]) WITH ORDINALITY AS e (kind, data, ord)
)`

// appendSQL is an append that does not end its run.
const appendSQL = appendWith + `
SELECT ` + appendedCols + ` FROM r`

// endSQL is an append that ends its run, carrying the end to its family in
// the same statement: its live children are asked to cancel and a waiting
// one made due at the end's time (the change a cancel request makes), its
// waiting parent is made due then, unless it is due earlier. The run's row
// is locked first, then its children's, then its parent's; a deadlock with
// a child ending at the same moment is broken by PostgreSQL and the
// statement tried again.
const endSQL = appendWith + `, k AS (
	UPDATE hitch_runs AS c SET cancel_requested = true,
		wake_at = CASE WHEN c.status = 'waiting' AND (c.wake_at IS NULL OR c.wake_at > r.updated_at) THEN r.updated_at ELSE c.wake_at END,
		updated_at = r.updated_at
	FROM r
	WHERE c.parent_id = r.id AND c.parent_id <> '' AND c.status IN ('queued', 'running', 'waiting')
		AND (NOT c.cancel_requested OR (c.status = 'waiting' AND (c.wake_at IS NULL OR c.wake_at > r.updated_at)))
), w AS (
	UPDATE hitch_runs AS p SET wake_at = r.updated_at, updated_at = r.updated_at
	FROM r
	WHERE p.id = r.parent_id AND r.parent_id <> '' AND p.status = 'waiting' AND (p.wake_at IS NULL OR p.wake_at > r.updated_at)
)
SELECT ` + appendedCols + ` FROM r`

// appendedCols are what an append reads back: what the runner needs, and
// the family's root for a charge.
const appendedCols = `root_id, position, status, lease_owner, cancel_requested`

// appendedRow is a row of appendedCols.
type appendedRow struct {
	rootID string
	out    store.Appended
}

func scanAppended(sc pgx.Row) (appendedRow, error) {
	var a appendedRow
	var status string
	err := sc.Scan(&a.rootID, &a.out.Position, &status, &a.out.LeaseOwner, &a.out.CancelRequested)
	a.out.Status = hitchtype.Status(status)
	return a, err
}

// JournalAppend appends entries under a lease token at the expected
// position, optionally changing the run's status, atomically.
//
// Besides the documented errors, an append is refused with store.ErrFenced
// when the run holds no lease at all (it is queued or waiting, its lease
// released), even if the token matches: a released lease cannot write.
//
// Appends that charge no budget and do not end the run are committed
// together with the other runners' appends of this store (see group.go);
// one that ends its run and charges nothing is one statement, and one that
// charges a budget a transaction of its own.
func (s *Store) JournalAppend(ctx context.Context, p store.JournalAppendParams) (store.Appended, error) {
	if err := store.CheckAppend(p); err != nil {
		return store.Appended{}, fmt.Errorf("journal append %q: %w", p.RunID, err)
	}
	var out store.Appended
	var err error
	switch {
	case p.Charge != nil:
		err = s.inTx(ctx, func(tx pgx.Tx) error {
			r, err := scanAppended(tx.QueryRow(ctx, appendQuery(p), s.appendArgs(p)...))
			if errors.Is(err, pgx.ErrNoRows) {
				return s.refusal(ctx, tx, p)
			}
			if err != nil {
				return err
			}
			out = r.out
			return chargeAppend(ctx, tx, r.rootID, *p.Charge)
		})
	case p.Status.Terminal():
		out, err = s.appendOne(ctx, p)
	default:
		out, err = s.appendGrouped(ctx, p)
	}
	if err != nil {
		return store.Appended{}, fmt.Errorf("journal append %q: %w", p.RunID, err)
	}
	return out, nil
}

// appendQuery is the statement of p alone: endSQL when it ends its run.
func appendQuery(p store.JournalAppendParams) string {
	if p.Status.Terminal() {
		return endSQL
	}
	return appendSQL
}

// appendArgs are appendSQL's arguments for p.
func (s *Store) appendArgs(p store.JournalAppendParams) []any {
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
	return []any{s.clockArg(), p.RunID, p.Token, p.After, status, nullTime(p.WakeAt), outcome, kinds, data}
}

// chargeAppend charges the budget of run's family inside the append's
// transaction; a refusal rolls the append back with it.
func chargeAppend(ctx context.Context, tx pgx.Tx, rootID string, c store.BudgetCharge) error {
	if c.RootID != "" && c.RootID != rootID {
		return fmt.Errorf("charge: root id %q is not the run's root %q", c.RootID, rootID)
	}
	c.RootID = rootID
	_, err := charge(ctx, tx, c)
	return err
}

// refusal reads a run to say why an append matched nothing.
func (s *Store) refusal(ctx context.Context, q querier, p store.JournalAppendParams) error {
	r, err := s.getRow(ctx, q, p.RunID)
	if err != nil {
		return err
	}
	if err := store.Refused(r.run, p); err != nil {
		return err
	}
	return fmt.Errorf("%w (the append matched no run state)", store.ErrConflict)
}

// journalReadSQL reads entries in one statement, so the run's existence,
// its length and its entries come from one snapshot: a missing run gives no
// row, a run with nothing after the offset a single row of NULL entries.
const journalReadSQL = `
SELECT r.position, j.pos, j.kind, j.at, j.data::text
FROM (SELECT seq, position FROM hitch_runs WHERE id = $1) AS r
LEFT JOIN LATERAL (
	SELECT pos, kind, at, data FROM hitch_journal
	WHERE run_seq = r.seq AND pos > $2 ORDER BY pos LIMIT $3
) AS j ON true
ORDER BY j.pos`

// journalKindsSQL is journalReadSQL keeping only the kinds in $4.
const journalKindsSQL = `
SELECT r.position, j.pos, j.kind, j.at, j.data::text
FROM (SELECT seq, position FROM hitch_runs WHERE id = $1) AS r
LEFT JOIN LATERAL (
	SELECT pos, kind, at, data FROM hitch_journal
	WHERE run_seq = r.seq AND pos > $2 AND kind = ANY($4::text[]) ORDER BY pos LIMIT $3
) AS j ON true
ORDER BY j.pos`

// JournalRead returns a run's entries after an offset, in order. A run that
// does not exist gives store.ErrNotFound.
func (s *Store) JournalRead(ctx context.Context, p store.JournalReadParams) ([]store.Entry, error) {
	limit, err := store.CheckJournalRead(p)
	if err := s.ready(err, "journal read", p.RunID); err != nil {
		return nil, err
	}
	q, args := journalReadSQL, []any{p.RunID, p.After, limit}
	if len(p.Kinds) > 0 {
		q, args = journalKindsSQL, append(args, p.Kinds)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("journal read %q: %w", p.RunID, err)
	}
	defer rows.Close()
	var (
		length int64
		row    entryRow
	)
	dest := append([]any{&length}, row.dest()...)
	entries, err := store.JournalEntries(rows, p, limit, func() (int64, store.Entry, bool, error) {
		if err := rows.Scan(dest...); err != nil {
			return 0, store.Entry{}, false, err
		}
		e, ok := row.entry(p.RunID)
		return length, e, ok, nil
	})
	return store.Result(entries, err, "journal read", p.RunID)
}

// journalManySQL reads the heads of several journals: positions run from 1
// without gaps, so the first $2 entries are those at positions up to $2.
const journalManySQL = `
SELECT u.i, r.position, j.pos, j.kind, j.at, j.data::text
FROM unnest($1::text[]) WITH ORDINALITY AS u(id, i)
JOIN hitch_runs AS r ON r.id = u.id
LEFT JOIN LATERAL (
	SELECT pos, kind, at, data FROM hitch_journal
	WHERE run_seq = r.seq AND pos <= $2 ORDER BY pos
) AS j ON true`

// JournalReadMany implements store.Store in one statement.
func (s *Store) JournalReadMany(ctx context.Context, p store.JournalReadManyParams) ([][]store.Entry, error) {
	limit, err := store.CheckReadMany(p)
	if err := s.ready(err, "journal read many", ""); err != nil {
		return nil, err
	}
	if len(p.RunIDs) == 0 {
		return [][]store.Entry{}, nil
	}
	ids := slices.Compact(slices.Sorted(slices.Values(p.RunIDs))) // each run read once
	rows, err := s.pool.Query(ctx, journalManySQL, ids, limit)
	if err != nil {
		return nil, fmt.Errorf("journal read many: %w", err)
	}
	defer rows.Close()
	var (
		i      int64 // the run's place in ids, from 1
		length int64
		row    entryRow
	)
	dest := append([]any{&i, &length}, row.dest()...)
	out, err := store.JournalHeads(rows, p.RunIDs, limit, func() (string, int64, store.Entry, bool, error) {
		if err := rows.Scan(dest...); err != nil {
			return "", 0, store.Entry{}, false, err
		}
		if i < 1 || i > int64(len(ids)) {
			return "", 0, store.Entry{}, false, fmt.Errorf("the store answered run %d of %d", i, len(ids))
		}
		e, ok := row.entry(ids[i-1])
		return ids[i-1], length, e, ok, nil
	})
	return store.Result(out, err, "journal read many", "")
}

// entryRow receives the entry columns of a journal read (pos, kind, at,
// data), each NULL where a run has no entry in the range, without
// allocating for any but the entry's data.
type entryRow struct {
	pos  pgtype.Int8
	kind pgtype.DriverBytes
	at   pgtype.Timestamptz
	data []byte
}

// dest is what rows.Scan fills, in the columns' order.
func (r *entryRow) dest() []any { return []any{&r.pos, &r.kind, &r.at, &r.data} }

// entry is the row's entry of run, if it has one.
func (r *entryRow) entry(run string) (store.Entry, bool) {
	if !r.pos.Valid {
		return store.Entry{}, false
	}
	return store.Entry{RunID: run, Pos: r.pos.Int64, Kind: store.KindName(r.kind), At: r.at.Time.UTC(), Data: json.RawMessage(r.data)}, true
}
