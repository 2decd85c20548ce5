package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/store"
)

// querier is the pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ready is the error of a call on id whose checks gave err (see
// store.Checked).
func (s *Store) ready(err error, op, id string) error {
	return store.Checked(s.closed.Load(), ErrClosed, err, op, id)
}

// readAll runs a statement that answers rows on q and reads each of them
// with scan.
func readAll[T any](ctx context.Context, q querier, scan func(pgx.Row) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.Collect(rows, func() (T, error) { return scan(rows) })
}

// scanRunOnly is scanRun without the run's store key.
func scanRunOnly(sc pgx.Row) (store.Run, error) {
	r, err := scanRun(sc)
	return r.run, err
}

// scanID reads a row of one text column.
func scanID(sc pgx.Row) (id string, err error) {
	return id, sc.Scan(&id)
}
