package store

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
