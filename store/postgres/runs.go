package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// runCols are a run's columns, in the order scanRun reads them.
const runCols = `seq, id, root_id, parent_id, depth, agent, version, input_hash, status, position,
	lease_owner, lease_token, lease_expires, wake_at, cancel_requested, outcome, created_at, updated_at, tenant, title,
	cancel_by, cancel_reason, forked_from`

// row is a runs row: the run plus its internal key.
type row struct {
	seq int64
	run store.Run
}

// scanRun reads runCols, then extra columns into extra.
func scanRun(sc pgx.Row, extra ...any) (row, error) {
	var (
		r                    row
		status               string
		leaseExpires, wakeAt *time.Time
		outcome              *string
		forked               string
	)
	err := sc.Scan(append([]any{&r.seq, &r.run.ID, &r.run.RootID, &r.run.ParentID, &r.run.Depth, &r.run.Agent,
		&r.run.Version, &r.run.InputHash, &status, &r.run.Position, &r.run.LeaseOwner,
		&r.run.LeaseToken, &leaseExpires, &wakeAt, &r.run.CancelRequested, &outcome, &r.run.CreatedAt, &r.run.UpdatedAt,
		&r.run.Tenant, &r.run.Title, &r.run.CancelBy, &r.run.CancelReason, &forked},
		extra...)...)
	if err != nil {
		return row{}, err
	}
	if r.run.ForkedFrom, err = store.ParseForked(r.run.ID, forked); err != nil {
		return row{}, err
	}
	r.run.Status = hitchtype.Status(status)
	r.run.LeaseExpires = utc(leaseExpires)
	r.run.WakeAt = utc(wakeAt)
	if outcome != nil {
		r.run.Outcome = json.RawMessage(*outcome)
	}
	r.run.CreatedAt = r.run.CreatedAt.UTC()
	r.run.UpdatedAt = r.run.UpdatedAt.UTC()
	return r, nil
}

func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// entryArrays splits entries into kinds and data, for unnest.
func entryArrays(es []store.EntryInput) (kinds, data []string) {
	kinds, data = make([]string, len(es)), make([]string, len(es))
	for i, e := range es {
		kinds[i], data[i] = e.Kind, string(e.Data)
	}
	return kinds, data
}

// createSQL inserts the run, its entries and its budget in one statement;
// it returns no row when the id is taken.
const createSQL = `
WITH r AS (
	INSERT INTO hitch_runs (id, root_id, parent_id, depth, agent, version, input_hash, status, position,
		created_at, updated_at, tenant, title, lease_owner, lease_token, lease_expires, forked_from)
	VALUES ($2, $3, $4, $5, $6, $7, $8, CASE WHEN $19::text = '' THEN 'queued' ELSE 'running' END,
		cardinality($9::text[]), ` + nowSQL + `, ` + nowSQL + `, $17, $18, $19::text,
		CASE WHEN $19::text = '' THEN 0 ELSE 1 END,
		CASE WHEN $19::text <> '' THEN ` + nowSQL + ` + $20::bigint * interval '1 microsecond' END, $21)
	ON CONFLICT (id) DO NOTHING
	RETURNING ` + runCols + `
), j AS (
	INSERT INTO hitch_journal (run_seq, pos, kind, at, data)
	SELECT r.seq, e.ord, e.kind, r.created_at, e.data::json
	FROM r, unnest($9::text[], $10::text[]) WITH ORDINALITY AS e (kind, data, ord)
), b AS (
	INSERT INTO hitch_budgets (root_seq, limit_tokens, limit_micro_usd, limit_model_calls, limit_tool_calls, limit_wall_ms)
	SELECT r.seq, $12, $13, $14, $15, $16 FROM r WHERE $11::boolean
)
SELECT ` + runCols + ` FROM r`

// RunCreate creates a queued run with its first journal entries, or returns
// the existing run with created=false when the ID is taken.
func (s *Store) RunCreate(ctx context.Context, p store.RunCreateParams) (store.Run, bool, error) {
	return store.CreateRun(s.createOrGet).Create(ctx, p)
}

func (s *Store) createOrGet(ctx context.Context, p store.RunCreateParams) (run store.Run, created bool, err error) {
	err = s.retry(ctx, func() error {
		tenant, err := s.tenantOf(ctx, p)
		if err != nil {
			return err
		}
		r, err := createRun(ctx, s.pool, s.clockArg(), p, tenant)
		if err == nil {
			run, created = r.run, true
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		// The id is taken. ON CONFLICT waited for its writer to commit, so
		// this statement sees the run.
		r, err = s.getRow(ctx, s.pool, p.ID)
		run, created = r.run, false
		return err
	})
	return run, created, err
}

// createRun runs createSQL for a new run of tenant, stamped with clock (a
// time, or the store clock's argument); pgx.ErrNoRows when the id is taken.
func createRun(ctx context.Context, q querier, clock any, p store.RunCreateParams, tenant string) (row, error) {
	kinds, data := entryArrays(p.Entries)
	var b store.Budget
	withBudget := p.Budget != nil && p.ParentID == ""
	if withBudget {
		b = *p.Budget
	}
	// $19 and $20: the lease the run is created with (an empty owner for none).
	var owner string
	var ttl int64
	if p.Lease != nil {
		owner, ttl = p.Lease.Owner, p.Lease.TTL.Microseconds()
	}
	return scanRun(q.QueryRow(ctx, createSQL, clock, p.ID, p.RootID, p.ParentID, p.Depth, p.Agent,
		p.Version, p.InputHash, kinds, data, withBudget, b.Tokens, b.MicroUSD, b.ModelCalls, b.ToolCalls, b.WallMS, tenant, store.Title(p.Title),
		owner, ttl, store.ForkedText(p.ForkedFrom)))
}

// tenantOf is the tenant a new run gets (see store.ResolveTenant): its
// root's, when it is not a root and the root exists. A root's tenant never
// changes, so reading it outside the insert is safe.
func (s *Store) tenantOf(ctx context.Context, p store.RunCreateParams) (string, error) {
	var root string
	if p.RootID != p.ID {
		err := s.pool.QueryRow(ctx, `SELECT tenant FROM hitch_runs WHERE id = $1`, p.RootID).Scan(&root)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return "", err
		}
	}
	return store.ResolveTenant(p.Tenant, root)
}

func (s *Store) getRow(ctx context.Context, q querier, id string) (row, error) {
	r, err := scanRun(q.QueryRow(ctx, `SELECT `+runCols+` FROM hitch_runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return row{}, store.ErrNotFound
	}
	return r, err
}

// RunGet returns one run, or store.ErrNotFound.
func (s *Store) RunGet(ctx context.Context, id string) (store.Run, error) {
	if s.closed.Load() {
		return store.Run{}, ErrClosed
	}
	r, err := s.getRow(ctx, s.pool, id)
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
	var out []string
	err = s.retry(ctx, func() error {
		var err error
		// The conditions repeat hitch_runs_cancel_pending's, so the planner uses it.
		out, err = readAll(ctx, s.pool, scanID, `SELECT id FROM hitch_runs
			WHERE lease_owner = $1 AND id > $2 AND cancel_requested AND status IN ('queued', 'running', 'waiting')
			ORDER BY id LIMIT $3`, p.Owner, p.After, limit)
		return err
	})
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
	where, args := runFilter(p, []any{limit})
	cmp, order := "<", " ORDER BY created_at DESC, id DESC"
	if p.Oldest {
		cmp, order = ">", " ORDER BY created_at, id"
	}
	if p.After != "" {
		args = append(args, after.CreatedAt, after.ID)
		where = append(where, fmt.Sprintf("(created_at, id) %s ($%d::timestamptz, $%d::text)", cmp, len(args)-1, len(args)))
	}
	statuses := store.ListStatuses(p)
	var q string
	switch {
	case len(statuses) <= 1:
		if len(statuses) == 1 {
			args = append(args, string(statuses[0]))
			where = append(where, fmt.Sprintf("status = $%d", len(args)))
		}
		q = `SELECT ` + runCols + ` FROM hitch_runs WHERE ` + strings.Join(where, " AND ") + order + ` LIMIT $1`
	default:
		parts := make([]string, len(statuses))
		for i, st := range statuses {
			args = append(args, string(st))
			parts[i] = `(SELECT ` + runCols + ` FROM hitch_runs WHERE ` + strings.Join(where, " AND ") +
				fmt.Sprintf(" AND status = $%d", len(args)) + order + ` LIMIT $1)`
		}
		q = strings.Join(parts, " UNION ALL ") + order + ` LIMIT $1`
	}
	runs, err := readAll(ctx, s.pool, scanRunOnly, q, args...)
	return store.Result(runs, err, "run list", "")
}

// runFilter is the WHERE clause of RunList's filters, but the cursor and
// the statuses, with its arguments appended to args.
func runFilter(p store.RunListParams, args []any) (where []string, _ []any) {
	where = []string{"true"}
	for _, f := range []struct{ col, v string }{
		{"tenant", p.Tenant}, {"agent", p.Agent}, {"parent_id", p.ParentID}, {"root_id", p.RootID},
	} {
		if f.v != "" {
			args = append(args, f.v)
			where = append(where, fmt.Sprintf("%s = $%d", f.col, len(args)))
		}
	}
	if p.ParentID != "" {
		where = append(where, "parent_id <> ''") // to use hitch_runs_parent, which holds no roots
	}
	if !p.CreatedAfter.IsZero() {
		args = append(args, p.CreatedAfter)
		where = append(where, fmt.Sprintf("created_at >= $%d::timestamptz", len(args)))
	}
	if !p.CreatedBefore.IsZero() {
		args = append(args, p.CreatedBefore)
		where = append(where, fmt.Sprintf("created_at < $%d::timestamptz", len(args)))
	}
	if len(p.Reasons) > 0 {
		args = append(args, slices.Compact(slices.Sorted(slices.Values(p.Reasons))))
		// The expression of the hitch_runs_tenant_reason index, word for word.
		where = append(where, fmt.Sprintf("coalesce(outcome ->> 'reason', '') = ANY ($%d::text[])", len(args)))
	}
	if p.Text != "" {
		// ILIKE ignores case beyond ASCII too; the contract promises
		// ASCII, which SQLite's LIKE gives.
		args = append(args, store.LikePattern(p.Text))
		n := len(args)
		where = append(where, fmt.Sprintf(`(id ILIKE $%d ESCAPE '\' OR agent ILIKE $%d ESCAPE '\' OR title ILIKE $%d ESCAPE '\')`, n, n, n))
	}
	return where, args
}

// RunCountsFor counts runs by status among those p's filters select. Of
// one tenant or all, without other filters, it sums hitch_run_counts and
// the deltas not yet folded into it; other filters count at most
// store.MaxFilteredCount runs of each status, one index walk per status.
func (s *Store) RunCountsFor(ctx context.Context, p store.RunListParams) (map[hitchtype.Status]int, error) {
	plan, err := store.PlanCounts(p)
	if err := s.ready(err, "run counts", ""); err != nil {
		return nil, err
	}
	statuses := make([]string, len(plan.Statuses))
	for i, st := range plan.Statuses {
		statuses[i] = string(st)
	}
	var q string
	where, args := runFilter(plan.Params, nil)
	if plan.Kept {
		if len(statuses) > 0 {
			args = append(args, statuses)
			where = append(where, fmt.Sprintf("status = ANY ($%d::text[])", len(args)))
		}
		q = `SELECT status, sum(n) FROM (SELECT tenant, status, n FROM hitch_run_counts
			UNION ALL SELECT tenant, status, d FROM hitch_run_count_deltas) AS c
			WHERE ` + strings.Join(where, " AND ") + ` GROUP BY status`
	} else {
		args = append(args, statuses, store.MaxFilteredCount)
		n := len(args)
		q = fmt.Sprintf(`SELECT s.status, (SELECT count(*) FROM (SELECT 1 FROM hitch_runs
			WHERE %s AND status = s.status LIMIT $%d) AS m)
			FROM unnest($%d::text[]) AS s (status)`, strings.Join(where, " AND "), n, n-1)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("run counts: %w", err)
	}
	defer rows.Close()
	out, err := store.CollectCounts(rows)
	return store.Result(out, err, "run counts", "")
}

// cancelSQL records a cancel request and makes a waiting run due now. It
// changes nothing (and returns no row) on a terminal run, or when the
// request is already recorded and nothing is left to wake.
const cancelSQL = `
UPDATE hitch_runs SET cancel_requested = true,
	cancel_by = CASE WHEN cancel_requested THEN cancel_by ELSE $3 END,
	cancel_reason = CASE WHEN cancel_requested THEN cancel_reason ELSE $4 END,
	wake_at = CASE WHEN status = 'waiting' AND (wake_at IS NULL OR wake_at > ` + nowSQL + `)
		THEN ` + nowSQL + ` ELSE wake_at END,
	updated_at = ` + nowSQL + `
WHERE id = $2 AND status IN ('queued', 'running', 'waiting')
	AND (NOT cancel_requested OR (status = 'waiting' AND (wake_at IS NULL OR wake_at > ` + nowSQL + `)))
RETURNING ` + runCols

// RunRequestCancel records a cancel request; a waiting run becomes due now.
func (s *Store) RunRequestCancel(ctx context.Context, p store.RunRequestCancelParams) (store.Run, error) {
	id := p.ID
	if err := store.CheckCancelNote(p); err != nil {
		return store.Run{}, fmt.Errorf("run request cancel %q: %w", id, err)
	}
	var run store.Run
	err := s.retry(ctx, func() error {
		r, err := scanRun(s.pool.QueryRow(ctx, cancelSQL, s.clockArg(), id, p.By, p.Reason))
		if errors.Is(err, pgx.ErrNoRows) {
			r, err = s.getRow(ctx, s.pool, id) // ended, missing, or nothing to change
		}
		run = r.run
		return err
	})
	return store.Result(run, err, "run request cancel", id)
}
