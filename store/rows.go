package store

import (
	"fmt"

	"github.com/hitch-dev/hitch/hitchtype"
)

// Rows is what Collect reads of a driver's result set.
type Rows interface {
	Next() bool
	Err() error
}

// Collect reads every row of rows with scan, which reads the current row.
func Collect[T any](rows Rows, scan func() (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Scanner is a driver's row, or its result set's current row.
type Scanner = interface{ Scan(dest ...any) error }

// ScanRows is a driver's result set that scans its current row.
type ScanRows interface {
	Rows
	Scanner
}

// CollectCounts reads rows of a status and a count, as RunCountsFor
// answers them: statuses counted zero are left out.
func CollectCounts(rows ScanRows) (map[hitchtype.Status]int, error) {
	out := make(map[hitchtype.Status]int)
	for rows.Next() {
		var (
			st string
			n  int
		)
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		if n > 0 {
			out[hitchtype.Status(st)] = n
		}
	}
	return out, rows.Err()
}

// Named is err named by the operation op and, when not empty, the id it
// acted on; nil stays nil.
func Named(err error, op, id string) error {
	switch {
	case err == nil:
		return nil
	case id == "":
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s %q: %w", op, id, err)
}

// Checked is the error of a driver's call whose checks gave err:
// closedErr once the driver is closed, else err Named by op and id.
func Checked(closed bool, closedErr, err error, op, id string) error {
	if closed {
		return closedErr
	}
	return Named(err, op, id)
}

// Result is a driver's answer v, or v's zero value and err Named by op and
// id when err is not nil.
func Result[T any](v T, err error, op, id string) (T, error) {
	if err != nil {
		var zero T
		return zero, Named(err, op, id)
	}
	return v, nil
}

// SessionEntries reads the rows of a SessionRead's statement, which
// answers no row when the session does not exist (ErrSessionNotFound) and
// one row of NULLs when it has no entry after the offset: scan reads the
// current row, ok false for that row of NULLs.
func SessionEntries(rows Rows, scan func() (e SessionEntry, ok bool, err error)) ([]SessionEntry, error) {
	return collectFound(rows, nil, scan, ErrSessionNotFound)
}

// JournalEntries reads the rows of a JournalRead's statement, which
// answers no row when the run does not exist (ErrNotFound) and one row
// without an entry when it has none after p.After: scan reads the current
// row, the journal's length and its entry, ok false for a row without one.
// Unless p keeps only some kinds, the entries must be whole (CheckWhole).
func JournalEntries(rows Rows, p JournalReadParams, limit int, scan func() (length int64, e Entry, ok bool, err error)) ([]Entry, error) {
	var length int64
	entries, err := collectFound(rows, make([]Entry, 0, min(limit, 64)), func() (Entry, bool, error) {
		n, e, ok, err := scan()
		length = n
		return e, ok, err
	}, ErrNotFound)
	if err != nil {
		return nil, err
	}
	if len(p.Kinds) > 0 {
		return entries, nil // positions between the kinds asked for are not read
	}
	if err := CheckWhole(entries, p.After, length, limit); err != nil {
		return nil, err
	}
	return entries, nil
}

// collectFound appends to out the rows of a statement that answers no row
// when what it reads does not exist (notFound), and rows without a value
// (ok false) when it has none to give.
func collectFound[T any](rows Rows, out []T, scan func() (v T, ok bool, err error), notFound error) ([]T, error) {
	found := false
	for rows.Next() {
		found = true
		v, ok, err := scan()
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, v)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, notFound
	}
	return out, nil
}
