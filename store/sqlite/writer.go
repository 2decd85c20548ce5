package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/store"
)

// A request is one caller's write. apply runs inside the writer's
// transaction (in its own savepoint when it shares the transaction) and
// records its results in variables of the caller; the caller reads them only
// after done delivers nil, which happens after the commit is durable.
type request struct {
	ctx   context.Context
	apply func(tx *wtx) error
	done  chan error // buffered; receives exactly one answer
	// fenced requests run in no savepoint: apply either is refused
	// having written nothing (refusal), or fails otherwise, which takes
	// the shared transaction down.
	fenced bool
}

// refusal reports a fenced request's refusal: a conditional statement
// that matched no row, so nothing of the request was written.
func refusal(err error) bool {
	return errors.Is(err, store.ErrFenced) || errors.Is(err, store.ErrConflict) ||
		errors.Is(err, store.ErrEnded) || errors.Is(err, store.ErrNotFound)
}

// wtx is what apply sees: the writer's prepared statements and the store
// clock reading for this request.
type wtx struct {
	*writeStmts
	now time.Time
}

// write queues fn for the writer and waits for its answer. A nil answer means
// fn's changes are committed; any other answer means nothing of fn was
// written. Once queued, the request is always answered: by the commit, by an
// error, or by ErrClosed, so the wait ends with the writer's progress.
func (s *Store) write(ctx context.Context, fn func(tx *wtx) error) error {
	return s.send(ctx, s.queue, &request{ctx: ctx, apply: fn, done: make(chan error, 1)})
}

// writeUrgent is write ahead of the queue: the writer takes it before any
// request queued by write.
func (s *Store) writeUrgent(ctx context.Context, fn func(tx *wtx) error) error {
	return s.send(ctx, s.urgent, &request{ctx: ctx, apply: fn, done: make(chan error, 1)})
}

// writeUrgentFenced is writeUrgent for a fenced request (see writeFenced).
func (s *Store) writeUrgentFenced(ctx context.Context, fn func(tx *wtx) error) error {
	return s.send(ctx, s.urgent, &request{ctx: ctx, apply: fn, done: make(chan error, 1), fenced: true})
}

// writeFenced is write for a request of one conditional statement (and the
// inserts that follow it), which needs no savepoint: see request.fenced.
func (s *Store) writeFenced(ctx context.Context, fn func(tx *wtx) error) error {
	return s.send(ctx, s.queue, &request{ctx: ctx, apply: fn, done: make(chan error, 1), fenced: true})
}

func (s *Store) send(ctx context.Context, queue chan *request, r *request) error {
	if s.cfg.readOnly {
		if s.closed.Load() {
			return ErrClosed
		}
		return ErrReadOnly
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	if s.closing {
		s.mu.RUnlock()
		return ErrClosed
	}
	s.senders.Add(1)
	s.mu.RUnlock()
	select {
	case queue <- r:
		s.senders.Done()
	case <-ctx.Done():
		s.senders.Done()
		return ctx.Err()
	case <-s.stop:
		s.senders.Done()
		return ErrClosed
	}
	return <-r.done
}

// writeLoop is the single writer. It takes whatever is queued (up to the
// batch size) and commits it in one transaction; urgent requests go first,
// in a transaction of their own. It never waits for more requests to
// arrive: a lone request commits at once.
func (s *Store) writeLoop() {
	defer close(s.exited)
	batch := make([]*request, 0, s.cfg.batchSize)
	urgentOnly := false // the last batch held urgent requests only
	for {
		select {
		case <-s.stop:
			s.drain()
			return
		default:
		}
		// Urgent requests commit in a short transaction of their own, so
		// that they are not answered after a whole batch of appends; the
		// batch after such a transaction starts with the queue, so that
		// urgent requests in a row cannot starve it.
		var first *request
		if urgentOnly {
			select {
			case first = <-s.queue:
			default:
			}
		}
		urgentOnly = false
		if first == nil {
			select {
			case first = <-s.urgent:
				urgentOnly = true
			default:
				select {
				case <-s.stop:
					s.drain()
					return
				case first = <-s.urgent:
					urgentOnly = true
				case first = <-s.queue:
				}
			}
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < s.cfg.batchSize {
			select {
			case r := <-s.urgent:
				batch = append(batch, r)
				continue
			default:
			}
			if urgentOnly {
				break
			}
			select {
			case r := <-s.queue:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.commit(batch)
		clear(batch)
	}
}

// drain answers every queued request with ErrClosed. It returns once no
// caller can still be putting a request on the queue.
func (s *Store) drain() {
	sendersDone := make(chan struct{})
	go func() {
		s.senders.Wait()
		close(sendersDone)
	}()
	for {
		select {
		case r := <-s.queue:
			r.done <- ErrClosed
		case r := <-s.urgent:
			r.done <- ErrClosed
		case <-sendersDone:
			for {
				select {
				case r := <-s.queue:
					r.done <- ErrClosed
				case r := <-s.urgent:
					r.done <- ErrClosed
				default:
					return
				}
			}
		}
	}
}

// commit writes a batch. Requests whose caller has gone are answered without
// being applied.
func (s *Store) commit(batch []*request) {
	live := make([]*request, 0, len(batch))
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		live = append(live, r)
	}
	// Each pass either answers every request or answers at least one and
	// hands back the rest, so this ends.
	for len(live) > 0 {
		live = s.commitOnce(live)
	}
}

// commitOnce applies reqs in one transaction and answers them after the
// commit. When a request's failure takes the whole transaction down (so its
// savepoint cannot be rolled back), that request is answered with its error
// and the others are returned to be tried again in a fresh transaction.
func (s *Store) commitOnce(reqs []*request) (retry []*request) {
	ctx := context.Background() // a caller's cancellation must not break a shared transaction
	if err := s.stmts.begin.execRaw(ctx); err != nil {
		answerAll(reqs, fmt.Errorf("begin write: %w", err))
		return nil
	}
	s.stmts.due = false
	alone := len(reqs) == 1
	answers := make([]error, len(reqs))
	for i, r := range reqs {
		own := !alone && !r.fenced // a savepoint of its own
		if own {
			if _, err := s.stmts.savepoint.ExecContext(ctx); err != nil {
				s.rollback(ctx)
				answerAll(reqs, fmt.Errorf("open savepoint: %w", err))
				return nil
			}
		}
		err := r.apply(&wtx{writeStmts: s.stmts, now: s.now()})
		if alone {
			if err != nil {
				s.rollback(ctx)
				r.done <- err
				return nil
			}
			break
		}
		if !own {
			if err != nil && !refusal(err) {
				s.rollback(ctx)
				r.done <- err
				return append(append(retry, reqs[:i]...), reqs[i+1:]...)
			}
			answers[i] = err
			continue
		}
		if err != nil {
			answers[i] = err
			if _, rbErr := s.stmts.rollbackTo.ExecContext(ctx); rbErr != nil {
				s.rollback(ctx)
				r.done <- err
				return append(append(retry, reqs[:i]...), reqs[i+1:]...)
			}
		}
		if _, err := s.stmts.release.ExecContext(ctx); err != nil {
			s.rollback(ctx)
			r.done <- errors.Join(answers[i], fmt.Errorf("release savepoint: %w", err))
			return append(append(retry, reqs[:i]...), reqs[i+1:]...)
		}
	}
	if err := s.stmts.commit.execRaw(ctx); err != nil {
		s.rollback(ctx)
		answerAll(reqs, fmt.Errorf("commit: %w", err))
		return nil
	}
	s.commits.Add(1)
	if s.stmts.due {
		s.notify.signal()
	}
	for i, r := range reqs {
		r.done <- answers[i]
	}
	return nil
}

// rollback ends a failed transaction. Its error is dropped on purpose: SQLite
// may already have rolled back on its own, and the callers get the error that
// caused it.
func (s *Store) rollback(ctx context.Context) {
	_, _ = s.stmts.rollback.ExecContext(ctx)
}

func answerAll(reqs []*request, err error) {
	for _, r := range reqs {
		r.done <- err
	}
}

// writeStmts are the writer connection's statements, each prepared the
// first time it runs (see stmt).
type writeStmts struct {
	// args is insertEntries' argument buffer, reused: only the writer's
	// goroutine runs statements.
	args []any
	// due is set by a write of the transaction that may have made a run
	// due (wtx.mayBeDue); the commit then signals Wake.
	due          bool
	runByID      *stmt
	insertRun    *stmt
	appendRead   *stmt
	appendRun    *stmt
	claimDue     *stmt
	claimOne     *stmt
	renew        *stmt
	renewHeld    *stmt
	cancel       *stmt
	releaseLease *stmt
	// cancelChildren and wakeParent carry a run's end to its family.
	cancelChildren *stmt
	wakeParent     *stmt
	budgetGet      *stmt
	budgetSet      *stmt
	budgetNew      *stmt
	// appendFenced is the common append in one statement: it moves the
	// journal's length only when the token, the owner and the position are
	// right, so a refused append writes nothing and needs no savepoint.
	appendFenced *stmt
	// insertMany[n-1] inserts n entries at once.
	insertMany [maxBatchInsert]*stmt
	// Transaction control, prepared once: parsing them per write costs as
	// much as the writes.
	begin, commit, savepoint, release, rollbackTo, rollback *stmt
	all                                                     []*stmt
}

// maxBatchInsert is the most entries one INSERT statement carries: a
// step's commit holds about five.
const maxBatchInsert = 8

// newWriteStmts names the writer connection's statements; each is prepared
// at its first use.
func newWriteStmts(c *sql.Conn) *writeStmts {
	w := &writeStmts{}
	for _, p := range []struct {
		dst **stmt
		sql string
	}{
		{&w.runByID, `SELECT ` + runColumns + ` FROM runs WHERE id = ?`},
		// The common append changes only the length; leaving the indexed
		// columns out of the SET spares SQLite the index upkeep.
		{&w.appendFenced, `UPDATE runs SET position = ?1, updated_at = ?2
			WHERE id = ?3 AND lease_token = ?4 AND position = ?5 AND lease_owner <> ''
				AND status IN ('queued', 'running', 'waiting')
			RETURNING seq, status, lease_owner, cancel_requested`},
		{&w.begin, `BEGIN IMMEDIATE`},
		{&w.commit, `COMMIT`},
		{&w.savepoint, `SAVEPOINT req`},
		{&w.release, `RELEASE req`},
		{&w.rollbackTo, `ROLLBACK TO req`},
		{&w.rollback, `ROLLBACK`},
		{&w.budgetGet, `SELECT limits, used FROM budgets WHERE root_seq = ?`},
		{&w.budgetSet, `UPDATE budgets SET used = ? WHERE root_seq = ?`},
		{&w.budgetNew, `INSERT INTO budgets (root_seq, limits, used) VALUES (?, ?, '{}')`},
		// ?13 is the lease's owner ('' for a queued run) and ?14 its expiry
		// (insertNew builds the run it returns from the same values). A
		// taken ID inserts nothing and returns no row.
		{&w.insertRun, `INSERT INTO runs (id, root_id, parent_id, depth, agent, version, input_hash,
			status, position, created_at, updated_at, tenant, title, lease_owner, lease_token, lease_expires, forked_from)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, CASE WHEN ?13 = '' THEN 'queued' ELSE 'running' END, ?8, ?9, ?10, ?11, ?12,
				?13, ?13 <> '', CASE WHEN ?13 = '' THEN 0 ELSE ?14 END, ?15)
			ON CONFLICT (id) DO NOTHING RETURNING seq`},
		// A changing append reads and returns what it uses, not the whole
		// row: each column of a result costs the driver allocations.
		{&w.appendRead, `SELECT seq, root_id, parent_id, status, position, lease_owner, lease_token,
			lease_expires, wake_at, cancel_requested FROM runs WHERE id = ?`},
		{&w.appendRun, `UPDATE runs SET position = ?, status = ?, lease_owner = ?, lease_expires = ?,
			wake_at = ?, outcome = ?, updated_at = ? WHERE seq = ? RETURNING position, status, lease_owner, cancel_requested`},
		// Each half of "due" walks its own partial index (named, so that
		// the planner cannot trade it for a walk of every waiting run),
		// longest due first, and reads at most the limit; the halves are
		// merged the same way.
		{&w.claimDue, `UPDATE runs SET status = 'running', wake_at = 0, lease_owner = ?1,
			lease_token = lease_token + 1, lease_expires = ?2, updated_at = ?3
			WHERE seq IN (
				SELECT seq FROM (
					SELECT seq, due FROM (SELECT seq, lease_expires AS due FROM runs INDEXED BY runs_lease_due
						WHERE status IN ('queued', 'running') AND lease_expires <= ?3 ORDER BY lease_expires, seq LIMIT ?4)
					UNION ALL
					SELECT seq, due FROM (SELECT seq, wake_at AS due FROM runs INDEXED BY runs_wake_due
						WHERE status = 'waiting' AND wake_at > 0 AND wake_at <= ?3 ORDER BY wake_at, seq LIMIT ?4)
				) ORDER BY due, seq LIMIT ?4)
			RETURNING ` + runColumns},
		// A claim by ID that finds the run claimable claims it in one
		// statement; the row is read to say why only when it does not.
		{&w.claimOne, `UPDATE runs SET status = 'running', wake_at = 0, lease_owner = ?1,
			lease_token = lease_token + 1, lease_expires = ?2, updated_at = ?3
			WHERE id = ?4 AND status IN ('queued', 'running', 'waiting') AND (lease_owner = '' OR lease_expires <= ?3)
			RETURNING ` + runColumns},
		{&w.renew, `UPDATE runs SET lease_expires = ?, updated_at = ? WHERE seq = ? RETURNING ` + runColumns},
		// One statement for a batch of leases, given as a JSON list of
		// [id, token]: a statement each would journal the pages it touches
		// again each time. The unary + keeps the planner from scanning the
		// runs by status instead of looking up each id.
		{&w.renewHeld, `UPDATE runs SET lease_expires = ?1, updated_at = ?2
			FROM (SELECT json_extract(value, '$[0]') AS rid, json_extract(value, '$[1]') AS tok FROM json_each(?4)) AS held
			WHERE runs.id = held.rid AND runs.lease_token = held.tok AND runs.lease_owner = ?3
				AND +runs.status IN ('queued', 'running', 'waiting')
			RETURNING runs.id, runs.cancel_requested`},
		{&w.cancel, `UPDATE runs SET wake_at = ?1, updated_at = ?2,
				cancel_by = CASE WHEN cancel_requested = 1 THEN cancel_by ELSE ?3 END,
				cancel_reason = CASE WHEN cancel_requested = 1 THEN cancel_reason ELSE ?4 END,
				cancel_requested = 1
			WHERE seq = ?5
			RETURNING ` + runColumns},
		{&w.releaseLease, `UPDATE runs SET lease_owner = '', lease_expires = 0, updated_at = ? WHERE seq = ?
			RETURNING ` + runColumns},
		// +?2, not ?2: SQLite compares a bare parameter with the literal of
		// runs_settled_roots' condition (parent_id = '') and then plans the
		// statement again each time the parameter changes, every run's end.
		{&w.cancelChildren, `UPDATE runs SET cancel_requested = 1, updated_at = ?1,
				wake_at = CASE WHEN status = 'waiting' AND (wake_at = 0 OR wake_at > ?1) THEN ?1 ELSE wake_at END
			WHERE parent_id = +?2 AND parent_id <> '' AND status IN ('queued', 'running', 'waiting')
				AND (cancel_requested = 0 OR (status = 'waiting' AND (wake_at = 0 OR wake_at > ?1)))`},
		{&w.wakeParent, `UPDATE runs SET wake_at = ?1, updated_at = ?1
			WHERE id = ?2 AND status = 'waiting' AND (wake_at = 0 OR wake_at > ?1)`},
	} {
		*p.dst = &stmt{conn: c, sql: p.sql}
		w.all = append(w.all, *p.dst)
	}
	for n := 1; n <= maxBatchInsert; n++ {
		q := `INSERT INTO journal (run_seq, pos, kind, at, data) VALUES (?, ?, ?, ?, ?)` + strings.Repeat(`, (?, ?, ?, ?, ?)`, n-1)
		w.insertMany[n-1] = &stmt{conn: c, sql: q}
		w.all = append(w.all, w.insertMany[n-1])
	}
	return w
}

func (w *writeStmts) close() error {
	var errs []error
	for _, st := range w.all {
		errs = append(errs, st.close())
	}
	return errors.Join(errs...)
}

// stmt is a statement of the writer's connection, prepared the first time
// it runs and kept: a process that only starts a run (hitch run --detach)
// runs four of the thirty, and preparing them all at open cost more than
// its one commit. Only the writer's goroutine runs statements, so stmt
// needs no lock. A statement that cannot be prepared fails where it runs,
// with the error of its preparation, and is tried again the next time.
type stmt struct {
	conn *sql.Conn
	sql  string
	st   *sql.Stmt
	// ds is the driver's own statement, for those the writer runs on
	// every step or run (begin, commit, the appends, the entries' insert,
	// a run's creation): run through the driver, they skip database/sql's
	// argument conversion, its result wrapping and its reflective Scan.
	ds driver.Stmt
	// nv is the driver's argument buffer and row its row of values, both
	// reused: only the writer's goroutine runs statements.
	nv  []driver.NamedValue
	row [10]driver.Value
}

// raw runs f with the driver's statement, prepared at its first use, on the
// writer's connection (database/sql holds the connection for f).
func (s *stmt) raw(f func(ds driver.Stmt) error) error {
	return s.conn.Raw(func(dc any) error {
		if s.ds == nil {
			pc, ok := dc.(driver.ConnPrepareContext)
			if !ok {
				return errors.New("prepare write statement: the driver cannot prepare with a context")
			}
			ds, err := pc.PrepareContext(context.Background(), s.sql)
			if err != nil {
				return fmt.Errorf("prepare write statement: %w", err)
			}
			s.ds = ds
		}
		return f(s.ds)
	})
}

// args fills the statement's argument buffer with args, converted to the
// driver's value types as database/sql would (an int to an int64, a
// driver.Valuer to its value).
func (s *stmt) args(args []any) ([]driver.NamedValue, error) {
	nv := s.nv[:0]
	for i, a := range args {
		if !driver.IsValue(a) {
			v, err := driver.DefaultParameterConverter.ConvertValue(a)
			if err != nil {
				return nil, fmt.Errorf("write statement: argument %d: %w", i+1, err)
			}
			a = v
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: a})
	}
	s.nv = nv
	return nv, nil
}

// execRaw runs the statement through the driver.
func (s *stmt) execRaw(ctx context.Context, args ...any) error {
	err := s.raw(func(ds driver.Stmt) error {
		nv, err := s.args(args)
		if err != nil {
			return err
		}
		ec, ok := ds.(driver.StmtExecContext)
		if !ok {
			return errors.New("write statement: the driver cannot run a statement with a context")
		}
		_, err = ec.ExecContext(ctx, nv)
		return err
	})
	clear(s.nv) // keep no argument alive past the statement
	return err
}

// queryRowRaw runs the statement through the driver and reads its first
// row into dest, each an *int64 (an integer column) or a *string (text);
// a statement that returns no row gives sql.ErrNoRows.
func (s *stmt) queryRowRaw(dest []any, args ...any) error {
	row := s.row[:len(dest)]
	defer clear(row)
	err := s.raw(func(ds driver.Stmt) error {
		nv, err := s.args(args)
		if err != nil {
			return err
		}
		qc, ok := ds.(driver.StmtQueryContext)
		if !ok {
			return errors.New("write statement: the driver cannot query with a context")
		}
		rows, err := qc.QueryContext(context.Background(), nv)
		if err != nil {
			return err
		}
		// database/sql asks for the columns before the first row, and a
		// driver may count on it (ncruces sets up its row reading there).
		if n := len(rows.Columns()); n != len(dest) {
			rows.Close()
			return fmt.Errorf("write statement: %d columns, %d read", n, len(dest))
		}
		err = rows.Next(row)
		if err == io.EOF {
			err = sql.ErrNoRows
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		return err
	})
	clear(s.nv)
	if err != nil {
		return err
	}
	for i, d := range dest {
		ok := false
		switch d := d.(type) {
		case *int64:
			*d, ok = row[i].(int64)
		case *string:
			*d, ok = row[i].(string)
		}
		if !ok {
			return fmt.Errorf("write statement: column %d holds %T, not what %T reads", i, row[i], d)
		}
	}
	return nil
}

func (s *stmt) prepared() (*sql.Stmt, error) {
	if s.st == nil {
		st, err := s.conn.PrepareContext(context.Background(), s.sql)
		if err != nil {
			return nil, fmt.Errorf("prepare write statement: %w", err)
		}
		s.st = st
	}
	return s.st, nil
}

// Exec runs the statement with args.
func (s *stmt) Exec(args ...any) (sql.Result, error) {
	return s.ExecContext(context.Background(), args...)
}

// ExecContext runs the statement with args.
func (s *stmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	st, err := s.prepared()
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// Query runs the statement with args and returns its rows.
func (s *stmt) Query(args ...any) (*sql.Rows, error) {
	st, err := s.prepared()
	if err != nil {
		return nil, err
	}
	return st.Query(args...)
}

// QueryRow runs the statement with args and returns its first row.
func (s *stmt) QueryRow(args ...any) *sql.Row {
	st, err := s.prepared()
	if err != nil {
		// Only database/sql makes a Row: the query unprepared fails the
		// same way and carries the error to Scan.
		return s.conn.QueryRowContext(context.Background(), s.sql, args...)
	}
	return st.QueryRow(args...)
}

func (s *stmt) close() error {
	var errs []error
	if s.st != nil {
		errs = append(errs, s.st.Close())
	}
	if s.ds != nil {
		errs = append(errs, s.raw(func(ds driver.Stmt) error { return ds.Close() }))
	}
	return errors.Join(errs...)
}
