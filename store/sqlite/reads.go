package sqlite

import (
	"context"
	"database/sql"
	"errors"
)

// reads are the statements every runner reads with, prepared on the read
// pool when the store opens (database/sql prepares each again on a
// connection the first time it runs there): parsing them at every call cost
// more than running them, and preparing them at the first read made a
// process's first run pay for it. A statement that could not be prepared is
// run unprepared.
type reads struct {
	runGet  *sql.Stmt
	journal *sql.Stmt
	budget  *sql.Stmt
}

const (
	runGetSQL = `SELECT ` + runColumns + ` FROM runs WHERE id = ?`
	// journalSQL reads entries in one statement, so the existence check
	// and the entries come from the same snapshot: a missing run is the
	// single row with a NULL position. ?4 is the kinds filter's place.
	journalSQL = `
		SELECT r.position, j.pos, j.kind, j.at, j.data
		FROM (SELECT seq, position FROM runs WHERE id = ?1) AS r
		LEFT JOIN journal AS j ON j.run_seq = r.seq AND j.pos > ?2
		ORDER BY j.pos LIMIT ?3`
	// budgetSQL answers two questions at once: is there such a run (no
	// row: not found), and has its family a budget (NULL: none).
	budgetSQL = `SELECT b.limits, b.used FROM runs r LEFT JOIN budgets b ON b.root_seq = r.seq WHERE r.id = ?`
)

// prepareReads prepares the reads when the store opens.
func (s *Store) prepareReads(ctx context.Context) {
	s.reads.runGet, _ = s.rdb.PrepareContext(ctx, runGetSQL)
	s.reads.journal, _ = s.rdb.PrepareContext(ctx, journalSQL)
	s.reads.budget, _ = s.rdb.PrepareContext(ctx, budgetSQL)
}

// queryRow runs a read statement, prepared when it could be.
func (s *Store) queryRow(ctx context.Context, st *sql.Stmt, q string, args ...any) *sql.Row {
	if st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.rdb.QueryRowContext(ctx, q, args...)
}

func (s *Store) query(ctx context.Context, st *sql.Stmt, q string, args ...any) (*sql.Rows, error) {
	if st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.rdb.QueryContext(ctx, q, args...)
}

func (r *reads) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{r.runGet, r.journal, r.budget} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}
