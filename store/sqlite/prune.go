package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hitch-dev/hitch/store"
)

// terminalSQL lists the terminal statuses.
const terminalSQL = `('completed', 'failed', 'cancelled', 'answer_invalid', 'budget_exhausted')`

// settledRootsSQL finds settled families' roots, oldest first: a root's
// creation comes before its last update, so the walk of runs_settled_roots
// (terminal roots only) stops at the cut. A root whose run.started names a
// session works a session's submission and is kept.
const settledRootsSQL = `
SELECT r.seq, r.id, (SELECT count(*) FROM runs m WHERE m.root_id = r.id)
FROM runs r INDEXED BY runs_settled_roots
WHERE r.created_at < ?1 AND r.parent_id = '' AND r.updated_at < ?1 AND r.status IN ` + terminalSQL + `
  AND NOT EXISTS (SELECT 1 FROM runs m WHERE m.root_id = r.id
                  AND (m.status NOT IN ` + terminalSQL + ` OR m.updated_at >= ?1))
  AND NOT EXISTS (SELECT 1 FROM journal j WHERE j.run_seq = r.seq AND j.pos = 1
                  AND coalesce(json_extract(j.data, '$.session'), '') <> '')
ORDER BY r.created_at, r.seq
LIMIT ?2`

// vacuumPages bounds the free pages one prune gives back to the file
// system (4 MiB of 4 KiB pages).
const vacuumPages = 1024

// RunPrune deletes settled families; see store.Store.
func (s *Store) RunPrune(ctx context.Context, p store.RunPruneParams) (store.RunPruneResult, error) {
	return store.PruneRuns(s.pruneRuns).Prune(ctx, p)
}

func (s *Store) pruneRuns(ctx context.Context, p store.RunPruneParams) (res store.RunPruneResult, err error) {
	find := func(q func(string, ...any) (*sql.Rows, error)) ([]int64, error) {
		res = store.RunPruneResult{}
		rows, err := q(settledRootsSQL, micros(p.Before), p.Limit)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var seqs []int64
		for rows.Next() {
			var seq, n int64
			var id string
			if err := rows.Scan(&seq, &id, &n); err != nil {
				return nil, err
			}
			seqs = append(seqs, seq)
			res.Roots = append(res.Roots, id)
			res.Runs += n
		}
		return seqs, rows.Err()
	}
	if p.DryRun {
		_, err = find(func(q string, a ...any) (*sql.Rows, error) { return s.rdb.QueryContext(ctx, q, a...) })
		return res, err
	}
	err = s.write(ctx, func(*wtx) error {
		bg := context.Background()
		if _, err := find(func(q string, a ...any) (*sql.Rows, error) { return s.wconn.QueryContext(bg, q, a...) }); err != nil {
			return err
		}
		for _, root := range res.Roots {
			for _, q := range []string{
				`DELETE FROM journal WHERE run_seq IN (SELECT seq FROM runs WHERE root_id = ?)`,
				`DELETE FROM budgets WHERE root_seq IN (SELECT seq FROM runs WHERE root_id = ?)`,
				`DELETE FROM runs WHERE root_id = ?`,
			} {
				if _, err := s.wconn.ExecContext(bg, q, root); err != nil {
					return err
				}
			}
		}
		if len(res.Roots) == 0 {
			return nil
		}
		// Give the freed pages back to the file system, when the file
		// was made with incremental auto-vacuum (every new one is).
		rows, err := s.wconn.QueryContext(bg, fmt.Sprintf("PRAGMA incremental_vacuum(%d)", vacuumPages))
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return err
		}
		return rows.Close()
	})
	return res, err
}

// SessionKeyPrune deletes expired idempotency keys; see store.Store.
func (s *Store) SessionKeyPrune(ctx context.Context, limit int) (int, error) {
	return store.PruneSessionKeys(s.pruneSessionKeys).Prune(ctx, limit)
}

func (s *Store) pruneSessionKeys(ctx context.Context, limit int) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *wtx) error {
		r, err := s.wconn.ExecContext(context.Background(), `
DELETE FROM session_keys WHERE (session_seq, key) IN (
    SELECT session_seq, key FROM session_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`, micros(tx.now), limit)
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	return int(n), err
}

// AutoVacuum reports the file's auto_vacuum mode: "none", "full" or
// "incremental". Files made by this build are incremental; an older one
// is "none" until it is vacuumed once with auto_vacuum set (docs/retention.md).
func (s *Store) AutoVacuum(ctx context.Context) (string, error) {
	var mode int
	if err := s.rdb.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
		return "", fmt.Errorf("read auto_vacuum: %w", err)
	}
	return [...]string{"none", "full", "incremental"}[mode%3], nil
}
