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

func (s *Store) JournalAppend(ctx context.Context, p store.JournalAppendParams) (store.Appended, error) {
	if err := validateAppend(p); err != nil {
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
			err := tx.appendFenced.QueryRow(p.After+int64(len(p.Entries)), now, p.RunID, p.Token, p.After).Scan(&seq, &status, &out.LeaseOwner, &cancel)
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
			run, err := tx.appendChanging(p)
			out = store.Appended{Position: run.Position, Status: run.Status, LeaseOwner: run.LeaseOwner, CancelRequested: run.CancelRequested}
			return err
		})
	}
	if err != nil {
		return store.Appended{}, fmt.Errorf("journal append %q: %w", p.RunID, err)
	}
	return out, nil
}

// appendChanging is an append that changes the status or charges the
// family budget: several statements, in the request's savepoint.
func (tx *wtx) appendChanging(p store.JournalAppendParams) (store.Run, error) {
	now := micros(tx.now)
	r, err := tx.getRow(p.RunID)
	if err != nil {
		return store.Run{}, err
	}
	cur := r.run
	if err := refused(cur, p); err != nil {
		return store.Run{}, err
	}
	if p.Charge != nil {
		if err := tx.chargeFor(cur, *p.Charge); err != nil {
			return store.Run{}, err
		}
	}
	if err := tx.insertEntries(r.seq, p.After, p.Entries, now); err != nil {
		return store.Run{}, err
	}
	status, owner, expires := cur.Status, cur.LeaseOwner, micros(cur.LeaseExpires)
	if p.Status != "" {
		status = p.Status
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
		wake = micros(cur.WakeAt)
	}
	r, err = scanRun(tx.appendRun.QueryRow(p.After+int64(len(p.Entries)), string(status), owner, expires,
		wake, outcome, now, r.seq))
	if err != nil {
		return store.Run{}, err
	}
	if p.Status.Terminal() {
		return r.run, tx.endFamily(r.run, now)
	}
	return r.run, nil
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
	if _, err := tx.cancelChildren.Exec(now, run.ID); err != nil {
		return fmt.Errorf("cancel children: %w", err)
	}
	if run.ParentID != "" {
		if _, err := tx.wakeParent.Exec(now, run.ParentID); err != nil {
			return fmt.Errorf("wake parent: %w", err)
		}
	}
	return nil
}

func validateAppend(p store.JournalAppendParams) error {
	if err := store.CheckName("run id", p.RunID, true); err != nil {
		return err
	}
	switch {
	case p.After < 0:
		return fmt.Errorf("after %d is negative", p.After)
	case p.Status != "" && !p.Status.Valid():
		return fmt.Errorf("unknown status %q", p.Status)
	case len(p.Entries) == 0 && p.Status == "" && p.Charge == nil:
		return errors.New("nothing to append: no entries, no status and no charge")
	case !p.WakeAt.IsZero() && p.Status != hitchtype.StatusWaiting:
		return fmt.Errorf("wake at is set but the status is %q, not waiting", p.Status)
	case p.Outcome != nil && !p.Status.Terminal():
		return fmt.Errorf("outcome is set but the status %q is not terminal", p.Status)
	}
	if p.Outcome != nil {
		if len(p.Outcome) > MaxEntryBytes {
			return fmt.Errorf("outcome is %d bytes, more than %d", len(p.Outcome), MaxEntryBytes)
		}
		if !json.Valid(p.Outcome) {
			return errors.New("outcome is not valid JSON")
		}
	}
	if p.Charge != nil {
		if err := store.CheckName("charge root id", p.Charge.RootID, false); err != nil {
			return err
		}
	}
	return store.CheckEntries(p.Entries)
}

// JournalRead returns a run's entries after an offset, in order.
// A run that does not exist gives store.ErrNotFound.
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
	if err := store.CheckKinds(p.Kinds); err != nil {
		return nil, fmt.Errorf("journal read %q: %w", p.RunID, err)
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
	var err error
	if kinds == "" {
		s.prepareReads()
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
	found := false
	var length int64
	entries := make([]store.Entry, 0, min(limit, 64))
	for rows.Next() {
		found = true
		var (
			pos  sql.NullInt64
			kind sql.NullString
			at   sql.NullInt64
			data sql.NullString
		)
		if err := rows.Scan(&length, &pos, &kind, &at, &data); err != nil {
			return nil, fmt.Errorf("journal read %q: %w", p.RunID, err)
		}
		if !pos.Valid {
			continue // the run exists but has nothing after p.After
		}
		entries = append(entries, store.Entry{
			RunID: p.RunID,
			Pos:   pos.Int64,
			Kind:  kind.String,
			At:    fromMicros(at.Int64),
			Data:  json.RawMessage(data.String),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal read %q: %w", p.RunID, err)
	}
	if !found {
		return nil, fmt.Errorf("journal read %q: %w", p.RunID, store.ErrNotFound)
	}
	if len(p.Kinds) > 0 {
		return entries, nil // positions between the kinds asked for are not read
	}
	if err := whole(entries, p.After, length, limit); err != nil {
		return nil, fmt.Errorf("journal read %q: %w", p.RunID, err)
	}
	return entries, nil
}

// whole checks that entries hold every position from after+1 up to the
// journal's length, as far as limit reaches. A gap means a row was lost
// behind the store's back: answering without it would fold a wrong state.
func whole(entries []store.Entry, after, length int64, limit int) error {
	for i, e := range entries {
		if want := after + 1 + int64(i); e.Pos != want {
			return fmt.Errorf("%w: position %d is missing from the journal (next stored is %d)", store.ErrCorrupt, want, e.Pos)
		}
	}
	if want := min(max(length-after, 0), int64(limit)); int64(len(entries)) < want {
		return fmt.Errorf("%w: position %d is missing from the journal of length %d", store.ErrCorrupt,
			after+int64(len(entries))+1, length)
	}
	return nil
}
