package sqlite

import (
	"context"

	"github.com/hitch-dev/hitch/store"
)

// ready is the error of a call on id whose checks gave err (see
// store.Checked).
func (s *Store) ready(err error, op, id string) error {
	return store.Checked(s.closed.Load(), ErrClosed, err, op, id)
}

// readAll runs a read statement on the read pool and reads each of its rows
// with scan.
func readAll[T any](ctx context.Context, s *Store, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.Collect(rows, func() (T, error) { return scan(rows) })
}

// scanRunOnly is scanRun without the run's store key.
func scanRunOnly(sc scanner) (store.Run, error) {
	r, err := scanRun(sc)
	return r.run, err
}

// scanID reads a row of one text column.
func scanID(sc scanner) (id string, err error) {
	return id, sc.Scan(&id)
}
