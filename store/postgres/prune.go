package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/store"
)

const terminalSQL = `('completed', 'failed', 'cancelled', 'answer_invalid', 'budget_exhausted')`

// settledRootsSQL finds settled families' roots, oldest first (a root's
// creation comes before its last update, so hitch_runs_newest bounds the
// scan). A root whose run.started names a session works a session's
// submission and is kept. The roots are locked so that two pruners do not
// wait on each other.
const settledRootsSQL = `
SELECT r.id, (SELECT count(*) FROM hitch_runs m WHERE m.root_id = r.id)
FROM hitch_runs r
WHERE r.created_at < $1 AND r.parent_id = '' AND r.updated_at < $1 AND r.status IN ` + terminalSQL + `
  AND NOT EXISTS (SELECT 1 FROM hitch_runs m WHERE m.root_id = r.id
                  AND (m.status NOT IN ` + terminalSQL + ` OR m.updated_at >= $1))
  AND NOT EXISTS (SELECT 1 FROM hitch_journal j WHERE j.run_seq = r.seq AND j.pos = 1
                  AND coalesce(j.data->>'session', '') <> '')
ORDER BY r.created_at, r.seq
LIMIT $2`

// RunPrune deletes settled families; see store.Store.
func (s *Store) RunPrune(ctx context.Context, p store.RunPruneParams) (store.RunPruneResult, error) {
	return store.PruneRuns(s.pruneRuns).Prune(ctx, p)
}

func (s *Store) pruneRuns(ctx context.Context, p store.RunPruneParams) (res store.RunPruneResult, err error) {
	find := func(q interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}, lock string) error {
		res = store.RunPruneResult{}
		rows, err := q.Query(ctx, settledRootsSQL+lock, p.Before.UTC(), p.Limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var n int64
			if err := rows.Scan(&id, &n); err != nil {
				return err
			}
			res.Roots = append(res.Roots, id)
			res.Runs += n
		}
		return rows.Err()
	}
	if p.DryRun {
		err = s.retry(ctx, func() error { return find(s.pool, "") })
	} else {
		err = s.inTx(ctx, func(tx pgx.Tx) error {
			if err := find(tx, " FOR UPDATE OF r SKIP LOCKED"); err != nil || len(res.Roots) == 0 {
				return err
			}
			for _, q := range []string{
				`DELETE FROM hitch_journal WHERE run_seq IN (SELECT seq FROM hitch_runs WHERE root_id = ANY($1))`,
				`DELETE FROM hitch_budgets WHERE root_seq IN (SELECT seq FROM hitch_runs WHERE root_id = ANY($1))`,
				`DELETE FROM hitch_runs WHERE root_id = ANY($1)`,
			} {
				if _, err := tx.Exec(ctx, q, res.Roots); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return res, err
}

// SessionKeyPrune deletes expired idempotency keys; see store.Store.
func (s *Store) SessionKeyPrune(ctx context.Context, limit int) (int, error) {
	return store.PruneSessionKeys(s.pruneSessionKeys).Prune(ctx, limit)
}

func (s *Store) pruneSessionKeys(ctx context.Context, limit int) (int, error) {
	var n int64
	err := s.retry(ctx, func() error {
		tag, err := s.pool.Exec(ctx, `
DELETE FROM hitch_session_keys WHERE (session_seq, key) IN (
    SELECT session_seq, key FROM hitch_session_keys WHERE expires_at <= `+nowSQL+` ORDER BY expires_at LIMIT $2
    FOR UPDATE SKIP LOCKED)`, s.clockArg(), limit)
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}
