package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

const runColumns = `seq, id, root_id, parent_id, depth, agent, version, input_hash, status, position,
	lease_owner, lease_token, lease_expires, wake_at, cancel_requested, outcome, created_at, updated_at, tenant, title,
	cancel_by, cancel_reason, forked_from`

// row is a runs row: the run plus its internal key.
type row struct {
	seq int64
	run store.Run
}

type scanner = store.Scanner

func scanRun(sc scanner) (row, error) {
	var (
		r                                  row
		status                             string
		leaseExpires, wakeAt, created, upd int64
		cancel                             int64
		outcome                            sql.NullString
		forked                             string
	)
	err := sc.Scan(&r.seq, &r.run.ID, &r.run.RootID, &r.run.ParentID, &r.run.Depth, &r.run.Agent,
		&r.run.Version, &r.run.InputHash, &status, &r.run.Position, &r.run.LeaseOwner,
		&r.run.LeaseToken, &leaseExpires, &wakeAt, &cancel, &outcome, &created, &upd, &r.run.Tenant, &r.run.Title,
		&r.run.CancelBy, &r.run.CancelReason, &forked)
	if err != nil {
		return row{}, err
	}
	if r.run.ForkedFrom, err = store.ParseForked(r.run.ID, forked); err != nil {
		return row{}, err
	}
	r.run.Status = hitchtype.Status(status)
	r.run.LeaseExpires = fromMicros(leaseExpires)
	r.run.WakeAt = fromMicros(wakeAt)
	r.run.CancelRequested = cancel != 0
	if outcome.Valid {
		r.run.Outcome = json.RawMessage(outcome.String)
	}
	r.run.CreatedAt = fromMicros(created)
	r.run.UpdatedAt = fromMicros(upd)
	return r, nil
}

// getRow reads one run inside the writer's transaction.
func (tx *wtx) getRow(id string) (row, error) {
	r, err := scanRun(tx.runByID.QueryRow(id))
	if errors.Is(err, sql.ErrNoRows) {
		return row{}, store.ErrNotFound
	}
	return r, err
}

// RunCreate creates a queued run with its first journal entries, or returns
// the existing run with created=false when the ID is taken.
func (s *Store) RunCreate(ctx context.Context, p store.RunCreateParams) (store.Run, bool, error) {
	return store.CreateRun(s.createOrGet).Create(ctx, p)
}

func (s *Store) createOrGet(ctx context.Context, p store.RunCreateParams) (run store.Run, created bool, err error) {
	// A creation goes ahead of the queued appends: a start is answered
	// (and its run driven) after one short commit, not after a batch. It
	// needs no savepoint of its own: its first write is the one statement
	// that either inserts the run or, the ID being taken, writes nothing.
	err = s.writeUrgentFenced(ctx, func(tx *wtx) error {
		tenant, err := tx.tenantOf(p)
		if err != nil {
			// A run that exists is returned whatever its creation asks.
			if old, oldErr := tx.getRow(p.ID); oldErr == nil {
				run = old.run
				return nil
			}
			return err
		}
		r, ok, err := tx.insertNew(p, tenant)
		if err != nil || ok {
			run, created = r.run, ok
			return err
		}
		old, err := tx.getRow(p.ID)
		run = old.run
		return err
	})
	return run, created, err
}

// insertNew inserts a new run of tenant with its first entries and, for a
// root, its budget. When the ID is taken it writes nothing and returns
// ok=false. The run returned is built from what was inserted rather than
// read back: a creation is the writer's most frequent statement after the
// appends, and reading back its two dozen columns cost a fifth of it.
func (tx *wtx) insertNew(p store.RunCreateParams, tenant string) (r row, ok bool, err error) {
	now := micros(tx.now)
	// The lease the run is created with: an empty owner for none.
	owner, expires, token, status := "", int64(0), int64(0), hitchtype.StatusQueued
	if p.Lease != nil {
		owner, expires, token, status = p.Lease.Owner, now+p.Lease.TTL.Microseconds(), 1, hitchtype.StatusRunning
	}
	title, forked := store.Title(p.Title), store.ForkedText(p.ForkedFrom)
	err = tx.insertRun.queryRowRaw([]any{&r.seq}, p.ID, p.RootID, p.ParentID, p.Depth, p.Agent, p.Version,
		p.InputHash, len(p.Entries), now, now, tenant, title, owner, expires, forked)
	if errors.Is(err, sql.ErrNoRows) {
		return row{}, false, nil
	}
	if err != nil {
		return row{}, false, fmt.Errorf("insert run: %w", err)
	}
	r.run = store.Run{
		ID: p.ID, RootID: p.RootID, ParentID: p.ParentID, Depth: p.Depth, Tenant: tenant,
		Agent: p.Agent, Version: p.Version, InputHash: p.InputHash, Status: status,
		Position: int64(len(p.Entries)), LeaseOwner: owner, LeaseToken: token,
		LeaseExpires: fromMicros(expires), CreatedAt: fromMicros(now), UpdatedAt: fromMicros(now),
		Title: title,
	}
	if r.run.ForkedFrom, err = store.ParseForked(p.ID, forked); err != nil {
		return row{}, false, err
	}
	if err := tx.insertEntries(r.seq, 0, p.Entries, now); err != nil {
		return row{}, false, err
	}
	if p.Budget != nil && p.ParentID == "" {
		b, _ := json.Marshal(p.Budget)
		if _, err := tx.budgetNew.Exec(r.seq, string(b)); err != nil {
			return row{}, false, fmt.Errorf("insert budget: %w", err)
		}
	}
	if p.Lease == nil {
		tx.mayBeDue() // a run born leased is its creator's to drive
	}
	return r, true, nil
}

// tenantOf is the tenant a new run gets (see store.ResolveTenant): its
// root's, when it is not a root and the root exists.
func (tx *wtx) tenantOf(p store.RunCreateParams) (string, error) {
	var root string
	if p.RootID != p.ID {
		r, err := tx.getRow(p.RootID)
		switch {
		case err == nil:
			root = r.run.Tenant
		case !errors.Is(err, store.ErrNotFound):
			return "", err
		}
	}
	return store.ResolveTenant(p.Tenant, root)
}

// insertEntries writes entries at positions after+1.., up to
// maxBatchInsert in one statement.
func (tx *wtx) insertEntries(seq, after int64, es []store.EntryInput, at int64) error {
	if tx.args == nil {
		tx.args = make([]any, 0, 5*maxBatchInsert)
	}
	boxedSeq, boxedAt := any(seq), any(at) // boxed once for every row
	for len(es) > 0 {
		n := min(len(es), maxBatchInsert)
		args := tx.args[:0]
		for i, e := range es[:n] {
			args = append(args, boxedSeq, after+int64(i)+1, e.Kind, boxedAt, string(e.Data))
		}
		err := tx.insertMany[n-1].execRaw(context.Background(), args...)
		clear(args) // keep no entry's data alive past the statement
		if err != nil {
			return fmt.Errorf("insert entries %d–%d: %w", after+1, after+int64(n), err)
		}
		es, after = es[n:], after+int64(n)
	}
	return nil
}

// RunGet returns one run, or store.ErrNotFound.
func (s *Store) RunGet(ctx context.Context, id string) (store.Run, error) {
	if s.closed.Load() {
		return store.Run{}, ErrClosed
	}
	r, err := scanRun(s.queryRow(ctx, s.reads.runGet, runGetSQL, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Run{}, fmt.Errorf("run get %q: %w", id, store.ErrNotFound)
	}
	return store.Result(r.run, err, "run get", id)
}

// RunCancelRequested returns the runs leased to p.Owner with a cancel
// pending, a page in order of id, from the partial index that holds only
// such runs.
func (s *Store) RunCancelRequested(ctx context.Context, p store.RunCancelRequestedParams) ([]string, error) {
	limit, err := store.CheckCancelRequested(p)
	if err := s.ready(err, "run cancel requested", ""); err != nil {
		return nil, err
	}
	// The conditions repeat runs_cancel_pending's, so the planner uses it.
	out, err := readAll(ctx, s, scanID, `SELECT id FROM runs
		WHERE lease_owner = ? AND id > ? AND cancel_requested = 1 AND status IN ('queued', 'running', 'waiting')
		ORDER BY id LIMIT ?`, p.Owner, p.After, limit)
	return store.Result(out, err, "run cancel requested", "")
}

// RunList returns runs newest first (by creation time, then id), or oldest
// first. A list of several statuses merges one index walk per status, so
// that a page reads at most its limit of runs of each.
func (s *Store) RunList(ctx context.Context, p store.RunListParams) ([]store.Run, error) {
	limit, after, err := store.CheckList(p)
	if err := s.ready(err, "run list", ""); err != nil {
		return nil, err
	}
	where, args := runFilter(p)
	cmp, order := "<", " ORDER BY created_at DESC, id DESC"
	if p.Oldest {
		cmp, order = ">", " ORDER BY created_at, id"
	}
	if p.After != "" {
		// The first term bounds the index walk; the second breaks ties.
		at := micros(after.CreatedAt)
		where = append(where, "created_at "+cmp+"= ? AND (created_at "+cmp+" ? OR id "+cmp+" ?)")
		args = append(args, at, at, after.ID)
	}
	statuses := store.ListStatuses(p)
	var q string
	switch {
	case len(statuses) <= 1:
		if len(statuses) == 1 {
			where = append(where, "status = ?")
			args = append(args, string(statuses[0]))
		}
		q = `SELECT ` + runColumns + ` FROM runs` + whereClause(where) + order + " LIMIT ?"
		args = append(args, limit)
	default:
		parts := make([]string, len(statuses))
		all := make([]any, 0, len(statuses)*(len(args)+2)+1)
		for i, st := range statuses {
			parts[i] = `SELECT * FROM (SELECT ` + runColumns + ` FROM runs` +
				whereClause(append(slices.Clone(where), "status = ?")) + order + " LIMIT ?)"
			all = append(append(all, args...), string(st), limit)
		}
		q = strings.Join(parts, " UNION ALL ") + order + " LIMIT ?"
		args = append(all, limit)
	}
	runs, err := readAll(ctx, s, scanRunOnly, q, args...)
	return store.Result(runs, err, "run list", "")
}

func whereClause(terms []string) string {
	if len(terms) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(terms, " AND ")
}

// runFilter is the WHERE clause of RunList's filters, but the cursor and
// the statuses.
func runFilter(p store.RunListParams) (where []string, args []any) {
	for _, f := range []struct{ col, v string }{
		{"tenant", p.Tenant}, {"agent", p.Agent}, {"parent_id", p.ParentID}, {"root_id", p.RootID},
	} {
		if f.v != "" {
			where = append(where, f.col+" = ?")
			args = append(args, f.v)
		}
	}
	if p.ParentID != "" {
		where = append(where, "parent_id <> ''") // to use runs_parent, which holds no roots
	}
	if !p.CreatedAfter.IsZero() {
		where = append(where, "created_at >= ?")
		args = append(args, micros(p.CreatedAfter))
	}
	if !p.CreatedBefore.IsZero() {
		where = append(where, "created_at < ?")
		args = append(args, micros(p.CreatedBefore))
	}
	if len(p.Reasons) > 0 {
		marks := make([]string, 0, len(p.Reasons))
		for _, r := range slices.Compact(slices.Sorted(slices.Values(p.Reasons))) {
			marks = append(marks, "?")
			args = append(args, r)
		}
		// The expression of the runs_tenant_reason index, word for word.
		where = append(where, "coalesce(json_extract(outcome, '$.reason'), '') IN ("+strings.Join(marks, ", ")+")")
	}
	if p.Text != "" {
		// LIKE ignores ASCII case in SQLite.
		like := store.LikePattern(p.Text)
		where = append(where, `(id LIKE ? ESCAPE '\' OR agent LIKE ? ESCAPE '\' OR title LIKE ? ESCAPE '\')`)
		args = append(args, like, like, like)
	}
	return where, args
}

// RunCountsFor counts runs by status among those p's filters select. Of
// one tenant or all, without other filters, it reads run_counts, which
// triggers keep; other filters count at most store.MaxFilteredCount runs
// of each status, one index walk per status.
func (s *Store) RunCountsFor(ctx context.Context, p store.RunListParams) (map[hitchtype.Status]int, error) {
	plan, err := store.PlanCounts(p)
	if err := s.ready(err, "run counts", ""); err != nil {
		return nil, err
	}
	where, args := runFilter(plan.Params)
	var q string
	if plan.Kept {
		if len(plan.Statuses) > 0 {
			where = append(where, "status IN ("+strings.Repeat("?, ", len(plan.Statuses)-1)+"?)")
			for _, st := range plan.Statuses {
				args = append(args, string(st))
			}
		}
		q = `SELECT status, sum(n) FROM run_counts` + whereClause(where) + " GROUP BY status"
	} else {
		parts := make([]string, len(plan.Statuses))
		all := make([]any, 0, len(plan.Statuses)*(len(args)+3))
		for i, st := range plan.Statuses {
			parts[i] = `SELECT ?, (SELECT count(*) FROM (SELECT 1 FROM runs` +
				whereClause(append(slices.Clone(where), "status = ?")) + ` LIMIT ?))`
			all = append(append(append(all, string(st)), args...), string(st), store.MaxFilteredCount)
		}
		q, args = strings.Join(parts, " UNION ALL "), all
	}
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("run counts: %w", err)
	}
	defer rows.Close()
	out, err := store.CollectCounts(rows)
	return store.Result(out, err, "run counts", "")
}

// RunRequestCancel records a cancel request; a waiting run becomes due now.
func (s *Store) RunRequestCancel(ctx context.Context, p store.RunRequestCancelParams) (store.Run, error) {
	id := p.ID
	if err := store.CheckCancelNote(p); err != nil {
		return store.Run{}, fmt.Errorf("run request cancel %q: %w", id, err)
	}
	var run store.Run
	err := s.write(ctx, func(tx *wtx) error {
		r, err := tx.getRow(id)
		if err != nil {
			return err
		}
		run = r.run
		now := micros(tx.now)
		waitingNotDue := r.run.Status == hitchtype.StatusWaiting &&
			(r.run.WakeAt.IsZero() || micros(r.run.WakeAt) > now)
		if r.run.Status.Terminal() || (r.run.CancelRequested && !waitingNotDue) {
			return nil // nothing left to change
		}
		wake := micros(r.run.WakeAt)
		if waitingNotDue {
			wake = now
		}
		r, err = scanRun(tx.cancel.QueryRow(wake, now, p.By, p.Reason, r.seq))
		run = r.run
		tx.mayBeDue()
		return err
	})
	return store.Result(run, err, "run request cancel", id)
}
