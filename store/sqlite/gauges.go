package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hitch-dev/hitch/store"
)

var _ store.GaugeReader = (*Store)(nil)

// RunsDue counts the runs a claim of due runs would take now.
func (s *Store) RunsDue(ctx context.Context) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	var n int
	err := s.rdb.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM runs INDEXED BY runs_lease_due WHERE status IN ('queued', 'running') AND lease_expires <= ?1) +
		(SELECT count(*) FROM runs INDEXED BY runs_wake_due WHERE status = 'waiting' AND wake_at > 0 AND wake_at <= ?1)`, micros(s.now())).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("runs due: %w", err)
	}
	return n, nil
}

// Parked returns the last entry of each waiting run, newest run first.
func (s *Store) Parked(ctx context.Context, limit int) ([]store.Entry, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := store.CheckParked(limit); err != nil {
		return nil, fmt.Errorf("parked: %w", err)
	}
	rows, err := s.rdb.QueryContext(ctx, `
		SELECT r.id, j.pos, j.kind, j.at, j.data
		FROM runs AS r JOIN journal AS j ON j.run_seq = r.seq AND j.pos = r.position
		WHERE r.status = 'waiting'
		ORDER BY r.created_at DESC, r.id DESC LIMIT ?1`, limit)
	if err != nil {
		return nil, fmt.Errorf("parked: %w", err)
	}
	defer rows.Close()
	out, err := store.Collect(rows, func() (store.Entry, error) {
		var (
			e    store.Entry
			at   int64
			data string
		)
		err := rows.Scan(&e.RunID, &e.Pos, &e.Kind, &at, &data)
		e.At, e.Data = fromMicros(at), json.RawMessage(data)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("parked: %w", err)
	}
	return out, nil
}
