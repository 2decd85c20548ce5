package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/store"
)

var _ store.GaugeReader = (*Store)(nil)

// RunsDue counts the runs a claim of due runs would take now.
func (s *Store) RunsDue(ctx context.Context) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	var n int
	// One count per half of "due", so that each reads its partial index.
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM hitch_runs
			WHERE status IN ('queued', 'running') AND (lease_expires IS NULL OR lease_expires <= `+nowSQL+`)) +
		(SELECT count(*) FROM hitch_runs WHERE status = 'waiting' AND wake_at <= `+nowSQL+`)`, s.clockArg()).Scan(&n)
	return store.Result(n, err, "runs due", "")
}

// Parked returns the last entry of each waiting run, newest run first.
func (s *Store) Parked(ctx context.Context, limit int) ([]store.Entry, error) {
	if err := s.ready(store.CheckParked(limit), "parked", ""); err != nil {
		return nil, err
	}
	out, err := readAll(ctx, s.pool, scanEntry, `
		SELECT r.id, j.pos, j.kind, j.at, j.data::text
		FROM hitch_runs AS r JOIN hitch_journal AS j ON j.run_seq = r.seq AND j.pos = r.position
		WHERE r.status = 'waiting'
		ORDER BY r.created_at DESC, r.id DESC LIMIT $1`, limit)
	return store.Result(out, err, "parked", "")
}

// scanEntry reads a row of a run's id and an entry's position, kind, time
// and data.
func scanEntry(sc pgx.Row) (store.Entry, error) {
	var (
		e    store.Entry
		at   time.Time
		data string
	)
	err := sc.Scan(&e.RunID, &e.Pos, &e.Kind, &at, &data)
	e.At, e.Data = at.UTC(), json.RawMessage(data)
	return e, err
}
