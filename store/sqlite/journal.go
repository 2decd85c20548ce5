package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// JournalAppend appends entries under a lease token at the expected position,
// optionally changing the run's status, in one transaction.
//
// Besides the documented errors, an append is refused with store.ErrFenced
// when the run holds no lease at all (it is queued or waiting, its lease
// released), even if the token matches: a released lease cannot write.
// refusal reads a run to say why a fenced append was refused.
func (tx *wtx) refusal(p store.JournalAppendParams) error {
	r, err := tx.getRow(p.RunID)
	if err != nil {
		return err
	}
	if err := store.Refused(r.run, p); err != nil {
		return err
	}
	return fmt.Errorf("%w (the append matched no run state)", store.ErrConflict)
}

func (s *Store) JournalAppend(ctx context.Context, p store.JournalAppendParams) (store.Appended, error) {
	if err := store.CheckAppend(p); err != nil {
		return store.Appended{}, fmt.Errorf("journal append %q: %w", p.RunID, err)
	}
	var out store.Appended
	var err error
	if p.Status == "" && p.Charge == nil {
		// The common case in one statement, in no savepoint of its own:
		// refused, it wrote nothing; failing otherwise, it takes the shared
		// transaction down and the others are tried again.
		err = s.writeFenced(ctx, func(tx *wtx) error {
			now := micros(tx.now)
			var seq, cancel int64
			var status string
			err := tx.appendFenced.queryRowRaw([]any{&seq, &status, &out.LeaseOwner, &cancel},
				p.After+int64(len(p.Entries)), now, p.RunID, p.Token, p.After)
			if errors.Is(err, sql.ErrNoRows) {
				return tx.refusal(p) // on refusal, read the row to say why
			}
			if err != nil {
				return err
			}
			out.Position, out.Status, out.CancelRequested = p.After+int64(len(p.Entries)), hitchtype.Status(status), cancel != 0
			return tx.insertEntries(seq, p.After, p.Entries, now)
		})
	} else {
		err = s.write(ctx, func(tx *wtx) error {
			var err error
			out, err = tx.appendChanging(p)
			return err
		})
	}
	if err != nil {
		return store.Appended{}, fmt.Errorf("journal append %q: %w", p.RunID, err)
	}
	return out, nil
}

// appendChanging is an append that changes the status or charges the
// family budget: several statements, in the request's savepoint. It reads
// and returns only the run's columns it uses (see appendRead), not the
// whole row: a runner ends each run with one.
func (tx *wtx) appendChanging(p store.JournalAppendParams) (store.Appended, error) {
	now := micros(tx.now)
	var (
		cur                          store.Run
		seq, leaseExpires, wakeAt, c int64
		status                       string
	)
	err := tx.appendRead.queryRowRaw([]any{&seq, &cur.RootID, &cur.ParentID, &status, &cur.Position,
		&cur.LeaseOwner, &cur.LeaseToken, &leaseExpires, &wakeAt, &c}, p.RunID)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Appended{}, store.ErrNotFound
	}
	if err != nil {
		return store.Appended{}, err
	}
	cur.ID, cur.Status, cur.CancelRequested = p.RunID, hitchtype.Status(status), c != 0
	if err := store.Refused(cur, p); err != nil {
		return store.Appended{}, err
	}
	if p.Charge != nil {
		if err := tx.chargeFor(cur, *p.Charge); err != nil {
			return store.Appended{}, err
		}
	}
	if err := tx.insertEntries(seq, p.After, p.Entries, now); err != nil {
		return store.Appended{}, err
	}
	owner, expires := cur.LeaseOwner, leaseExpires
	if p.Status != "" {
		status = string(p.Status)
	}
	if p.Status != "" && p.Status != hitchtype.StatusRunning {
		owner, expires = "", 0 // the lease is released with the status change
	}
	var wake int64
	if p.Status == hitchtype.StatusWaiting {
		wake = micros(p.WakeAt)
		if cur.CancelRequested && (wake == 0 || wake > now) {
			wake = now // a run asked to cancel does not park: it is due at once
		}
	}
	var outcome sql.NullString // outcome is only ever set on a terminal run, which cannot get here
	if p.Status.Terminal() && p.Outcome != nil {
		outcome = sql.NullString{String: string(p.Outcome), Valid: true}
	}
	if p.Status == "" {
		wake = wakeAt
	}
	var out store.Appended
	err = tx.appendRun.queryRowRaw([]any{&out.Position, &status, &out.LeaseOwner, &c},
		p.After+int64(len(p.Entries)), status, owner, expires, wake, outcome, now, seq)
	if err != nil {
		return store.Appended{}, err
	}
	out.Status, out.CancelRequested = hitchtype.Status(status), c != 0
	if p.Status.Terminal() {
		return out, tx.endFamily(cur, now)
	}
	if owner == "" && (out.Status != hitchtype.StatusWaiting || (wake != 0 && wake <= now)) {
		tx.mayBeDue() // released, and claimable now: a later wake is the sweep's
	}
	return out, nil
}

// chargeFor charges c, carried by an append to run, to the run's family.
func (tx *wtx) chargeFor(run store.Run, c store.BudgetCharge) error {
	if c.RootID == "" {
		c.RootID = run.RootID
	}
	if c.RootID != run.RootID {
		return fmt.Errorf("charge: root id %q is not the run's root %q", c.RootID, run.RootID)
	}
	root, err := tx.getRow(c.RootID)
	if err != nil {
		return fmt.Errorf("charge: root %q: %w", c.RootID, err)
	}
	_, err = tx.charge(root.seq, c)
	return err
}

// endFamily does what a run's end does to its family: its live children are
// asked to cancel (a waiting child becomes due), and a waiting parent becomes
// due so that it sees the end.
func (tx *wtx) endFamily(run store.Run, now int64) error {
	res, err := tx.cancelChildren.Exec(now, run.ID)
	if err != nil {
		return fmt.Errorf("cancel children: %w", err)
	}
	if n, _ := res.RowsAffected(); n > 0 || run.ParentID != "" {
		tx.mayBeDue()
	}
	if run.ParentID != "" {
		if _, err := tx.wakeParent.Exec(now, run.ParentID); err != nil {
			return fmt.Errorf("wake parent: %w", err)
		}
	}
	return nil
}

// JournalRead returns a run's entries after an offset, in order.
// A run that does not exist gives store.ErrNotFound.
func (s *Store) JournalRead(ctx context.Context, p store.JournalReadParams) ([]store.Entry, error) {
	limit, err := store.CheckJournalRead(p)
	if err := s.ready(err, "journal read", p.RunID); err != nil {
		return nil, err
	}
	// One statement, so the existence check and the entries come from the
	// same snapshot: a missing run is the single row with a NULL position.
	args := []any{p.RunID, p.After, limit}
	kinds := ""
	if len(p.Kinds) > 0 {
		marks := make([]string, len(p.Kinds))
		for i, k := range p.Kinds {
			marks[i] = fmt.Sprintf("?%d", len(args)+1)
			args = append(args, k)
		}
		kinds = " AND j.kind IN (" + strings.Join(marks, ", ") + ")"
	}
	var rows *sql.Rows
	if kinds == "" {
		rows, err = s.query(ctx, s.reads.journal, journalSQL, args...)
	} else {
		rows, err = s.rdb.QueryContext(ctx, `
		SELECT r.position, j.pos, j.kind, j.at, j.data
		FROM (SELECT seq, position FROM runs WHERE id = ?1) AS r
		LEFT JOIN journal AS j ON j.run_seq = r.seq AND j.pos > ?2`+kinds+`
		ORDER BY j.pos LIMIT ?3`, args...)
	}
	if err != nil {
		return nil, fmt.Errorf("journal read %q: %w", p.RunID, err)
	}
	defer rows.Close()
	entries, err := store.JournalEntries(rows, p, limit, func() (int64, store.Entry, bool, error) {
		var (
			length int64
			pos    sql.NullInt64
			kind   sql.NullString
			at     sql.NullInt64
			data   sql.NullString
		)
		if err := rows.Scan(&length, &pos, &kind, &at, &data); err != nil {
			return 0, store.Entry{}, false, err
		}
		// A NULL position: the run exists but has nothing after p.After.
		return length, store.Entry{
			RunID: p.RunID,
			Pos:   pos.Int64,
			Kind:  kind.String,
			At:    fromMicros(at.Int64),
			Data:  json.RawMessage(data.String),
		}, pos.Valid, nil
	})
	return store.Result(entries, err, "journal read", p.RunID)
}

// JournalReadMany implements store.Store: one statement reads the heads of
// every journal asked for, on the read pool.
func (s *Store) JournalReadMany(ctx context.Context, p store.JournalReadManyParams) ([][]store.Entry, error) {
	limit, err := store.CheckReadMany(p)
	if err := s.ready(err, "journal read many", ""); err != nil {
		return nil, err
	}
	if len(p.RunIDs) == 0 {
		return [][]store.Entry{}, nil
	}
	args := make([]any, 0, len(p.RunIDs)+1)
	args = append(args, limit)
	marks := make([]string, len(p.RunIDs))
	for i, id := range p.RunIDs {
		args = append(args, id)
		marks[i] = fmt.Sprintf("?%d", i+2)
	}
	// Positions run from 1 without gaps, so the first limit entries are
	// those at positions up to limit: the primary key reads them in order.
	rows, err := s.rdb.QueryContext(ctx, `
	SELECT r.id, r.position, j.pos, j.kind, j.at, j.data
	FROM runs AS r
	LEFT JOIN journal AS j ON j.run_seq = r.seq AND j.pos <= ?1
	WHERE r.id IN (`+strings.Join(marks, ", ")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("journal read many: %w", err)
	}
	defer rows.Close()
	out, err := store.JournalHeads(rows, p.RunIDs, limit, func() (string, int64, store.Entry, bool, error) {
		var (
			id     string
			length int64
			pos    sql.NullInt64
			kind   sql.NullString
			at     sql.NullInt64
			data   sql.NullString
		)
		if err := rows.Scan(&id, &length, &pos, &kind, &at, &data); err != nil {
			return "", 0, store.Entry{}, false, err
		}
		return id, length, store.Entry{RunID: id, Pos: pos.Int64, Kind: kind.String, At: fromMicros(at.Int64),
			Data: json.RawMessage(data.String)}, pos.Valid, nil
	})
	return store.Result(out, err, "journal read many", "")
}
