package sqlite

import (
	"context"
	"encoding/json"

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
	return store.Result(n, err, "runs due", "")
}

// Parked returns the last entry of each waiting run, newest run first.
func (s *Store) Parked(ctx context.Context, limit int) ([]store.Entry, error) {
	if err := s.ready(store.CheckParked(limit), "parked", ""); err != nil {
		return nil, err
	}
	out, err := readAll(ctx, s, scanEntry, `
		SELECT r.id, j.pos, j.kind, j.at, j.data
		FROM runs AS r JOIN journal AS j ON j.run_seq = r.seq AND j.pos = r.position
		WHERE r.status = 'waiting'
		ORDER BY r.created_at DESC, r.id DESC LIMIT ?1`, limit)
	return store.Result(out, err, "parked", "")
}

// scanEntry reads a row of a run's id and an entry's position, kind, time
// and data.
func scanEntry(sc scanner) (store.Entry, error) {
	var (
		e    store.Entry
		at   int64
		data string
	)
	err := sc.Scan(&e.RunID, &e.Pos, &e.Kind, &at, &data)
	e.At, e.Data = fromMicros(at), json.RawMessage(data)
	return e, err
}
